// Indexes over machine records, written in the batch that writes the record: each member's machines
// (`${zid}!${slug}` → role) and the public machines (slug). GET /api/chain/aggregate/list reads them.
import type { Op, Store, Sublevel } from '../store/db.js';
import type { MachineRecord } from './service.js';

/** At most this many entries of each index are read for one listing (a page is cut from their union). */
export const LIST_SCAN_MAX = 10_000;
const INDEX_VERSION_KEY = 'machine-index-v1';

export class MachineIndex {
  private readonly members: Sublevel;
  private readonly publics: Sublevel;
  private readonly meta: Sublevel;

  constructor(private readonly store: Store) {
    this.members = store.sub('machine_members');
    this.publics = store.sub('machines_public');
    this.meta = store.sub('chain_meta');
  }

  /** The index ops that take `before` (null: a new machine) to `after`. */
  ops(before: MachineRecord | null, after: MachineRecord): Op[] {
    const ops: Op[] = [];
    const was = before?.roles ?? {};
    for (const [zid, role] of Object.entries(after.roles)) {
      if (was[zid] !== role) ops.push({ type: 'put', sub: this.members, key: `${zid}!${after.slug}`, value: role });
    }
    for (const zid of Object.keys(was)) {
      if (after.roles[zid] === undefined) ops.push({ type: 'del', sub: this.members, key: `${zid}!${after.slug}` });
    }
    // A machine that lost its slug (slug-loss.ts) is no longer listed as public: its slug names another home's machine.
    const wasPublic = before !== null && before.is_public && !before.lost;
    const isPublic = after.is_public && !after.lost;
    if (isPublic && !wasPublic) ops.push({ type: 'put', sub: this.publics, key: after.slug, value: 1 });
    if (!isPublic && wasPublic) ops.push({ type: 'del', sub: this.publics, key: after.slug });
    return ops;
  }

  /** Index the machines written before the index existed (once; at start). */
  async rebuildIfMissing(machines: Sublevel): Promise<number> {
    if ((await this.store.get(this.meta, INDEX_VERSION_KEY)) !== undefined) return 0;
    let ops: Op[] = [];
    let n = 0;
    for await (const [, value] of machines.iterator()) {
      ops.push(...this.ops(null, value as MachineRecord));
      n++;
      if (ops.length >= 1000) {
        await this.store.commit(ops);
        ops = [];
      }
    }
    ops.push({ type: 'put', sub: this.meta, key: INDEX_VERSION_KEY, value: 1 });
    await this.store.commit(ops);
    return n;
  }

  /**
   * The caller's machines (any role) and the public ones, by slug, without repeats: a page and the real total
   * (of the union of at most LIST_SCAN_MAX entries of each index).
   */
  async list(
    zid: string | null,
    limit: number,
    offset: number,
  ): Promise<{ total: number; items: { slug: string; role: string | null; is_public: boolean }[] }> {
    const mine = zid ? await this.store.range<string>(this.members, { gte: `${zid}!`, lt: `${zid}!~`, limit: LIST_SCAN_MAX }) : [];
    const pub = await this.store.range<number>(this.publics, { limit: LIST_SCAN_MAX });
    const bySlug = new Map<string, { slug: string; role: string | null; is_public: boolean }>();
    for (const e of pub) bySlug.set(e.key, { slug: e.key, role: null, is_public: true });
    for (const e of mine) {
      const slug = e.key.slice(e.key.indexOf('!') + 1);
      bySlug.set(slug, { slug, role: e.value, is_public: bySlug.has(slug) });
    }
    const all = [...bySlug.values()].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
    return { total: all.length, items: all.slice(offset, offset + limit) };
  }
}
