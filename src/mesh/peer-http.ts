// How one node sends an HTTP request to another node's API (a forward to a home, a direct consensus or transfer
// delivery): at the peer's URL from its tick events first, and over libp2p when no URL is known or the URL does not
// take the connection (a home behind NAT is reachable only at its libp2p host, maybe through a relay).
//
// The libp2p way is the stream protocol /svc/http/1: one request and one answer per stream, each a frame of
// mesh/frame.ts. The request is {v, method, path, headers, body, svcond, handshake}, the handshake the mesh one
// (mesh/wire.ts handshakeFor: an HMAC with the mesh secret over sender, tick and the digest of the rest), so only a
// mesh member may use a peer's API this way; noise authenticates the stream, so the remote peer id is the sender. The
// answer is {v, status, headers, body}. The receiving node runs the request through its own HTTP app (http/
// peer-entrance.ts): the same auth, limits and part-7 errors as a request at its URL.
//
// The asking node keeps its writing half open until it has the answer, and resets the stream when it stops waiting
// (its caller left, its time ran out): the receiving node reads the reset as its client leaving (http/peer-entrance.ts).
//
// Only a failure to connect falls through to libp2p: a request that reached the URL and then failed (reset, timeout)
// may have been applied there, so it is not sent a second way. What was tried travels on PeerUnreachable.
import { z } from 'zod';
import type { Stream } from '@libp2p/interface';
import { encodeFrame, FrameQueue, readFrame } from './frame.js';
import { bodyDigest, handshakeFor } from './wire.js';

export const PEER_HTTP_PROTOCOL = '/svc/http/1';
/** A request body is at most the 1 MiB the HTTP entrance takes; its envelope (path, headers) fits in the rest. */
export const MAX_PEER_REQUEST_BYTES = 2 * 1024 * 1024;
/** An answer carries at most the 8 MiB the self-API relays (self-request.ts), JSON-escaped (each byte at most 2). */
export const MAX_PEER_ANSWER_BYTES = 17 * 1024 * 1024;
/** Headers a request or an answer carries, and the length of one value (an Authorization or a voucher fits). */
const MAX_HEADERS = 32;
const MAX_HEADER_VALUE = 16 * 1024;

const headersSchema = z
  .record(z.string().regex(/^[a-z0-9-]{1,64}$/), z.string().max(MAX_HEADER_VALUE))
  .refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`);

export const peerHttpRequestSchema = z
  .object({
    v: z.literal(1),
    method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'QUERY']),
    /** A path of this node's API, with its query string. */
    path: z
      .string()
      .regex(/^\/api\//)
      .max(8192),
    headers: headersSchema,
    /** The request body as text ('' for none). */
    body: z.string(),
    svcond: z.number().int().min(0),
    /** 'v1=' + HMAC(mesh secret, `${sender}|${svcond}|${digest of the request without the handshake}`). */
    handshake: z.string().min(1).max(128),
  })
  .strict();
export type PeerHttpRequest = z.infer<typeof peerHttpRequestSchema>;

export const peerHttpAnswerSchema = z
  .object({ v: z.literal(1), status: z.number().int().min(100).max(599), headers: headersSchema, body: z.string() })
  .strict();
export type PeerHttpAnswer = z.infer<typeof peerHttpAnswerSchema>;

/** A request to a peer's API. */
export interface PeerRequest {
  method: PeerHttpRequest['method'];
  path: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** '' for none. */
  body: string;
}

export interface PeerAnswer {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  text: string;
  /** How it was reached. */
  via: 'http' | 'libp2p';
}

/** Neither way reached the peer: `tried` names each attempt and why it failed. */
export class PeerUnreachable extends Error {
  constructor(
    readonly peer: string,
    readonly tried: string[],
  ) {
    super(`node ${peer} could not be reached (${tried.join('; ')})`);
  }
}

/** The libp2p way to a peer; the stream must open within `openWithinMs` (a stopped peer never finishes its handshake). */
export type OverMesh = (peer: string, req: PeerRequest, signal: AbortSignal, openWithinMs?: number) => Promise<PeerAnswer>;

/** How long a stream to a peer may take to open (dial, noise, yamux, protocol) unless the caller says. */
const OPEN_WITHIN_MS = 5_000;

export interface PeerHttpDeps {
  openStream: (peer: string, protocol: string, signal: AbortSignal) => Promise<Stream>;
  selfId: () => string;
  secret: string | null;
  nowSvcond: () => number;
}

/** No stream to the peer was opened: nothing of the request was sent (a write there was not applied). */
export class PeerStreamNotOpened extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PeerStreamNotOpened';
  }
}

/** The libp2p way: one /svc/http/1 stream to `peer` (dialled through the peer store when there is no connection). */
export function peerHttpOverMesh(deps: PeerHttpDeps): OverMesh {
  return async (peer, req, signal, openWithinMs = OPEN_WITHIN_MS) => {
    const secret = deps.secret;
    if (secret === null) throw new Error('this node has no mesh secret');
    const unsigned = { v: 1 as const, method: req.method, path: req.path, headers: req.headers, body: req.body, svcond: deps.nowSvcond() };
    const request: PeerHttpRequest = { ...unsigned, handshake: handshakeFor(secret, deps.selfId(), unsigned.svcond, bodyDigest(unsigned)) };
    let stream: Stream;
    try {
      stream = await deps.openStream(peer, PEER_HTTP_PROTOCOL, AbortSignal.any([signal, AbortSignal.timeout(openWithinMs)]));
    } catch (err) {
      throw new PeerStreamNotOpened(err instanceof Error ? err.message : String(err));
    }
    // The writing half stays open while the answer is awaited: a reset then is this side giving up, which the home
    // tells apart from the end of the request (an earlier node ends its writing half with the request).
    const out = new FrameQueue();
    const onAbort = () => {
      out.end();
      stream.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    let raw: unknown;
    try {
      out.push(encodeFrame(request));
      // A failed write aborts the stream, and the read below fails with it.
      void stream.sink(out).catch(() => undefined);
      raw = await readFrame(stream.source, MAX_PEER_ANSWER_BYTES);
    } catch (err) {
      out.end();
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    out.end();
    void stream.close().catch(() => undefined);
    const parsed = peerHttpAnswerSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`malformed answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return { status: parsed.data.status, headers: parsed.data.headers, text: parsed.data.body, via: 'libp2p' };
  };
}

