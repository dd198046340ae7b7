// Preloaded (--import) into a node process under test: every LevelDB batch starts to write SLOW_DISK_MS late, as on
// a slow disk, so a crash can be made to land while a batch is on its way to the disk.
import { AbstractChainedBatch } from 'abstract-level';

const delayMs = Number(process.env.SLOW_DISK_MS ?? 0);
const proto = AbstractChainedBatch.prototype as unknown as { write: (...args: unknown[]) => Promise<void> };
const write = proto.write;
proto.write = async function (this: unknown, ...args: unknown[]): Promise<void> {
  await new Promise((r) => setTimeout(r, delayMs));
  return write.apply(this, args);
};
