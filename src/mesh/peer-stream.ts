// A node's long-lived answers over libp2p: /svc/stream/1 (docs/protocol.md §17). What /svc/http/1 is for a request,
// this is for an answer that does not end: a WebSocket of /ws/stream, or an SSE stream (the agent stream), relayed by
// another node to the home that serves it when the home's URL does not connect (behind NAT, reached through a relay).
//
// The relaying node sends one request frame; the home answers with a head frame (the status it would answer at its
// URL: 101 for an accepted WebSocket, 200 for an open SSE stream, else its refusal with a part-7 body), then one frame
// per WebSocket message or SSE chunk, and for a WebSocket a last frame with its close code. The relaying node keeps
// its writing half open while its client stays; either side ending the stream ends the relayed one. Frames are those
// of mesh/frame.ts.
import { z } from 'zod';
import type { Stream } from '@libp2p/interface';
import { encodeFrame, FrameQueue, readFrames } from './frame.js';
import { bodyDigest, handshakeFor } from './wire.js';
import type { MeshForLinks } from './peer-http.js';

export const PEER_STREAM_PROTOCOL = '/svc/stream/1';
/** A request: a path and headers, no body. */
export const MAX_STREAM_REQUEST_BYTES = 64 * 1024;
/** One head or message frame: a refusal's body, a sealed tick, an SSE chunk (JSON-escaped). */
export const MAX_STREAM_FRAME_BYTES = 2 * 1024 * 1024;

const headersSchema = z
  .record(z.string().regex(/^[a-z0-9-]{1,64}$/), z.string().max(16 * 1024))
  .refine((h) => Object.keys(h).length <= 32, 'at most 32 headers');

export const peerStreamRequestSchema = z
  .object({
    v: z.literal(1),
    /** 'ws': a WebSocket upgrade of `path`; 'sse': a GET of `path` whose answer is an event stream. */
    kind: z.enum(['ws', 'sse']),
    path: z
      .string()
      .regex(/^\/(api|ws)\//)
      .max(8192),
    headers: headersSchema,
    svcond: z.number().int().min(0),
    /** 'v1=' + HMAC(mesh secret, `${sender}|${svcond}|${digest of the request without the handshake}`). */
    handshake: z.string().min(1).max(128),
  })
  .strict();
export type PeerStreamRequest = z.infer<typeof peerStreamRequestSchema>;

export const peerStreamHeadSchema = z
  .object({ v: z.literal(1), status: z.number().int().min(100).max(599), headers: headersSchema, body: z.string() })
  .strict();
export type PeerStreamHead = z.infer<typeof peerStreamHeadSchema>;

/** A frame after the head: a message (a WebSocket text message, an SSE chunk), or a WebSocket's close. */
export const peerStreamFrameSchema = z.union([
  z.object({ data: z.string() }).strict(),
  z.object({ close: z.number().int().min(1000).max(4999), reason: z.string().max(123) }).strict(),
]);
export type PeerStreamFrame = z.infer<typeof peerStreamFrameSchema>;

/** An open relayed stream: the home's head, then its frames until the home ends the stream. */
export interface PeerStreamSession {
  head: PeerStreamHead;
  frames: AsyncIterable<PeerStreamFrame>;
  /** End it from this side (the client left). */
  close(): void;
}

export interface PeerStreamDeps {
  openStream: (peer: string, protocol: string, signal: AbortSignal) => Promise<Stream>;
  selfId: () => string;
  secret: string;
  nowSvcond: () => number;
}

export type OpenPeerStream = (peer: string, req: Pick<PeerStreamRequest, 'kind' | 'path' | 'headers'>, signal: AbortSignal) => Promise<PeerStreamSession>;

/** The relaying side: open /svc/stream/1 to `peer`, send the request and wait for the head (within `signal`). */
export function peerStreamOverMesh(deps: PeerStreamDeps): OpenPeerStream {
  return async (peer, req, signal) => {
    const unsigned = { v: 1 as const, kind: req.kind, path: req.path, headers: req.headers, svcond: deps.nowSvcond() };
    const request: PeerStreamRequest = { ...unsigned, handshake: handshakeFor(deps.secret, deps.selfId(), unsigned.svcond, bodyDigest(unsigned)) };
    const stream = await deps.openStream(peer, PEER_STREAM_PROTOCOL, signal);
    const onAbort = () => stream.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const incoming = readFrames(stream.source, MAX_STREAM_FRAME_BYTES);
    // This side sends nothing after its request, and keeps its writing half open until its client leaves: the home
    // reads the end of it as the client's.
    const out = new FrameQueue();
    out.push(encodeFrame(request));
    void stream.sink(out).catch(() => undefined);
    let head: PeerStreamHead;
    try {
      const first = await incoming.next();
      if (first.done) throw new Error('the home ended the stream before its answer');
      const parsed = peerStreamHeadSchema.safeParse(first.value);
      if (!parsed.success) throw new Error(`malformed answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      head = parsed.data;
    } catch (err) {
      stream.abort(err instanceof Error ? err : new Error(String(err)));
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    async function* frames(): AsyncGenerator<PeerStreamFrame> {
      for await (const raw of incoming) {
        const parsed = peerStreamFrameSchema.safeParse(raw);
        if (!parsed.success) throw new Error('malformed frame from the home');
        yield parsed.data;
        if ('close' in parsed.data) return;
      }
    }
    return {
      head,
      frames: frames(),
      close: () => {
        out.end();
        stream.abort(new Error('the client left'));
      },
    };
  };
}

/** One frame of the home's side, encoded. */
export function streamFrame(value: PeerStreamHead | PeerStreamFrame): Uint8Array {
  return encodeFrame(value);
}

/** The libp2p way to the peers' long-lived answers when the mesh runs (a mesh secret is set), else null. */
export function meshPeerStreams(mesh: MeshForLinks, secret: string | null): OpenPeerStream | null {
  if (!mesh.enabled || secret === null) return null;
  return peerStreamOverMesh({
    openStream: (p, proto, signal) => mesh.openStream(p, proto, signal),
    selfId: () => mesh.nodeId,
    secret,
    nowSvcond: () => mesh.nowSvcond(),
  });
}
