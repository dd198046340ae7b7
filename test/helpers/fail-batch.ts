// Make a node's next LevelDB batch that is not background mesh bookkeeping fail after `delayMs` (as a full disk
// would), so a test can check that nothing of a failed write is left behind. With `touching`, the next batch that
// writes or deletes a key it matches (e.g. one effect's batch among several). The failing write is held `delayMs`,
// or until `hold.until()` holds (polled; at most `hold.timeoutMs`): a test that needs other commits queued behind the
// failing batch waits for them rather than for a time a loaded machine may overrun.
import type { TestNode } from './node.js';

export function failNextBatch(t: TestNode, hold: number | { until: () => boolean; timeoutMs?: number }, touching?: RegExp): void {
  type Batch = { put: (key: string, ...rest: unknown[]) => unknown; del: (key: string, ...rest: unknown[]) => unknown; write: (o?: unknown) => Promise<void> };
  const db = t.node.store.db as unknown as { batch: (...a: unknown[]) => Batch };
  const batch = db.batch.bind(db);
  const background = /^!mesh-(snapshots|events|arrivals)!/;
  let failed = false;
  db.batch = (...a: unknown[]) => {
    const b = batch(...a);
    if (failed) return b;
    let ours = false;
    const put = b.put.bind(b);
    const del = b.del.bind(b);
    const matches = (key: string) => (touching ? touching.test(key) : !background.test(key));
    b.put = (key, ...rest) => ((ours ||= matches(key)), put(key, ...rest));
    b.del = (key, ...rest) => ((ours ||= matches(key)), del(key, ...rest));
    const write = b.write.bind(b);
    b.write = async (o?: unknown) => {
      if (!ours || failed) return write(o);
      failed = true;
      if (typeof hold === 'number') await new Promise((r) => setTimeout(r, hold));
      else {
        const deadline = Date.now() + (hold.timeoutMs ?? 10_000);
        while (!hold.until() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      }
      throw new Error('No space left on device (injected)');
    };
    return b;
  };
}
