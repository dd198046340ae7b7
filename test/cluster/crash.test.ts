// A node killed (SIGKILL) in the middle of sealing: every compute it answered is on disk after a restart, and the
// records of each seal (chain row, envelope and its indexes, wallet charge, counters) agree with each other, because a
// seal is one atomic batch and its answer goes out only after the batch is written. Seals that were written but not
// yet answered when the process died may be there too; a half-written one may not.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess } from '../../scripts/bench/lib.js';
import { DIST_CLI } from '../helpers/cli.js';
import { bearer, call, zkIdentity } from '../helpers/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CLI = [DIST_CLI, 'start'];
/** Preloaded into the node that is killed: its batches reach the disk 40 ms late, so the kill lands during a write. */
const SLOW_DISK = ['--import', join(ROOT, 'test/helpers/slow-disk.mjs')];
const CREDITS = 100_000;
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** `svc-node start` on a free port with durable writes, once it logs that it listens. */
async function startNode(dataDir: string, slowDisk = false): Promise<{ child: ChildProcess; url: string }> {
  const started = await startProcess(process.execPath, slowDisk ? [...SLOW_DISK, ...CLI] : CLI, {
    SLOW_DISK_MS: '40',
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_DATA_DIR: dataDir,
    SVC_SYNC_WRITES: 'true',
    SVC_LOG_LEVEL: 'info',
    SVC_INITIAL_CREDITS: String(CREDITS),
  });
  children.push(started.child);
  return started;
}

interface Answer {
  result_id: string;
  audit: { seq: number; hash: string; slug: string };
  envelope: { token_id: string; hash: string };
  tally_charge: { cost: number };
}

describe('a node killed while sealing', () => {
  it('keeps every answered seal after a restart, and its chain, envelopes, wallet and counters agree', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-crash-'));
    dirs.push(dataDir);
    const first = await startNode(dataDir, true);
    const who = await zkIdentity(first.url, 'crash-test');

    // Sixteen clients seal in a loop; the node is killed once 150 seals are answered, with requests still in flight
    // and (the disk being slow) a batch on its way: a node that answered before its batch was written loses seals here.
    const answered: Answer[] = [];
    let killed = false;
    first.child.removeAllListeners('exit');
    const exited = new Promise<void>((r) => first.child.once('exit', () => r()));
    const client = async (i: number): Promise<void> => {
      const request = JSON.stringify({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2 + i, velocity_m_s: 3 } });
      while (!killed) {
        let res: Response;
        try {
          res = await fetch(`${first.url}/api/svc/compute`, {
            method: 'POST',
            body: request,
            headers: { 'content-type': 'application/json', ...bearer(who.key) },
          });
        } catch {
          return; // the connection died with the node
        }
        let body: Answer;
        try {
          body = (await res.json()) as Answer;
        } catch {
          return;
        }
        expect(res.status, JSON.stringify(body)).toBe(200);
        answered.push(body);
        if (answered.length >= 150 && !killed) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => client(i)));
    await exited;
    expect(first.child.signalCode).toBe('SIGKILL');
    expect(answered.length).toBeGreaterThanOrEqual(150);

    const second = await startNode(dataDir);
    try {
      const key = bearer(who.key);
      // The chain is whole; it holds every answered seal, and maybe a few that were written but not answered.
      const validated = await call(second.url, 'GET', `/api/chain/${who.slug}/pohc/validate`, undefined, key);
      expect(validated.status).toBe(200);
      expect(validated.body.valid).toBe(true);
      expect(validated.body.first_bad).toBeNull();
      const rows: number = validated.body.rows;
      const seqs = answered.map((a) => a.audit.seq);
      expect(new Set(seqs).size).toBe(answered.length);
      expect(rows).toBeGreaterThanOrEqual(Math.max(...seqs));
      expect(rows).toBeLessThan(answered.length + 16 + 1); // at most the requests that were in flight

      // Each answered seal's audit row is the one the client was given.
      const onDisk = new Map<number, string>();
      for (let from = 1; from <= rows; from += 100) {
        const page = await call(second.url, 'GET', `/api/chain/${who.slug}/explore?from=${from}&to=${from + 99}`, undefined, key);
        expect(page.status).toBe(200);
        for (const row of page.body.rows as { seq: number; hash: string }[]) onDisk.set(row.seq, row.hash);
      }
      expect(onDisk.size).toBe(rows);
      for (const a of answered) expect(onDisk.get(a.audit.seq)).toBe(a.audit.hash);

      // One envelope per row: the counter, the owner index and the records agree, and every answered envelope is there.
      const envelopes = await call(second.url, 'GET', `/api/tally/envelopes/${who.zid}?limit=500`, undefined, key);
      expect(envelopes.status).toBe(200);
      expect(envelopes.body.total).toBe(rows);
      const listed = envelopes.body.items as { token_id: string; hash: string; result_id: string }[];
      expect(listed).toHaveLength(rows);
      const byToken = new Map(listed.map((e) => [e.token_id, e]));
      for (const a of answered) {
        expect(byToken.get(a.envelope.token_id)).toMatchObject({ hash: a.envelope.hash, result_id: a.result_id });
      }
      const inbox = await call(second.url, 'GET', `/api/tally/envelopes/${who.zid}?folder=inbox&limit=1`, undefined, key);
      expect(inbox.body.total).toBe(rows);

      // The wallet paid for exactly the seals on disk, and the day's usage counted them.
      const cost = answered[0]!.tally_charge.cost;
      expect(answered.every((a) => a.tally_charge.cost === cost)).toBe(true);
      const balance = await call(second.url, 'GET', '/api/tally/balance', undefined, key);
      expect(balance.body.total).toBe(CREDITS - rows * cost);
      const usage = await call(second.url, 'GET', '/api/compute/usage', undefined, key);
      expect(usage.body.used).toBe(rows);

      // An answer from before the crash still verifies (the receipt secret is kept in the data dir), and the next
      // seal continues the chain.
      const verified = await call(second.url, 'POST', '/api/svc/verify', answered[0], key);
      expect(verified.body.valid).toBe(true);
      const next = await call(
        second.url,
        'POST',
        '/api/svc/compute',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 1, velocity_m_s: 1 } },
        key,
      );
      expect(next.status).toBe(200);
      expect(next.body.audit.seq).toBe(rows + 1);
      const after = await call(second.url, 'GET', `/api/chain/${who.slug}/pohc/validate`, undefined, key);
      expect(after.body).toMatchObject({ valid: true, rows: rows + 1 });
    } finally {
      second.child.removeAllListeners('exit');
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
  }, 90_000);
});
