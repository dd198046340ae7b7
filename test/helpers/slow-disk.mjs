// Preloaded (--import) into a node process under test: every LevelDB batch starts to write SLOW_DISK_MS late, as on
// a slow disk, so a crash can be made to land while a batch is on its way to the disk. Plain JavaScript, so it loads
// into the built node (and its worker threads) without a TypeScript loader.
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbstractChainedBatch } from 'abstract-level';

const delayMs = Number(process.env.SLOW_DISK_MS ?? 0);
const proto = AbstractChainedBatch.prototype;
const write = proto.write;
proto.write = async function (...args) {
  await sleep(delayMs);
  return write.apply(this, args);
};
