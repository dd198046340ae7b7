// The Merkle log's catch-up (chain/merkle-log.ts), per row: what the checkpoint sweep pays for every row a seal
// appends. Rows are appended in blocks of 4096, then one catch-up takes each block; printed: this process's CPU µs
// per row (all threads, the median of the blocks) and the store ops the tree wrote per row. A checkout's figure
// against another's is the comparison: run it in both (docs/performance.md, "Where a seal's time goes").
// Usage: npx tsx scripts/bench/micro/merkle-catchup.ts [--blocks 6]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChainService } from '../../../src/chain/service.js';
import { Store } from '../../../src/store/db.js';
import { numberArg } from '../lib.js';

const blocks = Math.max(2, Math.floor(numberArg('blocks', 6)));
const ROWS = 4096;
const dir = await mkdtemp(join(tmpdir(), 'svc-merkle-'));
const store = await Store.open(dir, { sync: false });
const chain = new ChainService(store);
const slug = 'm-bench';
const perRow: number[] = [];
let ops = 0;
try {
  for (let b = 0; b < blocks; b++) {
    for (let i = 0; i < ROWS; i++) {
      const n = b * ROWS + i;
      await chain.append(slug, 1, 'compute_sealed', { result_id: `res_${n}`, result_digest: 'ab'.repeat(32), token_id: `env_${n}`, face_value: 1 });
    }
    const before = store.stats.ops;
    const t0 = process.cpuUsage();
    await chain.merkle.catchUp(slug);
    const t = process.cpuUsage(t0);
    // The first block warms the JIT.
    if (b > 0) {
      perRow.push((t.user + t.system) / ROWS);
      ops += store.stats.ops - before;
    }
  }
  perRow.sort((x, y) => x - y);
  console.log(
    JSON.stringify({
      catchUpCpuUsPerRow: Math.round(perRow[Math.floor(perRow.length / 2)]! * 10) / 10,
      storeOpsPerRow: Math.round((ops / ((blocks - 1) * ROWS)) * 1000) / 1000,
      rows: blocks * ROWS,
    }),
  );
} finally {
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
