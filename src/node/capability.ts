// What a capability of the node registers, and the one loop that runs them: gossip rows and stream protocols are
// registered before anything starts (the mesh reads its tables when it starts), capabilities start in list order,
// one unref'd timer drives every ticker, and stop runs the stops in reverse start order.
import type { Stream } from '@libp2p/interface';
import type { RouteGroup } from '../http/route-group.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import { TICK_MS } from '../util/time.js';

/** Beats of the tick loop per tick: the finest rate a ticker may ask for. */
export const BEATS_PER_TICK = 4;

export interface Ticker {
  readonly name: string;
  /** Ticks between runs (a whole number ≥ 1); ignored when perTick is set. */
  readonly everyTicks?: number;
  /** Runs per tick, a divisor of BEATS_PER_TICK (the agents' pump polls 4 times a tick). */
  readonly perTick?: number;
  run(): unknown;
}

export interface StreamProtocol {
  /** The libp2p protocol id, e.g. /svc/exec/1.0.0. */
  readonly protocol: string;
  handle(stream: Stream, remotePeer: string): void;
}

export interface Capability {
  readonly name: string;
  /** Rows of the mesh's gossip table: the event types this capability applies. */
  readonly gossip?: readonly GossipHandler[];
  /** Stream protocols this capability serves on the mesh. */
  readonly streams?: readonly StreamProtocol[];
  readonly tickers?: readonly Ticker[];
  readonly routes?: readonly RouteGroup[];
  start?(): void | Promise<void>;
  stop?(): void | Promise<void>;
}

/** Where a capability's listeners go: the mesh's gossip table and its stream protocols. */
export interface Listeners {
  gossip(row: GossipHandler): void;
  stream(protocol: StreamProtocol): void;
}

/** Beats between a ticker's runs. */
export function beatsOf(ticker: Ticker): number {
  if (ticker.perTick !== undefined) {
    if (!Number.isInteger(BEATS_PER_TICK / ticker.perTick))
      throw new Error(`${ticker.name}: ${ticker.perTick} runs a tick do not divide ${BEATS_PER_TICK} beats`);
    return BEATS_PER_TICK / ticker.perTick;
  }
  const every = ticker.everyTicks ?? 1;
  if (!Number.isInteger(every) || every < 1) throw new Error(`${ticker.name}: every ${every} ticks is not a whole number of ticks`);
  return every * BEATS_PER_TICK;
}

/**
 * One timer for every ticker: beat n (from 1) runs each ticker whose beat count divides n, so a ticker of N ticks
 * first runs N ticks after the loop starts. A ticker's failure is its own: it is dropped, and the loop goes on.
 */
export class TickLoop {
  private timer: NodeJS.Timeout | null = null;
  private beats = 0;
  private readonly rows: { ticker: Ticker; beats: number }[];

  constructor(tickers: readonly Ticker[]) {
    this.rows = tickers.map((ticker) => ({ ticker, beats: beatsOf(ticker) }));
  }

  /** One beat (the timer calls it; tests call it themselves). */
  beat(): void {
    this.beats += 1;
    for (const { ticker, beats } of this.rows) {
      if (this.beats % beats !== 0) continue;
      void (async () => ticker.run())().catch(() => undefined);
    }
  }

  start(): void {
    if (this.timer || this.rows.length === 0) return;
    this.timer = setInterval(() => this.beat(), TICK_MS / BEATS_PER_TICK);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** The capabilities of a node in start order. */
export class Capabilities {
  private readonly loop: TickLoop;
  private started: Capability[] = [];

  constructor(private readonly list: readonly Capability[]) {
    this.loop = new TickLoop(list.flatMap((c) => c.tickers ?? []));
  }

  /** Registers every listener, starts each capability in order, then the tick loop. */
  async start(listeners: Listeners): Promise<void> {
    for (const c of this.list) {
      for (const row of c.gossip ?? []) listeners.gossip(row);
      for (const protocol of c.streams ?? []) listeners.stream(protocol);
    }
    for (const c of this.list) {
      this.started.push(c);
      await c.start?.();
    }
    this.loop.start();
  }

  /** The tick loop first, then every started capability's stop, last started first. */
  async stop(): Promise<void> {
    this.loop.stop();
    const started = this.started;
    this.started = [];
    for (const c of [...started].reverse()) await c.stop?.();
  }
}

/**
 * What a part needs of a part wired after it (the mesh's advert needs the bonds, the compute service the offloader):
 * the later part binds it once, when it is wired; until then it reads as undefined.
 */
export class Port<T> {
  private bound: T | undefined;

  constructor(readonly name: string) {}

  bind(value: T): void {
    if (this.bound !== undefined) throw new Error(`port ${this.name} is already bound`);
    this.bound = value;
  }

  get(): T | undefined {
    return this.bound;
  }
}
