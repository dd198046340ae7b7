// What push.ts and push-clients.ts both read: a sealed tick's stamp from its raw frame, and this machine's realtime
// clock anchored on a millisecond edge of Date.now() and advanced by hrtime (the node reads its clock the same way,
// kernel/clock.ts, but truncates Date.now(): 0–1 ms behind, so a latency measured here is never less than the true one).

const STAMP = Buffer.from('"unix_ns":"');

/** The envelope's `unix_ns` (decimal text) in a raw tick frame. */
export function tickStampOf(frame: Buffer): string {
  const k = frame.indexOf(STAMP);
  return frame.toString('latin1', k + STAMP.length, frame.indexOf(0x22, k + STAMP.length));
}

/** Realtime ns = hrtime + this anchor. */
export function exactAnchorNs(): bigint {
  const start = Date.now();
  let now = start;
  while (now === start) now = Date.now();
  return BigInt(now) * 1_000_000n - process.hrtime.bigint();
}
