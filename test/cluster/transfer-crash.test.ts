// A cross-node transfer survives the sender's home being killed (SIGKILL) right after the debit: the debit and the
// outbox entry are one durable batch, and the delivery loop resumes the outbox when the node starts again. Two real
// `svc-node start` processes on 127.0.0.1 with durable writes, fixed ports (a restarted node keeps its URL and
// multiaddr), one mesh secret.
//   1. the receiver's home is up: the sender's home is killed as soon as it answers (delivery may or may not have
//      gone out); after the restart the transfer is delivered, once.
//   2. the receiver's home is down, so the delivery is pending: the sender's home is killed, both are started again,
//      and the transfer lands, once.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess, stop } from '../../scripts/bench/lib.js';
import { DIST_CLI } from '../helpers/cli.js';
import { bearer, call, zkIdentity } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { freePort } from '../helpers/free-port.js';

const CLI = [DIST_CLI, 'start'];
const MESH_SECRET = 'transfer-crash-secret-0123456789abcdef';
const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

interface Spec {
  dataDir: string;
  port: number;
  p2pPort: number;
}

async function start(spec: Spec, bootstrap: string[]): Promise<{ child: ChildProcess; url: string }> {
  const started = await startProcess(process.execPath, CLI, {
    SVC_HOST: '127.0.0.1',
    SVC_PORT: String(spec.port),
    SVC_P2P_PORT: String(spec.p2pPort),
    SVC_DATA_DIR: spec.dataDir,
    SVC_SYNC_WRITES: 'true',
    SVC_LOG_LEVEL: 'info',
    SVC_INITIAL_CREDITS: '0',
    SVC_MESH_SECRET: MESH_SECRET,
    SVC_MESH_TICK_EVERY: '1',
    SVC_BOOTSTRAP: bootstrap.join(','),
    SVC_RECEIPT_SECRET: 'ef'.repeat(32),
  });
  children.push(started.child);
  return started;
}

function killed(child: ChildProcess): Promise<void> {
  child.removeAllListeners('exit');
  const exited = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
  child.kill('SIGKILL');
  return exited;
}

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 60_000) =>
  waitUntil(fn, what, timeoutMs, 200);

const nodeIdOf = async (url: string): Promise<string> => (await call(url, 'GET', '/api/mesh/status')).body.nodeId;
const addrOf = (spec: Spec, id: string) => `/ip4/127.0.0.1/tcp/${spec.p2pPort}/p2p/${id}`;

describe("a transfer with the sender's home killed after the debit", () => {
  it('is delivered exactly once after the restart, whether the receiver home was up or down', async () => {
    const specA: Spec = { dataDir: await mkdtemp(join(tmpdir(), 'svc-xfer-a-')), port: await freePort(), p2pPort: await freePort() };
    const specB: Spec = { dataDir: await mkdtemp(join(tmpdir(), 'svc-xfer-b-')), port: await freePort(), p2pPort: await freePort() };
    dirs.push(specA.dataDir, specB.dataDir);
    let a = await start(specA, []);
    const idA = await nodeIdOf(a.url);
    let b = await start(specB, [addrOf(specA, idA)]);
    const idB = await nodeIdOf(b.url);
    const addrB = addrOf(specB, idB);
    await waitFor(async () => (await call(a.url, 'GET', '/api/mesh/status')).body.peers.some((p: { url: string | null }) => p.url === b.url), 'A hears B');

    const x = await zkIdentity(a.url, 'crash-sender');
    const token = (await readFile(join(specA.dataDir, 'operator-token'), 'utf8')).trim();
    expect((await call(a.url, 'POST', '/api/tally/grants', { zid: x.zid, credits: 6 }, bearer(token))).status).toBe(201);
    for (let i = 0; i < 6; i++) expect((await call(a.url, 'POST', '/api/svc/compute', cost1, bearer(x.key))).status).toBe(200);
    const y = await zkIdentity(b.url, 'crash-receiver');
    await waitFor(async () => (await call(a.url, 'GET', `/api/mesh/identity/${y.zid}`)).body.verified, 'A knows the receiver');

    const heldBy = async (url: string, who: { zid: string; key: string }) =>
      (await call(url, 'GET', `/api/tally/envelopes/${who.zid}?limit=100`, undefined, bearer(who.key))).body as {
        total: number;
        items: { token_id: string }[];
      };
    const deliveredAt = (url: string, who: { key: string }, id: string) =>
      waitFor(async () => {
        const r = await call(url, 'GET', `/api/tally/transfers/${id}`, undefined, bearer(who.key));
        return r.status === 200 && r.body.state === 'delivered' ? r.body : null;
      }, `${id} delivered`);

    // 1. Receiver's home up; the sender's home dies the moment it has answered.
    const t1 = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 2 }, bearer(x.key));
    await killed(a.child);
    expect(t1.status, t1.text).toBe(202);
    a = await start(specA, [addrB]);
    await deliveredAt(a.url, x, t1.body.transfer_id);
    expect((await heldBy(b.url, y)).total).toBe(2);
    expect((await heldBy(a.url, x)).total).toBe(4);

    // 2. Receiver's home down: the delivery is pending when the sender's home dies.
    await stop(b.child);
    const t2 = await call(a.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: y.zid, count: 3 }, bearer(x.key));
    await killed(a.child);
    expect(t2.status, t2.text).toBe(202);
    b = await start(specB, [addrOf(specA, idA)]);
    a = await start(specA, [addrB]);
    const done = await deliveredAt(a.url, x, t2.body.transfer_id);
    expect(done.attempts).toBeGreaterThanOrEqual(1);
    const atB = await deliveredAt(b.url, y, t2.body.transfer_id);
    expect(atB.token_ids).toEqual(t2.body.token_ids);

    // Exactly once: Y holds the five envelopes sent, each once; X the one left; nothing more arrives later.
    await new Promise((r) => setTimeout(r, 1500));
    const ys = await heldBy(b.url, y);
    expect(ys.total).toBe(5);
    expect(ys.items.map((e) => e.token_id).sort()).toEqual([...t1.body.token_ids, ...t2.body.token_ids].sort());
    const xs = await heldBy(a.url, x);
    expect(xs.total).toBe(1);
    expect(xs.items.some((e) => ys.items.some((f) => f.token_id === e.token_id))).toBe(false);
    // The receiver's chain, with its two arrival rows, still validates.
    const v = await call(b.url, 'GET', `/api/chain/${y.slug}/pohc/validate`, undefined, bearer(y.key));
    expect(v.body.valid).toBe(true);
  }, 240_000);
});
