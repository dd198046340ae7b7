// The libp2p entrance of this node's API: the /svc/http/1 stream protocol (mesh/peer-http.ts). Another mesh node that
// cannot reach this node's URL (behind NAT, only its libp2p host reachable) sends the request it would have sent there.
// The request must carry the mesh handshake for the stream's (noise-authenticated) remote peer at a tick within the
// mesh's skew; it then runs through this node's own HTTP app over loopback (the self-API, self-request.ts), so auth,
// limits, forwarding rules and part-7 errors are the app's own. A refused request is answered with a part-7 body too.
// The asking node resetting the stream before the answer (its caller left) cuts the loopback request: the route sees
// its client leave (client-gone.ts) and stops its work, as for a caller at this node's URL.
// Its long-lived sibling, /svc/stream/1 (mesh/peer-stream.ts), carries a WebSocket or an SSE stream the same way.
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Stream } from '@libp2p/interface';
import type { ErrorCode } from '../kernel/errors.js';
import { request as httpRequest } from 'node:http';
import { WebSocket } from 'ws';
import { answerFrame, FrameError, FrameQueue, readFrames, readHeldRequest } from '../mesh/frame.js';
import { MAX_STREAM_REQUEST_BYTES, peerStreamRequestSchema, streamFrame, type PeerStreamFrame, type PeerStreamHead } from '../mesh/peer-stream.js';
import { MAX_PEER_REQUEST_BYTES, peerHttpRequestSchema, type PeerHttpAnswer, type PeerHttpRequest } from '../mesh/peer-http.js';
import { MAX_SKEW_TICKS } from '../mesh/validator.js';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import { errorBody } from './errors.js';
import type { SelfApi, SelfTarget } from './self-request.js';
import { traceIdSource } from './trace.js';

