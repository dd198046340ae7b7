// The bonds this node has heard their nodes advertise (tick events), custody's reading of who may hold identities
// (node/custody.ts). Kept in one small record, written when it changes and read at start, so a restarted node
// computes the custody sets it computed before it stopped: a write it makes before its custodians answer waits for
// them (503 SVC_CUSTODY_UNAVAILABLE past the bound) instead of being certified by a set of one that its custodians,
// who know the set, refuse. A node absent from the peer table keeps what it last advertised; a node's entry goes
// once the bond registry no longer holds its bond as active (a bond that ended, or was slashed).
import type { Store, Sublevel } from '../store/db.js';

const RECORD_KEY = 'bonds';

/** A peer's latest advertisement: its node id and the bond id its tick named (null: none); unheard peers are absent. */
export interface Advert {
  node: string;
  bondId: string | null;
}

export class HeardBonds {
  private readonly sub: Sublevel;
  /** node id → the bond id it advertised. */
  private heard = new Map<string, string>();
  /** The last record put, as written (writes chain so the last one lands last). */
  private written = '{}';
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly onWriteError: (err: unknown) => void = () => undefined,
  ) {
    this.sub = store.sub('custody_heard');
  }

  async load(): Promise<void> {
    const rec = (await this.store.get<Record<string, string>>(this.sub, RECORD_KEY)) ?? {};
    this.heard = new Map(Object.entries(rec));
    this.written = recordText(this.heard);
  }

  /**
   * Fold in what the peers advertise now and forget nodes whose bond is no longer active (`active`: node → its active
   * bond id); the record is written when the result differs from the last one written. Returns the view.
   */
  update(adverts: Iterable<Advert>, active: ReadonlyMap<string, string>): ReadonlyMap<string, string> {
    for (const a of adverts) {
      if (a.bondId === null) this.heard.delete(a.node);
      else this.heard.set(a.node, a.bondId);
    }
    for (const [node, bondId] of this.heard) if (active.get(node) !== bondId) this.heard.delete(node);
    const text = recordText(this.heard);
    if (text !== this.written) {
      this.written = text;
      const value = JSON.parse(text) as Record<string, string>;
      // Aside from the held commits: this record is built on by nothing, and a write waiting for its custodians must
      // not hold the view that names them.
      this.writing = this.writing.then(() => this.store.commitAside([{ type: 'put', sub: this.sub, key: RECORD_KEY, value }]).catch(this.onWriteError));
    }
    return this.heard;
  }

  /** The writes in flight (tests, and a stop that wants them on disk). */
  flushed(): Promise<void> {
    return this.writing;
  }
}

function recordText(heard: ReadonlyMap<string, string>): string {
  return JSON.stringify(Object.fromEntries([...heard].sort(([a], [b]) => (a < b ? -1 : 1))));
}