/** Error codes of a connection that was never made (nothing was sent): safe to try the other way. */
export const CONNECT_FAILURES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Did fetch fail before it connected? (undici wraps the socket error as `cause`, several in an AggregateError.) */
export function isConnectFailure(err: unknown): boolean {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const errors = cause instanceof AggregateError ? cause.errors : [cause];
  return errors.length > 0 && errors.every((e) => CONNECT_FAILURES.has(String((e as { code?: unknown } | null)?.code)));
}

/** Why a fetch failed, in a few words (its socket error's code when it has one). */
export function fetchFailure(err: unknown): string {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const first = cause instanceof AggregateError ? cause.errors[0] : cause;
  const code = (first as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

/** What of the mesh service the peer links use (mesh/service.ts). */
export interface MeshForLinks {
  readonly enabled: boolean;
  readonly nodeId: string;
  peerUrl(peer: string): string | null;
  openStream(peer: string, protocol: string, signal: AbortSignal): Promise<Stream>;
  nowSvcond(): number;
}

/** The ways to the peers of `mesh`: their URLs, and libp2p when the mesh runs (a mesh secret is set). */
export function meshPeerLinks(mesh: MeshForLinks, secret: string | null): PeerLinks {
  return {
    peerUrl: (peer) => mesh.peerUrl(peer),
    overMesh:
      mesh.enabled && secret !== null
        ? peerHttpOverMesh({
            openStream: (p, proto, signal) => mesh.openStream(p, proto, signal),
            selfId: () => mesh.nodeId,
            secret,
            nowSvcond: () => mesh.nowSvcond(),
          })
        : null,
  };
}

export interface PeerLinks {
  /** The peer's HTTP URL from its tick events (null: not known). */
  peerUrl: (peer: string) => string | null;
  /** The libp2p way, or null when the mesh does not run. */
  overMesh: OverMesh | null;
}

/**
 * Send `req` to `peer`: at its URL (or `urlHint` when the peer table has none), then over libp2p when there is no URL
 * or the URL does not connect. Resolves to the peer's answer, whatever its status; throws PeerUnreachable.
 */
export async function requestPeer(links: PeerLinks, peer: string, req: PeerRequest, signal: AbortSignal, urlHint: string | null = null): Promise<PeerAnswer> {
  const tried: string[] = [];
  const url = links.peerUrl(peer) ?? urlHint;
  if (url) {
    try {
      const res = await fetch(url + req.path, { method: req.method, headers: req.headers, body: req.body === '' ? undefined : req.body, signal });
      const text = await res.text();
      return { status: res.status, headers: Object.fromEntries(res.headers), text, via: 'http' };
    } catch (err) {
      tried.push(`HTTP at ${url}: ${signal.aborted ? 'no answer in time' : fetchFailure(err)}`);
      if (signal.aborted || !isConnectFailure(err)) throw new PeerUnreachable(peer, tried);
    }
  } else tried.push('HTTP: no URL is known for it');
  if (!links.overMesh) throw new PeerUnreachable(peer, [...tried, 'libp2p: the mesh is not running']);
  try {
    return await links.overMesh(peer, req, signal);
  } catch (err) {
    const reason = signal.aborted ? 'no answer in time' : err instanceof Error ? err.message : String(err);
    throw new PeerUnreachable(peer, [...tried, `libp2p ${PEER_HTTP_PROTOCOL}: ${reason}`]);
  }
}
