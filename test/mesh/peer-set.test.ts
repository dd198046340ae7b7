// The peer set's dialling policy, on simulated time: the bootstrap address is a first contact and a last resort (not
// redialled while known peers are due and the node has a connection), a peer whose connection closed waits the longest
// backoff, a peer that answers full waits twice as long at each such answer in a row, a peer whose dial failed goes
// after the others, and a node at its target dials the peers it went deaf to, within its caps. The dialler records each
// dial and answers from the test's table of reachable peers; the peer store is the real one over LevelDB.
import { join } from 'node:path';
import type { Connection, PeerId } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import type { Multiaddr } from '@multiformats/multiaddr';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SILENT_DIALS_PER_WINDOW, SILENT_WINDOW_MS } from '../../src/mesh/dial-decision.js';
import { PeerSet, type Dialler, type SilentPeer } from '../../src/mesh/peer-set.js';
import { PeerStore } from '../../src/mesh/peer-store.js';
import { Store } from '../../src/store/db.js';
import { keyedNodes } from '../helpers/promise-signers.js';
import { makeDataDir, removeDir } from './helpers.js';

const MAINTAIN_MS = 2_000;
const REDIAL_MAX_MS = 10_000;

async function newPeerId(): Promise<string> {
  return (await keyedNodes(1))[0]!.id;
}

/** Dials recorded by peer id and time; a dial succeeds for a reachable peer, and `onOpen` sees each connection. */
class RecordingDialler implements Dialler {
  readonly dials: { peer: string; at: number }[] = [];
  readonly reachable = new Set<string>();
  onOpen: (peer: string, close: () => void) => void = () => undefined;
  private readonly open = new Map<string, Connection>();

  constructor(readonly peerId: PeerId) {}

  getConnections(): Connection[] {
    return [...this.open.values()];
  }

  async dial(addrs: Multiaddr | Multiaddr[]): Promise<Connection> {
    const peer = (Array.isArray(addrs) ? addrs[0]! : addrs).getPeerId()!;
    this.dials.push({ peer, at: Date.now() });
    if (!this.reachable.has(peer)) throw new Error('connection refused');
    const close = () => void this.open.delete(peer);
    const conn = { remotePeer: peerIdFromString(peer), status: 'open', timeline: { open: Date.now() }, close: async () => close() } as unknown as Connection;
    this.open.set(peer, conn);
    this.onOpen(peer, close);
    return conn;
  }

  dialsTo(peer: string): number[] {
    return this.dials.filter((d) => d.peer === peer).map((d) => d.at);
  }
}

