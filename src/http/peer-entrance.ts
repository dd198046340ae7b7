// The libp2p entrance of this node's API: the /svc/http/1 stream protocol (mesh/peer-http.ts). Another mesh node that
// cannot reach this node's URL (behind NAT, only its libp2p host reachable) sends the request it would have sent there.
// The request must carry the mesh handshake for the stream's (noise-authenticated) remote peer at a tick within the
// mesh's skew; it then runs through this node's own HTTP app over loopback (the self-API, self-request.ts), so auth,
// limits, forwarding rules and part-7 errors are the app's own. A refused request is answered with a part-7 body too.
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Stream } from '@libp2p/interface';
import type { ErrorCode } from '../kernel/errors.js';
import { FrameError, readFrame, writeFrame } from '../mesh/frame.js';
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

export function peerEntrance(deps: PeerEntranceDeps): (stream: Stream, remotePeer: string) => Promise<void> {
  const traceId = traceIdSource();
  const refusal = (status: number, code: ErrorCode, message: string): PeerHttpAnswer => {
    const id = traceId();
    return {
      v: 1,
      status,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-trace-id': id },
      body: JSON.stringify(errorBody(id, status, code, message)),
    };
  };

  const answerTo = async (raw: unknown, remotePeer: string): Promise<PeerHttpAnswer> => {
    const secret = deps.meshSecret;
    if (secret === null) return refusal(503, 'MESH_DISABLED', 'this node has no mesh secret configured');
    const parsed = peerHttpRequestSchema.safeParse(raw);
    if (!parsed.success) return refusal(400, 'SVC_BAD_REQUEST', `malformed request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const req: PeerHttpRequest = parsed.data;
    const { handshake, ...rest } = req;
    const expected = Buffer.from(handshakeFor(secret, remotePeer, req.svcond, bodyDigest(rest)), 'utf8');
    const given = Buffer.from(handshake, 'utf8');
    if (expected.length !== given.length || !timingSafeEqual(expected, given))
      return refusal(401, 'INVALID_HANDSHAKE', 'the handshake does not match this request from this peer');
    if (Math.abs(req.svcond - deps.nowSvcond()) > MAX_SKEW_TICKS) return refusal(401, 'STALE_HANDSHAKE', 'the request tick is too far from now');
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_HEADERS.has(k)) headers[k] = v;
    const { host, port } = deps.target();
    const authorization = headers.authorization ?? null;
    // The caller's address is the loopback one unless the request states it under the mesh secret (a forward does).
    const target: SelfTarget = { host, port, authorization, ip: '127.0.0.1' };
    const answer = await deps.selfApi.send(target, { method: req.method, path: req.path, rawBody: req.body, headers });
    const kept = Object.entries(answer.headers).filter(([k]) => !HOP_HEADERS.has(k) && k !== 'date' && k.length <= 64);
    return { v: 1, status: answer.status, headers: Object.fromEntries(kept.slice(0, ANSWER_HEADERS_MAX)), body: answer.text };
  };

  return async (stream, remotePeer) => {
    let answer: PeerHttpAnswer;
    try {
      const timer = setTimeout(() => stream.abort(new Error('request not received in time')), REQUEST_READ_MS);
      let raw: unknown;
      try {
        raw = await readFrame(stream.source, MAX_PEER_REQUEST_BYTES);
      } finally {
        clearTimeout(timer);
      }
      answer = await answerTo(raw, remotePeer);
    } catch (err) {
      if (!(err instanceof FrameError)) {
        // The stream failed (aborted, reset) or the loopback request did: logged, the peer sees the stream end.
        deps.logger.debug({ err: String(err), peer: remotePeer }, 'peer HTTP stream failed');
        stream.abort(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      answer = refusal(400, 'SVC_BAD_REQUEST', err.message);
    }
    try {
      await writeFrame(stream, answer);
      await stream.close();
    } catch (err) {
      deps.logger.debug({ err: String(err), peer: remotePeer }, 'peer HTTP answer not delivered');
      stream.abort(err instanceof Error ? err : new Error(String(err)));
    }
  };
}
