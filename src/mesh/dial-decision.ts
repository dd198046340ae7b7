// What the peer set does at one pass (docs/decisions.md, "Mesh: a partition is a reason to dial"): the state of the
// node's connections, from its open connections, its bounds and the peers it has gone deaf to, and the dials and
// prunes that state calls for, as one transition table. Pure: the peer set (peer-set.ts) gives the counts and carries
// the actions out.
//
// A node deaf to a peer heard recently (its tick events stopped arriving, and no connection is open to it) is on one
// side of a partition, or the peer is gone: either way a dial to it tells which, and heals the first. A node at its
// target dials no one else, so without this a sparse mesh cut in two by a dead node stays cut: each side at its target.

export type DialState = 'alone' | 'under-target' | 'partitioned' | 'settled' | 'over-max';

export interface DialInput {
  /** Peers with an open connection. */
  connected: number;
  /** Connections kept open at least (mesh.peers.target). */
  target: number;
  /** Connections above which the worst-scored are closed (mesh.peers.max). */
  max: number;
  /** Known peers a dial may go to now (out of their backoff, not connected, not being dialled). */
  knownDue: number;
  /** Peers heard recently that this node is deaf to now (silentPeers): a partition, or peers gone. */
  silent: number;
  /** Of those, the ones a dial may go to now. */
  silentDue: number;
  /** Dials to silent peers the node-wide cap allows now (SILENT_DIALS_PER_WINDOW less those of the window). */
  silentBudget: number;
}

export interface DialActions {
  state: DialState;
  /** Dials to known peers (the most recently seen first). */
  known: number;
  /** Dial the bootstrap addresses that are out of their backoff. */
  bootstrap: boolean;
  /** Dials to silent peers (the most recently heard first). */
  silent: number;
  /** Connections to close, the worst-scored first. */
  prune: number;
}

/** Dials to silent peers in one pass at most. */
export const SILENT_DIALS_PER_PASS = 1;
/** Dials to silent peers in one SILENT_WINDOW_MS at most: peers that are gone cost a node this many refused dials. */
export const SILENT_DIALS_PER_WINDOW = 6;
export const SILENT_WINDOW_MS = 60_000;

/**
 * The state of a node's connections. Over its maximum it prunes, whatever else holds; with no connection it is
 * alone; under its target it dials; at its target with room below its maximum and deaf to a peer heard recently it is
 * partitioned; otherwise settled. A node at its maximum is not partitioned: a dial would only be pruned again, and
 * the peers on its side with room dial instead.
 */
export function dialState(i: DialInput): DialState {
  if (i.connected > i.max) return 'over-max';
  if (i.connected === 0) return 'alone';
  if (i.connected < i.target) return 'under-target';
  if (i.silent > 0 && i.connected < i.max) return 'partitioned';
  return 'settled';
}

/** The silent peers to dial this pass: those due, within the pass's and the window's caps. */
function silentDials(i: DialInput): number {
  return Math.max(0, Math.min(i.silentDue, SILENT_DIALS_PER_PASS, i.silentBudget));
}

/**
 * The transition table: state → the pass's actions. Bootstrap addresses are a first contact and a last resort: dialled
 * alone, or under the target with no known peer due (docs/decisions.md, "Mesh: a healthy peer set"). A silent peer is
 * dialled in every state that dials, beside the known peers: it was alive a moment ago, where the most recently seen
 * known peer may be the one that died.
 */
export const DIAL_TABLE: Record<DialState, (i: DialInput) => Omit<DialActions, 'state'>> = {
  alone: (i) => ({ known: i.target, bootstrap: true, silent: silentDials(i), prune: 0 }),
  'under-target': (i) => ({ known: i.target - i.connected, bootstrap: i.knownDue === 0, silent: silentDials(i), prune: 0 }),
  partitioned: (i) => ({ known: 0, bootstrap: false, silent: silentDials(i), prune: 0 }),
  settled: () => ({ known: 0, bootstrap: false, silent: 0, prune: 0 }),
  'over-max': (i) => ({ known: 0, bootstrap: false, silent: 0, prune: i.connected - i.max }),
};

export function decideDials(i: DialInput): DialActions {
  const state = dialState(i);
  return { state, ...DIAL_TABLE[state](i) };
}
