// npm start gives node --min-semi-space-size=64 for the main thread (docs/decisions.md). V8 applies the flag to every
// isolate, so a worker made under it pins a 64 MiB semi-space pair; resetWorkerHeapFlags, which spawnWorker calls
// before the first worker, gives workers V8's growing young generation back while the main isolate keeps its own.
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { resetWorkerHeapFlags } from '../../src/compute/executor.js';

/** A worker that allocates ~100 MB of short-lived objects and reports its young generation's size in MiB. */
async function workerNewSpaceMb(): Promise<number> {
  const source = `
    const v8 = require('node:v8');
    let kept = [];
    for (let i = 0; i < 2e6; i++) { kept.push({ i }); if (kept.length > 1000) kept = []; }
    const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space');
    require('node:worker_threads').parentPort.postMessage(s.space_size / 1048576);`;
  const w = new Worker(source, { eval: true });
  try {
    return await new Promise<number>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
  } finally {
    await w.terminate();
  }
}

describe('worker heap flags', () => {
  afterAll(() => {
    v8.setFlagsFromString('--min-semi-space-size=0');
    v8.setFlagsFromString('--max-semi-space-size=0');
  });

  it('a worker made under --min-semi-space-size=64 pins it; after resetWorkerHeapFlags a worker grows from small', async () => {
    // As npm start runs node (this test process was started without them).
    v8.setFlagsFromString('--max-semi-space-size=64');
    v8.setFlagsFromString('--min-semi-space-size=64');
    const pinned = await workerNewSpaceMb();
    expect(pinned).toBeGreaterThanOrEqual(64);
    resetWorkerHeapFlags();
    const grown = await workerNewSpaceMb();
    expect(grown).toBeLessThanOrEqual(32);
  });
});
