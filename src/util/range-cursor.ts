// A sorted key space read a bounded page at a time, round and round: each call reads the page after the last one read,
// and from the first key again once a page comes back short. A watcher that looks at a few thousand keys a run thus
// looks at every key in turn, however many there are.

/** Reads at most `limit` keys in order, from `from` on (absent: the first). */
export type ReadKeys = (limit: number, from?: string) => Promise<string[]>;

/** The least key after `key` (keys hold no NUL). */
export function keyAfter(key: string): string {
  return `${key}\u0000`;
}

export class RangeCursor {
  private from: string | undefined;

  async next(read: ReadKeys, limit: number): Promise<string[]> {
    const page = await read(limit, this.from);
    this.from = page.length < limit ? undefined : keyAfter(page.at(-1)!);
    return page;
  }
}
