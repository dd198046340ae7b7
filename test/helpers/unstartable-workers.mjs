// A process whose working directory is deleted, as a node's is when its directory is removed under it: a worker thread
// reads the directory as it starts, so none can start (test/compute/worker-starts.test.ts). It starts the seal worker
// and a solver pool of the build, watches them for WATCH_MS, asks each for work, then moves to a directory that exists
// and asks again once the next try is due. It prints one JSON line: how many threads were started while watching
// (thread ids count every Worker made), each answer, and the start failure each reports (what the WORKERS_NOT_STARTING
// warning reads). Plain JavaScript on the build (test/global-setup.ts builds it).
import { Buffer } from 'node:buffer';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { WorkerSealer } from '../../dist/compute/sealer.js';
import { WorkerPoolExecutor } from '../../dist/compute/executor.js';
import { LAST_WAIT_MS } from '../../dist/compute/worker-starts.js';

const WATCH_MS = 1500;
/** Threads made so far in this process (a new Worker takes the next thread id, whether or not it starts). */
function threadsMade() {
  const probe = new Worker('', { eval: true });
  const made = probe.threadId - 1;
  probe.on('error', () => undefined);
  void probe.terminate();
  return made;
}
const outcome = (p) =>
  p.then(
    (value) => ({ ok: true, value: value && typeof value === 'object' ? Object.keys(value) : value }),
    (err) => ({ ok: false, message: String(err?.message ?? err) }),
  );

const gone = mkdtempSync(join(tmpdir(), 'svc-unstartable-'));
process.chdir(gone);
rmSync(gone, { recursive: true });

const before = threadsMade();
const sealer = new WorkerSealer(Buffer.alloc(32, 7));
const pool = new WorkerPoolExecutor({ size: 1, maxQueuedPerOwner: 4 });
await sleep(WATCH_MS);
const started = threadsMade() - before - 1;
const whileGone = {
  seal: await outcome(sealer.prepare({ kind: 'bogus' })),
  solve: await outcome(pool.run('zeta', { n: 3, count: 1 }, undefined, 5, 'test')),
  failures: { seal: sealer.startFailure(), solve: pool.startFailure() },
};

// The directory is back (another one): the next try starts workers that serve.
process.chdir(tmpdir());
const end = Date.now() + 2 * LAST_WAIT_MS;
let afterwards = null;
while (Date.now() < end) {
  await sleep(100);
  const seal = await outcome(sealer.prepare({ kind: 'bogus' }));
  if (seal.message?.includes('could not start')) continue;
  const solve = await outcome(pool.run('zeta', { n: 3, count: 1 }, undefined, 30, 'test'));
  afterwards = { seal, solve, failures: { seal: sealer.startFailure(), solve: pool.startFailure() } };
  break;
}
await sealer.close();
await pool.close();
process.stdout.write(JSON.stringify({ started, whileGone, afterwards }) + '\n');
