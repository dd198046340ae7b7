// The accepted-event log (GET /api/mesh/events): every event this node accepted, from any entrance, kept in a
// bounded sublevel keyed by the event's own tick, with an arrival index beside it (padded arrival number → the
// event's key) that gives the order events reached this node. The oldest arrivals are pruned past eventsMax.
// Events of types without a row here (gossip-handlers.ts) have a share of their own, unknownMax: a second index of
// their arrivals, pruned past it, so that invented types evict only each other and the log keeps at least
// eventsMax − unknownMax events this node reads.
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import type { MeshLogger } from './host.js';
import type { MeshEvent, MeshTopic } from './wire.js';

export type Entrance = 'gossip' | 'http' | 'self';

export interface StoredEvent {
  id: string;
  topic: MeshTopic;
  via: Entrance;
  /** Peer the message came from on libp2p ('' on other entrances). */
  from: string;
  /** Local tick when the event arrived. */
  receivedSvcond: number;
  /** Arrival number on this node (increasing, kept across restarts): the order of GET /api/mesh/events. */
  arrival: number;
  event: MeshEvent;
}

/** Orders of the event log: by arrival here (default), or by the event's own tick (svcond). */
export type EventOrder = 'arrival' | 'tick';

export interface MeshEventLogOptions {
  store: Store;
  /** Accepted events kept (oldest arrivals pruned). */
  eventsMax: number;
  /** Of them, events of types without a row here (their oldest arrivals pruned first). */
  unknownMax: number;
  nowSvcond: () => number;
  log: MeshLogger;
}

export class MeshEventLog {
  private readonly sub: Sublevel;
  /** Arrival index: padded arrival number → the event's key in `sub`. */
  private readonly arrivals: Sublevel;
  /** The arrivals of events of types without a row: padded arrival number → the event's key (a subset of `arrivals`). */
  private readonly unknownArrivals: Sublevel;
  private nextArrival = 0;
  private arrivalCount = 0;
  private unknownCount = 0;
  private storedCount = 0;
  private pruning = false;

  constructor(private readonly o: MeshEventLogOptions) {
    this.sub = o.store.sub('mesh-events');
    this.arrivals = o.store.sub('mesh-arrivals');
    this.unknownArrivals = o.store.sub('mesh-arrivals-unknown');
  }

  /** Events stored now. */
  get stored(): number {
    return this.storedCount;
  }

  /** At start: the counts and the next arrival number; a log without its arrival index is indexed once. */
  async load(): Promise<void> {
    let count = 0;
    for await (const _ of this.sub.keys()) count++;
    this.storedCount = count;
    let arrivals = 0;
    for await (const _ of this.arrivals.keys()) arrivals++;
    this.arrivalCount = arrivals;
    let unknown = 0;
    for await (const _ of this.unknownArrivals.keys()) unknown++;
    this.unknownCount = unknown;
    const last = await this.o.store.range<string>(this.arrivals, { reverse: true, limit: 1 });
    this.nextArrival = last.length > 0 ? Number(last[0]!.key) + 1 : 0;
    if (arrivals === 0 && count > 0) await this.indexArrivals();
  }

  /** Events stamped at `fromSvcond` or later, in tick order, at most `limit`. */
  async stampedSince(fromSvcond: number, limit: number): Promise<StoredEvent[]> {
    return (await this.o.store.range<StoredEvent>(this.sub, { gte: padNum(fromSvcond, 16), limit })).map((e) => e.value);
  }

  /**
   * Write an accepted event to the log, with its place in the arrival index (one batch); an event of a type without
   * a row here (`unknownType`) is in its share's index too.
   */
  append(event: MeshEvent, id: string, topic: MeshTopic, via: Entrance, from: string, unknownType = false): Promise<void> {
    const arrival = this.nextArrival++;
    const key = eventKey(event.svcond, id);
    const stored: StoredEvent = { id, topic, via, from, receivedSvcond: this.o.nowSvcond(), arrival, event };
    const ops: Op[] = [
      { type: 'put', sub: this.sub, key, value: stored },
      { type: 'put', sub: this.arrivals, key: padNum(arrival, 16), value: key },
    ];
    if (unknownType) ops.push({ type: 'put', sub: this.unknownArrivals, key: padNum(arrival, 16), value: key });
    return this.o.store.commit(ops).then(() => {
      this.storedCount++;
      this.arrivalCount++;
      if (unknownType) this.unknownCount++;
      if (this.arrivalCount > this.o.eventsMax || this.unknownCount > this.o.unknownMax) void this.prune();
    });
  }