/** How long a peer has to send its request once the stream is open. */
const REQUEST_READ_MS = 10_000;
/** Headers that belong to one hop (the loopback request and the stream set their own). */
const HOP_HEADERS = new Set(['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);
/** Headers an answer carries back, at most (the schema's bound). */
const ANSWER_HEADERS_MAX = 32;

export interface PeerEntranceDeps {
  selfApi: SelfApi;
  /** Where this node's HTTP server listens (loopback reaches it). */
  target: () => { host: string; port: number };
  meshSecret: string | null;
  nowSvcond: () => number;
  logger: Logger;
}

/** Why a signed request of `remotePeer` is refused (its handshake, its tick), or null. */
function handshakeRefusal(
  secret: string,
  remotePeer: string,
  req: { svcond: number; handshake: string },
  now: number,
): { code: 'INVALID_HANDSHAKE' | 'STALE_HANDSHAKE'; message: string } | null {
  const { handshake, ...rest } = req;
  const expected = Buffer.from(handshakeFor(secret, remotePeer, req.svcond, bodyDigest(rest)), 'utf8');
  const given = Buffer.from(handshake, 'utf8');
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    return { code: 'INVALID_HANDSHAKE', message: 'the handshake does not match this request from this peer' };
  if (Math.abs(req.svcond - now) > MAX_SKEW_TICKS) return { code: 'STALE_HANDSHAKE', message: 'the request tick is too far from now' };
  return null;
}

/** A request's headers without the ones that belong to one hop. */
function passedHeaders(given: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(given)) if (!HOP_HEADERS.has(k)) headers[k] = v;
  return headers;
}

/** A part-7 refusal as the answer (or head) of a request that came over libp2p: the same shape on both protocols. */
function refusalAnswer(traceId: string, status: number, code: ErrorCode, message: string): PeerHttpAnswer & PeerStreamHead {
  return {
    v: 1,
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-trace-id': traceId },
    body: JSON.stringify(errorBody(traceId, status, code, message)),
  };
}

export function peerEntrance(deps: PeerEntranceDeps): (stream: Stream, remotePeer: string) => Promise<void> {
  const traceId = traceIdSource();
  const refusal = (status: number, code: ErrorCode, message: string): PeerHttpAnswer => refusalAnswer(traceId(), status, code, message);

  const answerTo = async (raw: unknown, remotePeer: string, left: AbortSignal): Promise<PeerHttpAnswer> => {
    const secret = deps.meshSecret;
    if (secret === null) return refusal(503, 'MESH_DISABLED', 'this node has no mesh secret configured');
    const parsed = peerHttpRequestSchema.safeParse(raw);
    if (!parsed.success) return refusal(400, 'SVC_BAD_REQUEST', `malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const req: PeerHttpRequest = parsed.data;
    const bad = handshakeRefusal(secret, remotePeer, req, deps.nowSvcond());
    if (bad) return refusal(401, bad.code, bad.message);
    const headers = passedHeaders(req.headers);
    const { host, port } = deps.target();
    const authorization = headers.authorization ?? null;
    // The caller's address is the loopback one unless the request states it under the mesh secret (a forward does).
    const target: SelfTarget = { host, port, authorization, ip: '127.0.0.1' };
    const answer = await deps.selfApi.send(target, { method: req.method, path: req.path, rawBody: req.body, headers }, left);
    const kept = Object.entries(answer.headers).filter(([k]) => !HOP_HEADERS.has(k) && k !== 'date' && k.length <= 64);
    return { v: 1, status: answer.status, headers: Object.fromEntries(kept.slice(0, ANSWER_HEADERS_MAX)), body: answer.text };
  };

  return async (stream, remotePeer) => {
    let answer: PeerHttpAnswer;
    try {
      const request = await readHeldRequest(stream, MAX_PEER_REQUEST_BYTES, REQUEST_READ_MS);
      answer = 'refused' in request ? refusal(400, 'SVC_BAD_REQUEST', request.refused.message) : await answerTo(request.value, remotePeer, request.left);
    } catch (err) {
      // The stream failed (aborted, reset, the deadline) or the loopback request did (cut when the stream went away):
      // logged, the peer sees the stream end.
      deps.logger.debug({ err: String(err), peer: remotePeer }, 'peer HTTP stream failed');
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    const undelivered = await answerFrame(stream, answer);
    if (undelivered) deps.logger.debug({ err: String(undelivered), peer: remotePeer }, 'peer HTTP answer not delivered');
  };
}

export interface PeerStreamEntranceDeps {
  /** Where this node's HTTP server listens (loopback reaches it). */
  target: () => { host: string; port: number };
  meshSecret: string | null;
  nowSvcond: () => number;
  /** Bytes queued toward the relaying peer past which the stream is dropped (the hub's bound). */
  maxQueuedBytes: number;
  logger: Logger;
}

/** Headers of a refusal or an SSE head that travel back to the relaying node. */
const HEAD_HEADERS = ['content-type', 'x-trace-id', 'retry-after', 'x-svc-served-by', 'cache-control'];
/** Most of a refusal's body relayed. */
const REFUSAL_BODY_MAX = 64 * 1024;
/** How long the loopback upgrade or GET may take to be answered. */
const OPEN_WITHIN_MS = 10_000;

function headHeaders(given: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of HEAD_HEADERS) {
    const v = given[h];
    if (typeof v === 'string') out[h] = v;
  }
  return out;
}

/** A close code that may be sent in a close frame (RFC 6455 §7.4), else 1011. */
function closeCodeOf(code: number): number {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1011;
}

/**
 * The home's side of /svc/stream/1 (mesh/peer-stream.ts): a relaying node's WebSocket of /ws/stream or SSE GET, run
 * against this node's own server over loopback (so auth, limits and refusals are its own), its head and messages sent
 * back as frames. The relaying node ending the stream (its client left) ends the loopback one.
 */
export function peerStreamEntrance(deps: PeerStreamEntranceDeps): (stream: Stream, remotePeer: string) => Promise<void> {
  const traceId = traceIdSource();
  const refusalHead = (status: number, code: ErrorCode, message: string): PeerStreamHead => refusalAnswer(traceId(), status, code, message);

  return async (stream, remotePeer) => {
    const out = new FrameQueue();
    let finish: () => void = () => undefined;
    let finished = false;
    const end = () => {
      if (finished) return;
      finished = true;
      out.end();
      finish();
    };
    // A write that fails (the stream gone) lets the loopback side go. The sink reads a FrameQueue, which ends only on
    // end(): a reset by the relaying node is seen on the incoming side (below), not here.
    void stream.sink(out).then(
      () => void stream.close().catch(() => undefined),
      (err: unknown) => {
        deps.logger.debug({ err: String(err), peer: remotePeer }, 'peer stream ended by the relaying node');
        end();
      },
    );
    const send = (frame: PeerStreamHead | PeerStreamFrame): boolean => {
      out.push(streamFrame(frame));
      if (out.bytes <= deps.maxQueuedBytes) return true;
      // The relaying node does not take what is sent: dropped, as a slow subscriber is.
      deps.logger.debug({ peer: remotePeer, reason: 'slow consumer' }, 'peer stream dropped');
      stream.abort(new Error('slow consumer'));
      end();
      return false;
    };
    const refuse = (status: number, code: ErrorCode, message: string) => {
      send(refusalHead(status, code, message));
      end();
    };
    let raw: unknown;
    const incoming = readFrames(stream.source, MAX_STREAM_REQUEST_BYTES);
    try {
      const timer = setTimeout(() => stream.abort(new Error('request not received in time')), REQUEST_READ_MS);
      try {
        const first = await incoming.next();
        if (first.done) throw new FrameError('the stream ended before a whole frame');
        raw = first.value;
      } finally {
        clearTimeout(timer);
      }
      // The relaying node sends nothing more: the end of its side (or its reset) is its client leaving.
      void (async () => {
        for await (const _ of incoming) void _;
      })().then(end, end);
    } catch (err) {
      if (err instanceof FrameError) refuse(400, 'SVC_BAD_REQUEST', err.message);
      else {
        stream.abort(err instanceof Error ? err : new Error(String(err)));
        end();
      }
      return;
    }
    const secret = deps.meshSecret;
    if (secret === null) return refuse(503, 'MESH_DISABLED', 'this node has no mesh secret configured');
    const parsed = peerStreamRequestSchema.safeParse(raw);
    if (!parsed.success) return refuse(400, 'SVC_BAD_REQUEST', `malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const req = parsed.data;
    const bad = handshakeRefusal(secret, remotePeer, req, deps.nowSvcond());
    if (bad) return refuse(401, bad.code, bad.message);
    const headers = passedHeaders(req.headers);
    for (const h of Object.keys(headers)) if (h.startsWith('sec-websocket-')) delete headers[h];
    const { host, port } = deps.target();
    const base = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    if (req.kind === 'ws') {
      const ws = new WebSocket(`ws://${base}${req.path}`, { headers, perMessageDeflate: false, handshakeTimeout: OPEN_WITHIN_MS });
      finish = () => ws.terminate();
      let open = false;
      ws.on('unexpected-response', (_r, res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          if (text.length < REFUSAL_BODY_MAX) text += d;
        });
        res.on('end', () => {
          send({ v: 1, status: res.statusCode ?? 502, headers: headHeaders(res.headers), body: text });
          end();
        });
      });
      ws.on('open', () => {
        open = true;
        send({ v: 1, status: 101, headers: {}, body: '' });
      });
      ws.on('message', (data: Buffer) => void send({ data: data.toString('utf8') }));
      ws.on('close', (code: number, reason: Buffer) => {
        if (open && !finished) send({ close: closeCodeOf(code), reason: reason.subarray(0, 123).toString('utf8') });
        end();
      });
      ws.on('error', (err) => {
        if (!open && !finished) return refuse(500, 'SVC_INTERNAL_ERROR', `the stream could not be opened here: ${err.message}`);
        end();
      });
      return;
    }
    const get = httpRequest({ host, port, path: req.path, method: 'GET', headers, timeout: OPEN_WITHIN_MS }, (res) => {
      const head = { v: 1 as const, status: res.statusCode ?? 502, headers: headHeaders(res.headers) };
      const streaming = head.status === 200 && (head.headers['content-type'] ?? '').startsWith('text/event-stream');
      get.setTimeout(0);
      res.setEncoding('utf8');
      if (streaming) {
        send({ ...head, body: '' });
        res.on('data', (chunk: string) => void send({ data: chunk }));
      } else {
        let text = '';
        res.on('data', (d: string) => {
          if (text.length < REFUSAL_BODY_MAX) text += d;
        });
        res.on('end', () => send({ ...head, body: text }));
      }
      res.on('close', end);
    });
    finish = () => get.destroy();
    get.on('timeout', () => get.destroy(new Error(`no answer within ${OPEN_WITHIN_MS} ms`)));
    get.on('error', (err) => refuse(500, 'SVC_INTERNAL_ERROR', `the stream could not be opened here: ${err.message}`));
    get.end();
  };
}
