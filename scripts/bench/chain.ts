// State-machine chain figures, in process (no HTTP), on one machine's log: appends per second (rows appended with
// ChainService.append, 64 in flight, buffered writes: each append its own batch, grouped by the store), the tree's
// catch-up over every row (the RFC 6962 subtrees stored once), an inclusion proof's mean time (RFC 9162 audit path
// from stored subtrees: O(log n) reads) and a consistency proof's, and a full validation of the 100k-row chain (the
// hash chain and the RFC 6962 root, row by row; wall and CPU time). One JSON line.
// Usage: npx tsx scripts/bench/chain.ts [--rows 100000] [--proofs 1000]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../../src/store/db.js';
import { ChainService, type MachineRecord } from '../../src/chain/service.js';
import { verifyInclusion } from '../../src/chain/merkle.js';
import { inFlight, numberArg } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const rows = Math.floor(numberArg('rows', 100_000));
const proofs = Math.floor(numberArg('proofs', 1000));
const INFLIGHT = 64;

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-chain-'));
const store = await Store.open(join(dir, 'db'), { sync: false });
const chain = new ChainService(store);
const slug = 'bench-book';
const machine: MachineRecord = {
  slug,
  owner: 'zid_bench',
  genesis_svcond: 0,
  is_public: true,
  key_digest: '0'.repeat(64),
  roles: { zid_bench: 'owner' },
  inject_agent_rail: false,
  inject_pulse_orb: false,
  home: 'bench',
  created_unix_ms: 0,
};
await store.commit(chain.machineOps(machine));
chain.created(slug);

const t0 = performance.now();
await inFlight(rows, INFLIGHT, (i) => chain.append(slug, 1 + Math.floor(i / 100), 'event', { i, note: 'bench row' }));
const appendMs = performance.now() - t0;

const t1 = performance.now();
const treeCpu0 = process.cpuUsage();
const { size, root } = await chain.merkle.catchUp(slug);
const treeCpu = process.cpuUsage(treeCpu0);
const treeMs = performance.now() - t1;

// Deterministic spread of leaves (no Math.random): a stride co-prime with the size.
const t2 = performance.now();
let checked = 0;
for (let k = 0; k < proofs; k++) {
  const index = (k * 7919) % size;
  const path = await chain.merkle.inclusion(slug, index, size);
  const leaf = await chain.merkle.leaf(slug, index + 1);
  if (verifyInclusion(index, size, leaf, path, root)) checked++;
}
const inclusionMs = (performance.now() - t2) / proofs;
const t3 = performance.now();
for (let k = 0; k < proofs; k++) await chain.merkle.consistency(slug, 1 + ((k * 7919) % (size - 1)), size);
const consistencyMs = (performance.now() - t3) / proofs;

// Wall time, and the process's CPU time over it (all threads: LevelDB reads run on libuv's): on a shared machine the
// wall time mostly measures the other tenants.
const t4 = performance.now();
const cpu0 = process.cpuUsage();
const v = await chain.validate(slug);
const cpu = process.cpuUsage(cpu0);
const validateMs = performance.now() - t4;

await store.close();
await rm(dir, { recursive: true, force: true });
if (!v.valid || v.root_hash !== root.toString('hex') || checked !== proofs) throw new Error('bench chain did not verify');
process.stdout.write(
  `${JSON.stringify({
    rows,
    appendsPerSec: Math.round(rows / (appendMs / 1000)),
    treeCatchUpMs: Math.round(treeMs),
    treeCatchUpCpuMs: Math.round((treeCpu.user + treeCpu.system) / 1000),
    inclusionProofMs: Number(inclusionMs.toFixed(3)),
    consistencyProofMs: Number(consistencyMs.toFixed(3)),
    validate100kRowsMs: Math.round((validateMs * 100_000) / rows),
    validateMs: Math.round(validateMs),
    validateCpuMs: Math.round((cpu.user + cpu.system) / 1000),
  })}\n`,
);