describe('PeerSet dialling', () => {
  let dir: string;
  let store: Store;
  let known: PeerStore;
  let dialler: RecordingDialler;
  let seed: string;
  let set: PeerSet | null = null;
  const silent = { info: () => undefined, warn: () => undefined, debug: () => undefined };

  beforeEach(async () => {
    dir = await makeDataDir('svc-peer-set-');
    store = await Store.open(join(dir, 'db'), { sync: false });
    known = new PeerStore({ store });
    dialler = new RecordingDialler(peerIdFromString(await newPeerId()));
    seed = await newPeerId();
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
  });

  afterEach(async () => {
    await set?.stop();
    set = null;
    vi.useRealTimers();
    await store.close();
    await removeDir(dir);
  });

  const start = async (o: { target?: number; max?: number; bootstrap?: string[]; silent?: () => readonly SilentPeer[] } = {}): Promise<PeerSet> => {
    set = new PeerSet({
      node: dialler,
      known,
      bootstrap: o.bootstrap ?? [`/ip4/127.0.0.1/tcp/4001/p2p/${seed}`],
      target: o.target ?? 8,
      max: o.max ?? 24,
      ...(o.silent ? { silent: o.silent } : {}),
      redialMinMs: 250,
      redialMaxMs: REDIAL_MAX_MS,
      maintainMs: MAINTAIN_MS,
      graceMs: 20_000,
      score: () => 0,
      log: silent,
    });
    await set.start();
    return set;
  };

  /** Known peers in the store, none of them reachable. */
  const learnUnreachable = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) known.learn(await newPeerId(), [`/ip4/127.0.0.1/tcp/${5000 + i}`]);
  };

  it('does not redial its bootstrap address while known peers are due and it has a connection', async () => {
    const friend = await newPeerId();
    known.learn(friend, ['/ip4/127.0.0.1/tcp/4999']);
    // Seen most recently: dialled first, so the node holds a connection from the first pass on.
    known.seen(friend, Date.now());
    dialler.reachable.add(friend);
    await learnUnreachable(40);
    await start();
    await vi.advanceTimersByTimeAsync(30_000);
    // The first contact only: 15 passes under the target, each with known peers to try.
    expect(dialler.dialsTo(seed)).toHaveLength(1);
    expect(dialler.getConnections().map((c) => c.remotePeer.toString())).toEqual([friend]);
    expect(dialler.dials.length).toBeGreaterThan(40);
  });

  it('redials its bootstrap address when no known peer is due', async () => {
    const friend = await newPeerId();
    known.learn(friend, ['/ip4/127.0.0.1/tcp/4999']);
    dialler.reachable.add(friend);
    await start();
    await vi.advanceTimersByTimeAsync(30_000);
    // Backoff 250 ms doubling to 10 s, tried at the 2-s passes: 0, 2, 4, 6, 8, 12, 20, 30 s.
    expect(dialler.dialsTo(seed).length).toBeGreaterThanOrEqual(5);
  });

  it('redials its bootstrap address beside known peers while it has no connection', async () => {
    await learnUnreachable(40);
    await start();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(dialler.dialsTo(seed).length).toBeGreaterThanOrEqual(5);
    expect(dialler.getConnections()).toEqual([]);
  });

  it('waits the longest backoff before redialling a known peer whose connection closed', async () => {
    const [pruner, other] = [await newPeerId(), await newPeerId()];
    for (const peer of [pruner, other]) {
      known.learn(peer, ['/ip4/127.0.0.1/tcp/4999']);
      dialler.reachable.add(peer);
    }
    await start();
    await vi.advanceTimersByTimeAsync(MAINTAIN_MS);
    expect(dialler.dialsTo(pruner)).toHaveLength(1);
    // The peer closes the connection (it pruned this node over its maximum): the host reports the disconnect.
    const closedAt = Date.now();
    void dialler
      .getConnections()
      .find((c) => c.remotePeer.toString() === pruner)!
      .close();
    set!.disconnected(pruner);
    await vi.advanceTimersByTimeAsync(REDIAL_MAX_MS + MAINTAIN_MS);
    const [, redial] = dialler.dialsTo(pruner);
    expect(redial! - closedAt).toBeGreaterThanOrEqual(REDIAL_MAX_MS);
    expect(redial! - closedAt).toBeLessThanOrEqual(REDIAL_MAX_MS + MAINTAIN_MS);
    // The other peer's connection was left alone.
    expect(dialler.dialsTo(other)).toHaveLength(1);
  });

  it('waits twice as long after each full answer in a row from the same peer, up to 16 times the longest backoff', async () => {
    dialler.reachable.add(seed);
    // The seed answers every connection as full (what the host does on the exchange's answer).
    dialler.onOpen = (peer, close) => {
      if (peer !== seed) return;
      set!.full(seed);
      close();
    };
    await start();
    await vi.advanceTimersByTimeAsync(700_000);
    const at = dialler.dialsTo(seed);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    // Each wait is met at the next 2-s pass after it ends.
    const waits = [1, 2, 4, 8, 16, 16, 16].map((k) => k * REDIAL_MAX_MS);
    expect(gaps.length).toBeGreaterThanOrEqual(waits.length);
    for (const [i, wait] of waits.entries()) {
      expect(gaps[i]).toBeGreaterThanOrEqual(wait);
      expect(gaps[i]).toBeLessThanOrEqual(wait + MAINTAIN_MS);
    }
  });

  it('a peer not answered full again within a wait of the last one ends its streak', async () => {
    dialler.reachable.add(seed);
    let fullAnswers = 2;
    dialler.onOpen = (peer, close) => {
      if (peer !== seed || fullAnswers === 0) return;
      fullAnswers--;
      set!.full(seed);
      close();
    };
    await start();
    // Full at 0 s (wait 10 s), at ≈ 10 s (wait 20 s); the third connection, at ≈ 30 s, is kept.
    await vi.advanceTimersByTimeAsync(40_000);
    expect(dialler.dialsTo(seed)).toHaveLength(3);
    expect(dialler.getConnections().map((c) => c.remotePeer.toString())).toEqual([seed]);
    // Kept past a wait of the last full answer's end: the next full answer waits 10 s again, not 40.
    await vi.advanceTimersByTimeAsync(30_000);
    void dialler.getConnections()[0]!.close();
    set!.full(seed);
    set!.disconnected(seed);
    const fullAt = Date.now();
    await vi.advanceTimersByTimeAsync(15_000);
    const next = dialler.dialsTo(seed).find((t) => t > fullAt)!;
    expect(next - fullAt).toBeGreaterThanOrEqual(REDIAL_MAX_MS);
    expect(next - fullAt).toBeLessThanOrEqual(REDIAL_MAX_MS + MAINTAIN_MS);
  });

  // A node of a sparse line (target 1) whose neighbour died: the neighbour was seen last and heard last.
  const sparseLine = async (): Promise<{ neighbour: string; near: string; far: string }> => {
    const [neighbour, near, far] = [await newPeerId(), await newPeerId(), await newPeerId()];
    for (const [i, peer] of [neighbour, near, far].entries()) known.learn(peer, [`/ip4/127.0.0.1/tcp/${4100 + i}`]);
    known.seen(neighbour, Date.now() - 60_000);
    return { neighbour, near, far };
  };
  /** A silent peer with the address its last tick event named. */
  const heardAt = (peerId: string, i: number): SilentPeer => ({ peerId, addrs: [`/ip4/127.0.0.1/tcp/${4200 + i}`] });
  /** A reachable known peer seen more recently than the line's neighbour: the first a start dials. */
  const friendOf = async (): Promise<string> => {
    const friend = await newPeerId();
    known.learn(friend, ['/ip4/127.0.0.1/tcp/4999']);
    known.seen(friend, Date.now());
    dialler.reachable.add(friend);
    return friend;
  };

  it('alone, does not give every dial to the peer it was last connected to once that peer failed', async () => {
    const { neighbour, near } = await sparseLine();
    dialler.reachable.add(near);
    await start({ target: 1, max: 2, bootstrap: [] });
    await vi.advanceTimersByTimeAsync(3 * MAINTAIN_MS);
    // The dead neighbour first (seen most recently), then a peer that did not fail.
    expect(dialler.dialsTo(neighbour)).toHaveLength(1);
    expect(dialler.getConnections().map((c) => c.remotePeer.toString())).toEqual([near]);
  });

  it('at its target, dials a peer it no longer hears, the one whose dial failed after the rest', async () => {
    const { neighbour, near, far } = await sparseLine();
    const friend = await friendOf();
    dialler.reachable.add(far);
    // The friend is this node's one connection; the neighbour (dead), then near (dead too) and far went silent.
    const silent = [neighbour, near, far];
    await start({ target: 1, max: 2, bootstrap: [], silent: () => silent.map(heardAt) });
    await vi.advanceTimersByTimeAsync(1);
    expect(dialler.getConnections().map((c) => c.remotePeer.toString())).toEqual([friend]);
    await vi.advanceTimersByTimeAsync(3 * MAINTAIN_MS);
    // One silent peer a pass: the neighbour heard last, then near, then far (each failure goes to the back).
    expect(dialler.dials.filter((d) => d.peer !== friend).map((d) => d.peer)).toEqual([neighbour, near, far]);
    expect(new Set(dialler.getConnections().map((c) => c.remotePeer.toString()))).toEqual(new Set([friend, far]));
    // Healed: far is connected, so no longer silent; and a settled node dials no one.
    silent.splice(0, silent.length);
    const settledAt = dialler.dials.length;
    await vi.advanceTimersByTimeAsync(10 * MAINTAIN_MS);
    expect(dialler.dials.length).toBe(settledAt);
  });

  it('dials silent peers that are gone at most SILENT_DIALS_PER_WINDOW times a window, one a pass', async () => {
    const { neighbour, near, far } = await sparseLine();
    const friend = await friendOf();
    await start({ target: 1, max: 2, bootstrap: [], silent: () => [neighbour, near, far].map(heardAt) });
    await vi.advanceTimersByTimeAsync(SILENT_WINDOW_MS);
    const silentDials = () => dialler.dials.filter((d) => d.peer !== friend).map((d) => d.at);
    expect(silentDials()).toHaveLength(SILENT_DIALS_PER_WINDOW);
    const at = silentDials();
    expect(at.slice(1).every((t, i) => t - at[i]! >= MAINTAIN_MS)).toBe(true);
    // The next window allows as many again, never more. Near and far, never seen, are forgotten by the peer store after
    // three failed dials; they are dialled at the addresses of their last tick event.
    await vi.advanceTimersByTimeAsync(SILENT_WINDOW_MS);
    expect(silentDials()).toHaveLength(2 * SILENT_DIALS_PER_WINDOW);
    expect(dialler.getConnections().map((c) => c.remotePeer.toString())).toEqual([friend]);
  });

  it('at its maximum, dials no silent peer', async () => {
    const { near, far } = await sparseLine();
    const friends = [await friendOf(), await friendOf()];
    dialler.reachable.add(far);
    await start({ target: 2, max: 2, bootstrap: [], silent: () => [near, far].map(heardAt) });
    await vi.advanceTimersByTimeAsync(5 * MAINTAIN_MS);
    expect(new Set(dialler.getConnections().map((c) => c.remotePeer.toString()))).toEqual(new Set(friends));
    expect(dialler.dialsTo(far)).toEqual([]);
    expect(dialler.dialsTo(near)).toEqual([]);
  });
});