  /**
   * Accepted events, newest first: by arrival on this node (default), or by the event's own tick (`'tick'`, where a
   * late-stamped event sorts among older ones); 1 ≤ limit ≤ 500.
   */
  async recent(limit = 50, order: EventOrder = 'arrival'): Promise<StoredEvent[]> {
    const n = Math.max(1, Math.min(500, Number.isFinite(limit) ? Math.floor(limit) : 50));
    if (order === 'tick') return (await this.o.store.range<StoredEvent>(this.sub, { reverse: true, limit: n })).map((e) => e.value);
    const out: StoredEvent[] = [];
    let lt: string | undefined;
    // An index entry whose event was stored again later (a replay after the seen cache let it go) is skipped.
    while (out.length < n) {
      const page = await this.o.store.range<string>(this.arrivals, { reverse: true, limit: n - out.length, ...(lt !== undefined ? { lt } : {}) });
      if (page.length === 0) break;
      lt = page[page.length - 1]!.key;
      const events = await this.o.store.getMany<StoredEvent>(
        this.sub,
        page.map((e) => e.value),
      );
      for (let i = 0; i < page.length; i++) {
        const e = events[i];
        if (e !== undefined && e.arrival === Number(page[i]!.key)) out.push(e);
      }
    }
    return out;
  }

  /** Has an event with this id been stored? */
  async has(id: string): Promise<boolean> {
    for await (const key of this.sub.keys()) if (key.endsWith(`!${id}`)) return true;
    return false;
  }

  /** Wait until a pruning pass under way has finished (before the store closes). */
  async settled(): Promise<void> {
    while (this.pruning) await new Promise((r) => setTimeout(r, 5));
  }

  /**
   * A log written before the arrival index: its events get arrival numbers in the order they arrived (their
   * receivedSvcond, then their key), once.
   */
  private async indexArrivals(): Promise<void> {
    const all = await this.o.store.range<StoredEvent>(this.sub);
    all.sort((a, b) => a.value.receivedSvcond - b.value.receivedSvcond || (a.key < b.key ? -1 : 1));
    for (let i = 0; i < all.length; i += 1_000) {
      const ops: Op[] = [];
      for (const { key, value } of all.slice(i, i + 1_000)) {
        const arrival = this.nextArrival++;
        ops.push({ type: 'put', sub: this.sub, key, value: { ...value, arrival } }, { type: 'put', sub: this.arrivals, key: padNum(arrival, 16), value: key });
      }
      await this.o.store.commit(ops);
    }
    this.arrivalCount = all.length;
  }

  /**
   * Keep the newest unknownMax arrivals of unknown types, then the newest eventsMax arrivals of all: the oldest
   * arrivals and their events are deleted.
   */
  private async prune(): Promise<void> {
    if (this.pruning) return;
    this.pruning = true;
    try {
      while (this.unknownCount > this.o.unknownMax) {
        const oldest = await this.o.store.range<string>(this.unknownArrivals, { limit: Math.min(this.unknownCount - this.o.unknownMax, 1_000) });
        if (oldest.length === 0) break;
        await this.dropArrivals(oldest, oldest.length);
      }
      while (this.arrivalCount > this.o.eventsMax) {
        const oldest = await this.o.store.range<string>(this.arrivals, { limit: Math.min(this.arrivalCount - this.o.eventsMax, 1_000) });
        if (oldest.length === 0) break;
        const unknown = await this.o.store.getMany<string>(
          this.unknownArrivals,
          oldest.map((e) => e.key),
        );
        await this.dropArrivals(oldest, unknown.filter((k) => k !== undefined).length);
      }
    } catch (err) {
      this.o.log.warn({ err: String(err) }, 'mesh event pruning failed');
    } finally {
      this.pruning = false;
    }
  }

  /**
   * Delete arrival entries (padded arrival → event key) from both indexes, with their events; `unknown` of them were
   * in the unknown types' share.
   */
  private async dropArrivals(oldest: { key: string; value: string }[], unknown: number): Promise<void> {
    const events = await this.o.store.getMany<StoredEvent>(
      this.sub,
      oldest.map((e) => e.value),
    );
    const ops: Op[] = [];
    let removed = 0;
    for (let i = 0; i < oldest.length; i++) {
      const { key, value } = oldest[i]!;
      ops.push({ type: 'del', sub: this.arrivals, key }, { type: 'del', sub: this.unknownArrivals, key });
      // An event stored again since (a later arrival) stays with its later index entry.
      if (events[i] !== undefined && events[i]!.arrival === Number(key)) {
        ops.push({ type: 'del', sub: this.sub, key: value });
        removed++;
      }
    }
    await this.o.store.commit(ops);
    this.arrivalCount -= oldest.length;
    this.unknownCount -= unknown;
    this.storedCount -= removed;
  }
}

function eventKey(svcond: number, id: string): string {
  return `${padNum(svcond, 16)}!${id}`;
}
