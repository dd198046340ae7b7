// Transfer benchmark: three real `svc-node start` processes on 127.0.0.1 sharing a mesh secret.
// Every node homes `senders` identities (each holding paid, movable envelopes) and as many receivers. Two phases,
// taken in alternating rounds so that both see the same machine conditions:
//   same node:  every sender sends 1 envelope to a receiver homed on its own node, `per-sender` times in a row, all
//               senders of all nodes at once. A transfer is done when its request is answered (delivered in one batch).
//   cross node: the same from the senders of node i to receivers homed on node i+1. A transfer is done when the
//               receiver's home has applied it: its delivered_unix_ms (the receiver home's clock, the same machine).
// Every request is fresh: another envelope each time, and the receiver changes with every transfer.
// Prints ONE JSON line: {transfersPerSec, crossNodeTransfersPerSec, p99Ms, …}: transfersPerSec is same-node
// transfers done per second, crossNodeTransfersPerSec cross-node transfers delivered per second, p99Ms the p99 of a
// cross-node transfer from its request to its delivery at the receiver's home (sameNodeP99Ms: same-node request to
// answer), crossToSameRatio their ratio of rates (the target is ≥ 0.3).
// --custody 3: every node's operator bonds first, so every identity's ledger is held by the three nodes (each debit and
// credit certified by a majority, docs/protocol.md §19); --custody 1 (the default): no bonds, each identity held by its
// home alone.
// Usage: npx tsx scripts/bench/transfer.ts [--senders 12] [--per-sender 6] [--rounds 2] [--sync 1] [--custody 1]
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/helpers/free-port.js';
import { identityKey, numberArg, root, startProcess, stop } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const SENDERS = numberArg('senders', 12);
const PER_SENDER = numberArg('per-sender', 6);
const ROUNDS = numberArg('rounds', 2);
const SYNC = numberArg('sync', 1) !== 0;
const CUSTODY = numberArg('custody', 1);
/** Envelopes an operator bonds (its node's setting). */
const BOND = 2;
const NODES = 3;
const SECRET = 'bench-transfer-secret-0123456789abcdef';
const CLI = ['--import', 'tsx', join(root, 'src/cli/index.ts'), 'start'];
const cost1 = JSON.stringify({ domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} });

interface Node {
  child: ChildProcess;
  url: string;
  dir: string;
  id: string;
  token: string;
}
interface Who {
  zid: string;
  key: string;
}

