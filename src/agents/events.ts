// The agent event log (spec 6: the agent mesh SSE stream of spawn, tick, kill and derive events, plus stop). Events
// are numbered in one sequence per node and stored by owner, in the batch of the change they report, so a stream
// resumes from any Last-Event-ID after a reconnect or a restart. Live subscribers hear an event after its batch is
// durable, never before.
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';

export type AgentEventType = 'spawn' | 'tick' | 'derive' | 'kill' | 'stop';

export interface AgentEvent {
  seq: number;
  type: AgentEventType;
  agent: string;
  owner: string;
  svcond: number;
  data: Record<string, unknown>;
}

export type AgentEventListener = (e: AgentEvent) => void;

export class AgentEvents {
  private readonly byOwner: Sublevel;
  /** seq → owner: the node's order (its last key is the sequence at start). */
  private readonly order: Sublevel;
  private seq = 0;
  private readonly listeners = new Set<AgentEventListener>();

  constructor(private readonly store: Store) {
    this.byOwner = store.sub('agent_events');
    this.order = store.sub('agent_event_order');
  }

  async load(): Promise<void> {
    const last = await this.store.range<string>(this.order, { reverse: true, limit: 1 });
    this.seq = last[0] ? Number(last[0].key) : 0;
  }

  /** A new event and the ops that store it (numbered now; the caller commits the ops, then calls emit). */
  make(type: AgentEventType, agent: string, owner: string, svcond: number, data: Record<string, unknown>): { event: AgentEvent; ops: Op[] } {
    const event: AgentEvent = { seq: ++this.seq, type, agent, owner, svcond, data };
    return {
      event,
      ops: [
        { type: 'put', sub: this.byOwner, key: `${owner}!${padNum(event.seq)}`, value: event },
        { type: 'put', sub: this.order, key: padNum(event.seq), value: owner },
      ],
    };
  }

  /** After the batch is durable. */
  emit(events: AgentEvent[]): void {
    for (const e of events) for (const l of this.listeners) l(e);
  }

  subscribe(listener: AgentEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An owner's events after `afterSeq`, oldest first, at most `limit`. */
  async since(owner: string, afterSeq: number, limit: number): Promise<AgentEvent[]> {
    const rows = await this.store.range<AgentEvent>(this.byOwner, { gte: `${owner}!${padNum(afterSeq + 1)}`, lt: `${owner}!~`, limit });
    return rows.map((r) => r.value);
  }

  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Retention: drop the oldest events while more than `keep` sequence numbers lie behind the last one (at most
   * `batch` per call, one batch). A resume from before the window gets what is left: the window's oldest onwards.
   */
  async prune(keep: number, batch = 2000): Promise<number> {
    const below = this.seq - keep;
    if (below <= 0) return 0;
    const old = await this.store.range<string>(this.order, { lt: padNum(below + 1), limit: batch });
    if (old.length === 0) return 0;
    const ops: Op[] = [];
    for (const e of old) {
      ops.push({ type: 'del', sub: this.order, key: e.key }, { type: 'del', sub: this.byOwner, key: `${e.value}!${e.key}` });
    }
    await this.store.commit(ops);
    return old.length;
  }
}
