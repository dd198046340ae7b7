// Peer exchange on first contact: the stream protocol /svc/peers/1 (protocol.md §18). A node that opens a connection
// asks the peer for addresses it knows; the peer answers with up to EXCHANGE_PEERS of them from its persisted peer
// store (connected peers first, then the recently seen, never the asker) and says whether it is full: the asker's
// connection would put it over its maximum. An asker told "full" closes the connection and backs off that peer, so a
// node over its maximum turns a newcomer away with somewhere else to go instead of with nothing. Without it a mass join
// through one seed strands every node the seed cannot take (docs/scale.md).
//
// Both directions carry the mesh handshake (wire.ts handshakeFor) for the stream's noise-authenticated remote peer:
// only a mesh member is answered, and an asker keeps only addresses a mesh member vouched for.
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import { peerIdFromString } from '@libp2p/peer-id';
import type { Connection, Stream } from '@libp2p/interface';
import type { ErrorCode } from '../kernel/errors.js';
import { answerFrame, readFrame, readRequestFrame, writeFrame } from './frame.js';
import type { PeerStore } from './peer-store.js';
import { isPrivateHost } from './reachability.js';
import { MAX_SKEW_TICKS } from './validator.js';
import { bodyDigest, handshakeFor } from './wire.js';

export const PEER_EXCHANGE_PROTOCOL = '/svc/peers/1';
/** Peers one answer carries at most: gossipsub's PX count (prunePeers 16). */
export const EXCHANGE_PEERS = 16;
/** Addresses per peer in an answer (the peer store keeps 8 per peer). */
const EXCHANGE_ADDRS = 8;
/** A peer seen (connected) within this window is offered after the connected ones. */
const RECENT_MS = 10 * 60_000;
/** The largest request and answer frames (an answer of 16 peers × 8 addresses is about 12 KiB). */
const MAX_REQUEST_BYTES = 1024;
const MAX_ANSWER_BYTES = 64 * 1024;
/** How long either side waits for the other's frame. */
const EXCHANGE_WITHIN_MS = 5_000;

const handshake = z.string().min(1).max(128);

export const exchangeRequestSchema = z.object({ v: z.literal(1), svcond: z.number().int().min(0), handshake }).strict();
export type ExchangeRequest = z.infer<typeof exchangeRequestSchema>;

const exchangePeer = z
  .object({
    peerId: z.string().min(1).max(128),
    addrs: z.array(z.string().min(1).max(512)).min(1).max(EXCHANGE_ADDRS),
  })
  .strict();

export const exchangeAnswerSchema = z
  .object({
    v: z.literal(1),
    svcond: z.number().int().min(0),
    /** The asker's connection puts the answering node over its maximum: it will not keep it. */
    full: z.boolean(),
    peers: z.array(exchangePeer).max(EXCHANGE_PEERS),
    handshake,
  })
  .strict();
export type ExchangeAnswer = z.infer<typeof exchangeAnswerSchema>;

/** A request refused (bad frame, handshake or tick): the answer instead of a list, not authenticated. */
export const exchangeRefusalSchema = z
  .object({ v: z.literal(1), refused: z.object({ code: z.string().max(64), message: z.string().max(512) }).strict() })
  .strict();

export interface ExchangedPeer {
  peerId: string;
  addrs: string[];
}

/** What the exchange needs of the host and the node. */
export interface PeerExchangeDeps {
  selfId: () => string;
  secret: string;
  nowSvcond: () => number;
  known: PeerStore;
  /** The connection manager's open connections. */
  connections: () => Connection[];
  /** The peer set's maximum: a connection past it (by age) is answered as full. */
  max: number;
  /** Addresses a peer vouched for: to the peer store, and a dial pass if the node is under its target. */
  learnt: (peers: ExchangedPeer[], from: string) => void;
  /** The peer is full: the caller closes the connection, the peer set backs off that peer. */
  full: (peerId: string, connection: Connection) => void;
  log: { debug(obj: object, msg?: string): void };
}

export class ExchangeRefused extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The request a node sends as `sender` at tick `svcond`. */
export function exchangeRequest(secret: string, sender: string, svcond: number): ExchangeRequest {
  return { v: 1, svcond, handshake: handshakeFor(secret, sender, svcond, bodyDigest({ v: 1, svcond })) };
}