async function call(url: string, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

function must(r: { status: number; body: unknown }, status: number, what: string): any {
  if (r.status !== status) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function startNode(i: number, bootstrap: string[]): Promise<Node & { addr: string }> {
  const dir = await mkdtemp(join(tmpdir(), `svc-xfer-bench-${i}-`));
  const p2p = await freePort();
  const { child, url } = await startProcess(process.execPath, CLI, {
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_P2P_PORT: String(p2p),
    SVC_DATA_DIR: dir,
    SVC_SYNC_WRITES: String(SYNC),
    SVC_LOG_LEVEL: 'info',
    SVC_INITIAL_CREDITS: '0',
    SVC_MESH_SECRET: SECRET,
    SVC_BOOTSTRAP: bootstrap.join(','),
    SVC_RECEIPT_SECRET: '9a'.repeat(32),
    SVC_CONTRIBUTION_BOND_ENVELOPES: String(BOND),
  });
  const id = must(await call(url, 'GET', '/api/mesh/status'), 200, 'status').nodeId as string;
  const token = (await readFile(join(dir, 'operator-token'), 'utf8')).trim();
  return { child, url, dir, id, token, addr: `/ip4/127.0.0.1/tcp/${p2p}/p2p/${id}` };
}

async function register(n: Node, seed: string): Promise<Who> {
  const digest = createHash('sha256').update(`bench-transfer:${seed}`).digest('hex');
  const b = must(await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest }), 201, 'register');
  return { zid: b.zid, key: await identityKey(n.url, digest) };
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

async function main(): Promise<void> {
  const nodes: Node[] = [];
  try {
    const first = await startNode(0, []);
    nodes.push(first);
    for (let i = 1; i < NODES; i++) nodes.push(await startNode(i, [first.addr]));
    await until('every node hears the others', async () =>
      (await Promise.all(nodes.map((n) => call(n.url, 'GET', '/api/mesh/status')))).every(
        (s) => s.body.peers.filter((p: { url: string | null }) => p.url).length >= NODES - 1,
      ),
    );

    if (CUSTODY > 1) {
      // Every node's operator bonds: each node is a member, so every identity's custody set is the three nodes.
      for (const [i, n] of nodes.entries()) {
        const op = await register(n, `operator-${i}`);
        must(await call(n.url, 'POST', '/api/tally/grants', { zid: op.zid, credits: BOND }, n.token), 201, 'operator grant');
        for (let e = 0; e < BOND; e++) must(await call(n.url, 'POST', '/api/svc/compute', cost1, op.key), 200, 'operator compute');
        const bonded = await fetch(`${n.url}/api/contribute/bond`, {
          method: 'POST',
          headers: { authorization: `Bearer ${op.key}`, 'x-svc-operator-token': n.token, 'content-type': 'application/json' },
          body: '{}',
        });
        if (bonded.status !== 201) throw new Error(`bond at node ${i}: ${bonded.status} ${await bonded.text()}`);
      }
    }

    // Identities: senders with 2·rounds·per-sender paid envelopes each, receivers with none.
    const need = 2 * ROUNDS * PER_SENDER;
    const senders: Who[][] = [];
    const receivers: Who[][] = [];
    for (const [i, n] of nodes.entries()) {
      const s: Who[] = [];
      const r: Who[] = [];
      for (let k = 0; k < SENDERS; k++) {
        s.push(await register(n, `s-${i}-${k}`));
        r.push(await register(n, `r-${i}-${k}`));
      }
      senders.push(s);
      receivers.push(r);
      await Promise.all(
        s.map(async (w) => {
          must(await call(n.url, 'POST', '/api/tally/grants', { zid: w.zid, credits: need }, n.token), 201, 'grant');
          for (let e = 0; e < need; e++) must(await call(n.url, 'POST', '/api/svc/compute', cost1, w.key), 200, 'compute');
        }),
      );
    }
    // Each sender's ledger is held as the run says (three nodes, or its home alone).
    await until('every sender’s custody set', async () => {
      const sets = await Promise.all(nodes.map((n, i) => call(n.url, 'GET', `/api/mesh/custody/${senders[i]![0]!.zid}`)));
      return sets.every((c) => c.status === 200 && c.body.custodians.length === Math.min(CUSTODY, NODES));
    });
    // Each sender's home knows the receivers of the next node (their identity assertions gossiped).
    await until('receivers known at the senders’ homes', async () => {
      for (let i = 0; i < NODES; i++) {
        const next = receivers[(i + 1) % NODES]!;
        const known = await Promise.all(next.map((w) => call(nodes[i]!.url, 'GET', `/api/mesh/identity/${w.zid}`)));
        if (!known.every((k) => k.body.verified)) return false;
      }
      return true;
    });

    const same = { done: 0, ms: 0, lat: [] as number[] };
    const cross = { done: 0, ms: 0, lat: [] as number[], retried: 0 };
    const sendAll = async (crossNode: boolean): Promise<{ id: string; home: Node; who: Who; sentAt: number }[]> => {
      const out: { id: string; home: Node; who: Who; sentAt: number }[] = [];
      await Promise.all(
        nodes.flatMap((n, i) =>
          senders[i]!.map(async (w, k) => {
            const to = receivers[crossNode ? (i + 1) % NODES : i]!;
            for (let j = 0; j < PER_SENDER; j++) {
              const sentAt = Date.now();
              const r = await call(n.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: to[(k + j + 1) % to.length]!.zid, count: 1 }, w.key);
              must(r, crossNode ? 202 : 200, 'transfer');
              if (!crossNode) same.lat.push(Date.now() - sentAt);
              out.push({ id: r.body.transfer_id, home: n, who: w, sentAt });
            }
          }),
        ),
      );
      return out;
    };

    for (let round = 0; round < ROUNDS; round++) {
      let t0 = Date.now();
      const s = await sendAll(false);
      same.ms += Date.now() - t0;
      same.done += s.length;

      // Before the cross phase: what each receiver holds, so its arrivals can be counted.
      const holding = async (): Promise<number[]> =>
        Promise.all(
          receivers.flatMap((rs, i) =>
            rs.map(
              async (w) => must(await call(nodes[i]!.url, 'GET', `/api/tally/envelopes/${w.zid}?limit=1`, undefined, w.key), 200, 'envelopes').total as number,
            ),
          ),
        );
      const start = (await holding()).reduce((a, b) => a + b, 0);
      t0 = Date.now();
      const c = await sendAll(true);
      // Done when every envelope sent has arrived (the receivers' counters, a few light reads a poll), then the
      // records give each transfer's delivery time at the receiver's home (read once, after the phase).
      while ((await holding()).reduce((a, b) => a + b, 0) - start < c.length) await new Promise((r) => setTimeout(r, 100));
      let lastDelivered = t0;
      for (const p of c) {
        // Arrived; its sender's home marks it delivered when the acknowledgement is back (a moment later, at most).
        let st = must(await call(p.home.url, 'GET', `/api/tally/transfers/${p.id}`, undefined, p.who.key), 200, 'transfer state');
        while (st.state !== 'delivered') {
          await new Promise((r) => setTimeout(r, 50));
          st = must(await call(p.home.url, 'GET', `/api/tally/transfers/${p.id}`, undefined, p.who.key), 200, 'transfer state');
        }
        lastDelivered = Math.max(lastDelivered, st.delivered_unix_ms);
        cross.lat.push(st.delivered_unix_ms - p.sentAt);
        if (st.attempts > 1) cross.retried++;
      }
      cross.ms += lastDelivered - t0;
      cross.done += c.length;
    }

    const transfersPerSec = (same.done / same.ms) * 1000;
    const crossNodeTransfersPerSec = (cross.done / cross.ms) * 1000;
    console.log(
      JSON.stringify({
        transfersPerSec: Math.round(transfersPerSec * 10) / 10,
        crossNodeTransfersPerSec: Math.round(crossNodeTransfersPerSec * 10) / 10,
        p99Ms: quantile(cross.lat, 0.99),
        crossToSameRatio: Math.round((crossNodeTransfersPerSec / transfersPerSec) * 1000) / 1000,
        sameNodeP99Ms: quantile(same.lat, 0.99),
        crossNodeP50Ms: quantile(cross.lat, 0.5),
        sameNodeP50Ms: quantile(same.lat, 0.5),
        transfers: { sameNode: same.done, crossNode: cross.done, crossNodeRetried: cross.retried },
        nodes: NODES,
        concurrentSenders: NODES * SENDERS,
        durable: SYNC,
        custody: Math.min(CUSTODY, NODES),
      }),
    );
  } finally {
    for (const n of nodes) await stop(n.child);
    for (const n of nodes) await rm(n.dir, { recursive: true, force: true });
  }
}

await main();
