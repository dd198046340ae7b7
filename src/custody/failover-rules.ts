// A custodian's failover of one identity (docs/protocol.md §19 "Failover"), as a table: the states a custodian is in
// for an identity whose home is another node, and what moves it on. Pure: the driver (failover.ts) reads the facts
// (ticks, promises, the outcome of taking the identity over) and asks the table.
//
//   watching  the home is heard, or not for long enough yet (rank × failoverTicks)
//   asking    this custodian asked the set for promises of the next epoch
//   taking    a majority promised: it takes the chain of the highest head (HEAD_ORDER), has its epoch entry certified, and becomes the home
//   waiting   it lost (promises short, or another candidate won, or taking failed): it waits before it may try again

export type FailoverState = 'watching' | 'asking' | 'taking' | 'waiting';
export type FailoverEvent = 'home-unheard' | 'majority' | 'short' | 'taken' | 'failed' | 'wait-over' | 'home-moved';

interface Row {
  from: readonly FailoverState[];
  on: FailoverEvent;
  to: FailoverState;
}

export const FAILOVER_ROWS: readonly Row[] = [
  { from: ['watching'], on: 'home-unheard', to: 'asking' },
  { from: ['asking'], on: 'majority', to: 'taking' },
  { from: ['asking'], on: 'short', to: 'waiting' },
  // This node is the home now: it watches no more (the identity is homed here), until a later home change.
  { from: ['taking'], on: 'taken', to: 'watching' },
  { from: ['taking'], on: 'failed', to: 'waiting' },
  { from: ['waiting'], on: 'wait-over', to: 'watching' },
  // Another node became the home: whatever this one was doing, it watches the new home.
  { from: ['watching', 'asking', 'taking', 'waiting'], on: 'home-moved', to: 'watching' },
];

/** The state after `event` in `state`, or null when the event does not apply there. */
export function nextState(state: FailoverState, event: FailoverEvent): FailoverState | null {
  return FAILOVER_ROWS.find((r) => r.on === event && r.from.includes(state))?.to ?? null;
}

/** A head as a promise shows it (promise.ts PromisedHead): its attempt absent is 0. */
export interface OrderedHead {
  epoch: number;
  attempt?: number;
  seq: number;
}

/**
 * Which head a candidate takes, as a table: the first row on which two heads differ decides, the higher one wins.
 * Every entry certified before the candidate's epoch is on the chain of the head it takes (docs/decisions.md
 * "Custody", "The chain a new home takes"):
 *   epoch    a later epoch's home chained its epoch entry on such a chain (by induction on the epochs);
 *   attempt  within an epoch, the home proposes an attempt's first entry after it gave up every entry it ever gives up
 *            of the attempts before (it gives up no certified entry: certification follows the chain), so a higher
 *            attempt's chain holds every certified entry of the lower ones, even behind a shorter head;
 *   seq      one attempt's entries are one chain (the home proposes each on the last): the longer holds the shorter.
 * Two heads equal on every row have one hash (the home never proposes an attempt twice).
 */
export const HEAD_ORDER: readonly { by: string; of: (h: OrderedHead) => number }[] = [
  { by: 'epoch', of: (h) => h.epoch },
  { by: 'attempt', of: (h) => h.attempt ?? 0 },
  { by: 'seq', of: (h) => h.seq },
];

/** Is head `a` after head `b` in HEAD_ORDER? */
export function headAfter(a: OrderedHead, b: OrderedHead): boolean {
  for (const row of HEAD_ORDER) {
    const d = row.of(a) - row.of(b);
    if (d !== 0) return d > 0;
  }
  return false;
}

/** The last tick heard from a node, and the interval of its tick events (its `every`: 1 on a small mesh). */
export interface Heard {
  tick: number;
  every: number;
}

/**
 * Should a custodian start the next epoch now? The home unheard for (rank + 1) × failoverTicks of its tick intervals,
 * rank being this custodian's place among the set's live custodians after the home (0: the first), so the first live
 * one starts and the others rarely compete; a mesh whose nodes tick less often (it grows) waits as many more ticks.
 * `heard` is the home's last tick heard here (null: never, then counted in this node's interval `every`), `since` the
 * tick this node started watching (a node that just started has heard nobody yet).
 */
export function homeUnheard(now: number, heard: Heard | null, since: number, rank: number, failoverTicks: number, every: number): boolean {
  return now - Math.max(heard?.tick ?? since, since) >= (rank + 1) * failoverTicks * (heard?.every ?? every);
}

/** Ticks past a node's own interval before its silence is checked directly (gossip delays a tick event 1–2 ticks). */
export const OVERDUE_SLACK_TICKS = 2;

/**
 * Is a node's next tick event overdue: unheard longer than its own interval and the slack (never heard: counted from
 * `since`, in `every`)? A live node that ticks every e ticks is silent for e ticks; past that, a direct probe says
 * whether it is gone (home-probes.ts).
 */
export function tickOverdue(now: number, heard: Heard | null, since: number, every: number): boolean {
  return now - Math.max(heard?.tick ?? since, since) > (heard?.every ?? every) + OVERDUE_SLACK_TICKS;
}

/**
 * The faster way to start the next epoch: the home's tick event overdue and every direct probe of it failing for
 * (rank + 1) × failoverTicks ticks (`unreachableSince`: the tick of the first failed probe of this silence; null when
 * none failed, or one answered). On a small mesh (interval 1) homeUnheard comes first; on a large one, whose nodes
 * tick every e ticks, a dead home is taken over after ≈ e + failoverTicks ticks instead of failoverTicks × e.
 */
export function homeUnreachable(now: number, unreachableSince: number | null, rank: number, failoverTicks: number): boolean {
  return unreachableSince !== null && now - unreachableSince >= (rank + 1) * failoverTicks;
}

/** Was a node heard within failoverTicks of its tick intervals? */
export function heardLately(now: number, heard: Heard | null, failoverTicks: number): boolean {
  return heard !== null && now - heard.tick < failoverTicks * heard.every;
}

/**
 * Has a node gone unheard for `replaceTicks` of its tick intervals (never heard: counted from `since`, in `every`)?
 * A custodian gone that long is replaced in its identities' sets (failover.ts reconfigure).
 */
export function goneLong(now: number, heard: Heard | null, since: number, replaceTicks: number, every: number): boolean {
  return now - Math.max(heard?.tick ?? since, since) >= replaceTicks * (heard?.every ?? every);
}
