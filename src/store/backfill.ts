// One pass at start that indexes records written before their index existed (embed keys, slug-loss markers,
// machine envelopes, results by owner, challenges by tick). It walks the source sublevel in key order and commits the
// index ops of each chunk with the pass's cursor in the meta sublevel, so a stop mid-pass resumes after the last
// chunk written; at the end the meta records the pass as done (1) and later starts skip it. The ops must be
// idempotent (the same puts again) — a chunk redone after a stop writes what it wrote before.
import type { Op, Store, Sublevel } from './db.js';

/** Source records read per committed chunk. */
export const BACKFILL_CHUNK = 1000;

export interface BackfillPass<T> {
  /** The pass's key in the meta sublevel ("…-v1"): 1 when done, {after} while under way. */
  key: string;
  /** The records indexed, walked in key order. */
  source: Sublevel;
  /** The index ops of one record (none: nothing to index). */
  opsFor: (key: string, value: T) => Op[] | Promise<Op[]>;
  /** Where the pass's state is kept (default: the chain's meta sublevel, as the embed-key index's). */
  meta?: Sublevel;
  chunk?: number;
  /** Ops written in the batch that marks the pass done (a storage migration's version bump, store/format.ts). */
  finish?: Op[];
}

/** Whether the pass has run to its end on this store. */
export async function backfillDone(store: Store, key: string, meta: Sublevel = store.sub('chain_meta')): Promise<boolean> {
  const state = await store.get<unknown>(meta, key);
  return state !== undefined && !isUnderWay(state);
}

function isUnderWay(state: unknown): state is { after: string } {
  return typeof state === 'object' && state !== null && typeof (state as { after?: unknown }).after === 'string';
}

/** Run the pass unless it is done (resuming after its last chunk); returns the records it indexed now. */
export async function backfillOnce<T>(store: Store, pass: BackfillPass<T>): Promise<number> {
  const meta = pass.meta ?? store.sub('chain_meta');
  const chunk = pass.chunk ?? BACKFILL_CHUNK;
  const state = await store.get<unknown>(meta, pass.key);
  if (state !== undefined && !isUnderWay(state)) return 0;
  const it = pass.source.iterator(isUnderWay(state) ? { gt: state.after } : {});
  let ops: Op[] = [];
  let read = 0;
  let indexed = 0;
  try {
    for await (const [key, value] of it) {
      const more = await pass.opsFor(key, value as T);
      if (more.length > 0) indexed++;
      ops.push(...more);
      if (++read % chunk === 0) {
        await store.commit([...ops, { type: 'put', sub: meta, key: pass.key, value: { after: key } }]);
        ops = [];
      }
    }
  } finally {
    await it.close();
  }
  await store.commit([...ops, ...(pass.finish ?? []), { type: 'put', sub: meta, key: pass.key, value: 1 }]);
  return indexed;
}