/** The answer a node sends as `sender`: the handshake covers every other member. */
export function exchangeAnswer(secret: string, sender: string, svcond: number, full: boolean, peers: ExchangedPeer[]): ExchangeAnswer {
  const unsigned = { v: 1 as const, svcond, full, peers };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

/** Check a request or answer's handshake for `sender` and its tick; throws ExchangeRefused. */
export function checkExchange(secret: string, sender: string, nowSvcond: number, msg: { svcond: number; handshake: string }): void {
  const { handshake: given, ...rest } = msg;
  // [REJECT] Only a mesh member (holder of the secret) speaking as the stream's remote peer.
  if (!sameText(handshakeFor(secret, sender, msg.svcond, bodyDigest(rest)), given))
    throw new ExchangeRefused('INVALID_HANDSHAKE', 'the handshake does not match this message from this peer');
  // [IGNORE] A message from outside the mesh's staleness window.
  if (Math.abs(msg.svcond - nowSvcond) > MAX_SKEW_TICKS) throw new ExchangeRefused('STALE_HANDSHAKE', 'the message tick is too far from now');
}

/** The host of a multiaddr's first ip4/ip6 component; null for a relay circuit or a name. */
function ipOf(ma: Multiaddr): string | null {
  const c = ma.getComponents().find((x) => x.name === 'ip4' || x.name === 'ip6');
  return c?.value ?? null;
}

/**
 * The addresses worth giving an asker that reached this node at `askerAddr`: a loopback address only to an asker on
 * loopback, a private-range address only to one on loopback or a private range (an outside node cannot dial them).
 */
export function dialableFor(askerAddr: Multiaddr, addrs: readonly string[]): string[] {
  const askerHost = ipOf(askerAddr);
  const askerLoopback = askerHost !== null && (askerHost.startsWith('127.') || askerHost === '::1');
  const askerPrivate = askerHost !== null && isPrivateHost(askerHost);
  const out: string[] = [];
  for (const text of addrs) {
    let ma: Multiaddr;
    try {
      ma = multiaddr(text);
    } catch {
      continue;
    }
    const host = ipOf(ma);
    if (host !== null) {
      const loopback = host.startsWith('127.') || host === '::1';
      if (loopback && !askerLoopback) continue;
      if (!loopback && isPrivateHost(host) && !askerPrivate) continue;
    }
    out.push(text);
    if (out.length === EXCHANGE_ADDRS) break;
  }
  return out;
}

/** Shuffle in place (Fisher–Yates): askers of one node get different samples, so their dials spread. */
function shuffle<T>(xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

export class PeerExchange {
  constructor(private readonly d: PeerExchangeDeps) {}

  /** The peers to offer `asker`: connected ones first, then those seen in the last RECENT_MS, each group shuffled. */
  offer(asker: string, askerAddr: Multiaddr, nowMs: number): ExchangedPeer[] {
    const self = this.d.selfId();
    const connected = new Set(
      this.d
        .connections()
        .filter((c) => c.status === 'open')
        .map((c) => c.remotePeer.toString()),
    );
    const live: ExchangedPeer[] = [];
    const recent: ExchangedPeer[] = [];
    for (const p of this.d.known.list()) {
      if (p.peerId === self || p.peerId === asker || p.failures > 0) continue;
      const isLive = connected.has(p.peerId);
      if (!isLive && nowMs - p.lastSeen > RECENT_MS) continue;
      const addrs = dialableFor(askerAddr, p.addrs);
      if (addrs.length === 0) continue;
      (isLive ? live : recent).push({ peerId: p.peerId, addrs });
    }
    return [...shuffle(live), ...shuffle(recent)].slice(0, EXCHANGE_PEERS);
  }

  /** Whether `conn` is past this node's maximum: at least `max` other peers were connected before it opened. */
  isFull(conn: Connection): boolean {
    const asker = conn.remotePeer.toString();
    const older = new Set<string>();
    for (const c of this.d.connections()) {
      const peer = c.remotePeer.toString();
      if (c.status === 'open' && peer !== asker && c.timeline.open <= conn.timeline.open) older.add(peer);
    }
    return older.size >= this.d.max;
  }

  /** Serve one inbound /svc/peers/1 stream: read the request, answer the list (or a refusal), close. */
  async serve(stream: Stream, conn: Connection): Promise<void> {
    const asker = conn.remotePeer.toString();
    let answer: ExchangeAnswer | z.infer<typeof exchangeRefusalSchema>;
    try {
      const request = await readRequestFrame(stream, MAX_REQUEST_BYTES, EXCHANGE_WITHIN_MS);
      if ('refused' in request) throw new ExchangeRefused('SVC_BAD_REQUEST', request.refused.message);
      const parsed = exchangeRequestSchema.safeParse(request.value);
      if (!parsed.success) throw new ExchangeRefused('SVC_BAD_REQUEST', `malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      const now = this.d.nowSvcond();
      checkExchange(this.d.secret, asker, now, parsed.data);
      answer = exchangeAnswer(this.d.secret, this.d.selfId(), now, this.isFull(conn), this.offer(asker, conn.remoteAddr, Date.now()));
    } catch (err) {
      if (!(err instanceof ExchangeRefused)) {
        this.d.log.debug({ peer: asker, err: String(err) }, 'peer exchange stream failed');
        stream.abort(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      answer = { v: 1, refused: { code: err.code, message: err.message } };
    }
    await answerFrame(stream, answer);
  }

  /**
   * Ask the peer of a new connection for the peers it knows. Learnt addresses go to `learnt`; a full peer to `full`.
   * Resolves to what was learnt (empty when the peer refused, does not speak the protocol, or the stream failed).
   */
  async ask(conn: Connection): Promise<ExchangeAnswer | null> {
    const peer = conn.remotePeer.toString();
    let stream: Stream;
    try {
      stream = await conn.newStream(PEER_EXCHANGE_PROTOCOL, { signal: AbortSignal.timeout(EXCHANGE_WITHIN_MS), runOnLimitedConnection: true });
    } catch (err) {
      this.d.log.debug({ peer, err: String(err) }, 'peer exchange: no stream');
      return null;
    }
    let raw: unknown;
    try {
      await writeFrame(stream, exchangeRequest(this.d.secret, this.d.selfId(), this.d.nowSvcond()));
      raw = await withTimeout(readFrame(stream.source, MAX_ANSWER_BYTES), stream);
      void stream.close().catch(() => undefined);
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      this.d.log.debug({ peer, err: String(err) }, 'peer exchange: no answer');
      return null;
    }
    const parsed = exchangeAnswerSchema.safeParse(raw);
    if (!parsed.success) {
      const refusal = exchangeRefusalSchema.safeParse(raw);
      this.d.log.debug({ peer, refused: refusal.success ? refusal.data.refused : 'malformed answer' }, 'peer exchange: refused');
      return null;
    }
    try {
      checkExchange(this.d.secret, peer, this.d.nowSvcond(), parsed.data);
    } catch (err) {
      this.d.log.debug({ peer, err: String(err) }, 'peer exchange: answer not from a mesh member');
      return null;
    }
    const self = this.d.selfId();
    const kept: ExchangedPeer[] = [];
    for (const p of parsed.data.peers) {
      if (p.peerId === self || p.peerId === peer || !isPeerId(p.peerId)) continue;
      const addrs = p.addrs.filter(isMultiaddr);
      if (addrs.length > 0) kept.push({ peerId: p.peerId, addrs });
    }
    if (kept.length > 0) this.d.learnt(kept, peer);
    if (parsed.data.full) this.d.full(peer, conn);
    return parsed.data;
  }
}

function isPeerId(text: string): boolean {
  try {
    peerIdFromString(text);
    return true;
  } catch {
    return false;
  }
}

/** A stored-address-shaped multiaddr: parseable, without a /p2p/<id> suffix of its own. */
function isMultiaddr(text: string): boolean {
  try {
    return multiaddr(text).getPeerId() === null;
  } catch {
    return false;
  }
}

/** Abort the stream when the frame does not arrive in time (a silent peer does not hold the stream open). */
async function withTimeout<T>(p: Promise<T>, stream: Stream): Promise<T> {
  const timer = setTimeout(() => stream.abort(new Error('no frame in time')), EXCHANGE_WITHIN_MS);
  try {
    return await p;
  } finally {
    clearTimeout(timer);
  }
}
