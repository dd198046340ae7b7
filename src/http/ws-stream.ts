// WS /ws/stream?channel=<id> (spec 4.5) on the node's HTTP server, with `ws`: each sealed tick of the channel is pushed
// as a text frame holding the sealed envelope, after its batch is durable (streams/channels.ts publishes only then).
// Auth as the channel's routes: the owner's key or the channel key (Authorization: Bearer, or ?key=), or a pull link's
// ?sig=. The first frame is {"subscribed": <channel id>, "tick_count": n}. A client whose unsent bytes pass the hub's
// bound is dropped (streams/hub.ts); every client is pinged each heartbeat and dropped when it missed the last pong.
//
// At any node: a channel whose id names another node (streams/channel-id.ts) is relayed there, as its HTTP routes are
// (http/forward.ts). This node opens a WebSocket to the home's /ws/stream with the same query and Authorization and
// `x-svc-forwarded-by` (a relayed upgrade is never relayed again), and upgrades the client only once the home has
// accepted: the home authenticates, and its refusal (status and part-7 body) is the client's, with X-Svc-Served-By.
// Frames are copied as they come. Backpressure end to end: each hop keeps the hub's bound. A relayed client whose
// unsent bytes pass it is dropped at the relay (which closes its upstream, so the home lets go of it too), and a relay
// that itself falls behind is dropped by the home as any slow subscriber (then the relay closes its client). The relay
// never stops reading from the home: a paused socket would not see the home close it. Either side closing closes the
// other (with the same code when it may be sent in a close frame). A home whose URL is unknown or does not take the
// connection (behind NAT) is reached over libp2p instead (/svc/stream/1, mesh/peer-stream.ts), the same way; when
// nothing reaches it, the upgrade is accepted and closed with 1013 and a reason naming SVC_HOME_UNREACHABLE.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { WebSocket, WebSocketServer } from 'ws';
import type { Logger } from 'pino';
import { ServiceError } from '../kernel/errors.js';
import type { IdentityService } from '../identity/service.js';
import { stillOpen, type StreamService, type ChannelRecord } from '../streams/channels.js';
import { HUB_DEFAULTS, type Subscriber } from '../streams/hub.js';
import { errorBody } from './errors.js';
import { traceIdSource } from './trace.js';
import { keyFrom, noKeyError } from './auth.js';
import { homeOfChannel } from '../streams/channel-id.js';
import { FORWARDED_HEADER, SERVED_BY_HEADER } from './forward.js';
import { addressKey } from './caller-address.js';
import { FORWARDED_FOR_HEADER, forwardedForValue, statedIp } from './forwarded-address.js';
import { STREAM_RETRY_SECONDS, type StreamSlots } from './stream-slots.js';
import { CONNECT_FAILURES } from '../mesh/peer-http.js';
import { PEER_STREAM_PROTOCOL, type OpenPeerStream } from '../mesh/peer-stream.js';

export const WS_STREAM_PATH = '/ws/stream';
export const HEARTBEAT_MS = 30_000;
/** How long the home has to accept a relayed upgrade. */
export const RELAY_OPEN_TIMEOUT_MS = 10_000;

export interface StreamSocketDeps {
  /** Unsent bytes past which a relayed client is dropped (the hub's bound, HUB_DEFAULTS.maxBufferedBytes). */
  relayMaxBufferedBytes?: number;
  streams: StreamService;
  /** This node's id, and a peer's HTTP URL when known: a channel held by another node is named with its URL. */
  nodeId: () => string;
  peerUrl: (nodeId: string) => string | null;
  identity: IdentityService;
  logger: Logger;
  heartbeatMs?: number;
  /**
   * Caps on keyless streams (stream-slots.ts), shared with the pulse SSE: an upgrade without a well-formed key (a pull
   * link's ?sig=, or anything this node relays before the home checks it) takes a slot of its caller's address until
   * its socket closes. Absent: not capped.
   */
  keylessStreams?: StreamSlots;
  /**
   * The libp2p way to a home whose URL is unknown or does not connect (/svc/stream/1, mesh/peer-stream.ts), for a home
   * this node has heard of. Absent: a home is reached only at its URL.
   */
  overMesh?: { open: OpenPeerStream; knows: (nodeId: string) => boolean } | null;
  /** The Retry-After a client that reached no home is told (the forward deadline, in seconds). */
  retryAfterSeconds?: number;
  /** The mesh secret: a relay states its caller's address to the home under it (forwarded-address.ts). */
  meshSecret?: string | null;
  /**
   * Sockets opened with a key (the channel key or its owner's) one identity's channels may hold open here; beyond it
   * 429 until one closes. Absent: KEYED_STREAMS_PER_IDENTITY_DEFAULT.
   */
  keyedPerIdentity?: number;
}

export const KEYED_STREAMS_PER_IDENTITY_DEFAULT = 2048;

/** What ws's handleUpgrade checks (websocket-server.js), refused here first in the part-7 shape (ws answers plain text). */
const WS_KEY = /^[+/0-9A-Za-z]{22}==$/;
function handshakeProblem(req: IncomingMessage): { err: ServiceError; headers: string[] } | null {
  if (req.method !== 'GET')
    return {
      err: new ServiceError(405, 'SVC_METHOD_NOT_ALLOWED', `a WebSocket opens with GET, not ${req.method ?? '?'}`, { allow: ['GET'] }),
      headers: ['Allow: GET'],
    };
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    return { err: new ServiceError(400, 'SVC_BAD_REQUEST', 'the Upgrade header must be "websocket"'), headers: [] };
  const key = req.headers['sec-websocket-key'];
  if (key === undefined || !WS_KEY.test(key))
    return { err: new ServiceError(400, 'SVC_BAD_REQUEST', 'missing or invalid Sec-WebSocket-Key header (16 bytes, base64)'), headers: [] };
  const version = req.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8')
    return {
      err: new ServiceError(400, 'SVC_BAD_REQUEST', 'missing or unsupported Sec-WebSocket-Version header (13 or 8)', { supported_versions: [13, 8] }),
      headers: ['Sec-WebSocket-Version: 13, 8'],
    };
  return null;
}

/** True when the upgrade carries a well-formed key (Authorization: Bearer, or ?key=): then it is not keyless. */
function carriesKey(req: IncomingMessage, url: URL): boolean {
  try {
    return keyFrom(req.headers.authorization, url.searchParams.get('key')) !== null;
  } catch {
    return false;
  }
}

type Alive = WebSocket & { alive?: boolean; stillGood?: () => Promise<boolean> };

/**
 * One unmasked, unfragmented RFC 6455 text frame holding `data` (a server's frames are never masked). A tick's frame is
 * built once and the same bytes written to every subscriber's socket: one write each, instead of ws framing it anew per
 * socket (the send loop to 1,000 sockets 12 % shorter: docs/performance.md, "Push").
 */
export function textFrame(data: Buffer): Buffer {
  const len = data.length;
  const head = len < 126 ? 2 : len < 65_536 ? 4 : 10;
  const out = Buffer.allocUnsafe(head + len);
  out[0] = 0x81;
  if (len < 126) out[1] = len;
  else if (len < 65_536) {
    out[1] = 126;
    out.writeUInt16BE(len, 2);
  } else {
    out[1] = 127;
    out.writeBigUInt64BE(BigInt(len), 2);
  }
  data.copy(out, head);
  return out;
}

function refuse(socket: Duplex, traceId: string, err: ServiceError, extraHeaders: string[] = []): void {
  // As sendError (errors.ts): every 429, and any refusal that says when to come back, carries Retry-After.
  const retry = err.extra.retry_after_seconds;
  const after = typeof retry === 'number' ? [`Retry-After: ${Math.max(1, Math.ceil(retry))}`] : err.status === 429 ? ['Retry-After: 1'] : [];
  answer(socket, err.status, JSON.stringify(errorBody(traceId, err.status, err.code, err.message, err.extra)), [
    `X-Trace-Id: ${traceId}`,
    ...after,
    ...extraHeaders,
  ]);
}

/** An HTTP answer on an upgrade's socket (a refusal), then closed. */
function answer(socket: Duplex, status: number, text: string, headers: string[]): void {
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(text)}`,
      ...headers,
      'Connection: close',
      '',
      text,
    ].join('\r\n'),
  );
}

/** The close reason of a relayed WebSocket whose home could not be reached (at most 123 bytes). */
export function unreachableReason(retryAfterSeconds: number): string {
  return `SVC_HOME_UNREACHABLE: the home node of this stream channel could not be reached; retry after ${retryAfterSeconds} s`;
}

/** A close code that may be sent in a close frame (RFC 6455 §7.4), or undefined. */
function sendableCode(code: number): number | undefined {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : undefined;
}

/** A subscription's channel, and whether the credential it was opened with still holds (checked each heartbeat). */
interface Authorized {
  channel: ChannelRecord;
  stillGood: () => Promise<boolean>;
  /** Opened with a key (counted per identity), not a pull link (counted per address as keyless). */
  keyed: boolean;
}

async function authorize(deps: StreamSocketDeps, req: IncomingMessage, url: URL, asker: string): Promise<Authorized> {
  const id = url.searchParams.get('channel');
  if (!id) throw new ServiceError(400, 'SVC_INVALID_INPUT', 'channel is required', { field: 'channel', reason: 'missing', allowed: 'a stream channel id' });
  // A channel held by another node that could not be relayed (a relayed upgrade, or no mesh): where to open it.
  const home = homeOfChannel(id);
  if (home !== null && home !== deps.nodeId()) {
    const at = deps.peerUrl(home);
    throw new ServiceError(404, 'SVC_NOT_FOUND', `stream channel ${id} is held by node ${home}${at ? `: open the WebSocket at ${at}` : ''}`, {
      channel: id,
      home,
      ws_url: at ? `${at.replace(/^http/, 'ws')}${WS_STREAM_PATH}` : null,
    });
  }
  // A closed channel never ticks again: a subscription to it is refused (stillOpen: 409, as its tick is), not left silent.
  const sig = url.searchParams.get('sig');
  const key = keyFrom(req.headers.authorization, url.searchParams.get('key'));
  if (key === null && sig !== null) {
    const check = deps.streams.checkLink(id, sig);
    if (!check.ok)
      throw new ServiceError(401, 'SVC_INVALID_KEY', `pull link refused: ${check.reason}`, { key_id: null, revoked_at: null, reason: check.reason });
    // A link holds until it expires.
    return { channel: stillOpen(await deps.streams.get(id)), stillGood: async () => deps.streams.checkLink(id, sig).ok, keyed: false };
  }
  if (key === null) throw noKeyError('this route needs an API key, the channel key or a signed link', `${WS_STREAM_PATH}?channel=${id}&key=…`);
  const channel = stillOpen(await deps.streams.get(id));
  // The channel key lives as long as the channel (closing it ends the subscription).
  if (deps.streams.isChannelKey(channel, key)) return { channel, stillGood: async () => true, keyed: true };
  if (key.startsWith('stk_'))
    throw new ServiceError(401, 'SVC_INVALID_KEY', 'this is not the channel key', { key_id: null, revoked_at: null, reason: 'wrong channel key' });
  const rec = await deps.identity.resolveKey(key, asker);
  if (rec.kind === 'zsm_pub' || rec.zid !== channel.owner.zid)
    throw new ServiceError(403, 'SVC_FORBIDDEN', `stream channel ${channel.id} belongs to another identity`);
  // An API key holds until it is revoked or expires.
  return {
    channel,
    stillGood: () =>
      deps.identity.resolveKey(key).then(
        () => true,
        () => false,
      ),
    keyed: true,
  };
}

/** Serve /ws/stream on `server`; close() ends every client. */
export function attachStreamSocket(server: Server, deps: StreamSocketDeps): { close(): void; clients(): number } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  // What ws still refuses itself (a malformed Sec-WebSocket-Protocol …) is answered in the part-7 shape, not its text.
  wss.on('wsClientError', (err: Error, socket: Duplex) => {
    if (socket.writable) refuse(socket, traceId(), new ServiceError(400, 'SVC_BAD_REQUEST', err.message));
    else socket.destroy();
  });
  const traceId = traceIdSource();
  const hub = deps.streams.hub;
  // Keyed sockets open by channel owner: counts of open sockets (a restart closes them), checked and taken in the
  // synchronous turn that upgrades, so parallel upgrades cannot pass the cap; given back when the socket closes.
  const keyedCap = deps.keyedPerIdentity ?? KEYED_STREAMS_PER_IDENTITY_DEFAULT;
  const keyedOpen = new Map<string, number>();
  const takeKeyed = (owner: string): (() => void) => {
    const open = keyedOpen.get(owner) ?? 0;
    if (open >= keyedCap)
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `too many keyed streams open: at most ${keyedCap} on one identity's channels; close one and retry`, {
        limit: keyedCap,
        scope: 'identity',
        stream: 'ws',
        open_streams: open,
        window_seconds: null,
        retry_after_seconds: STREAM_RETRY_SECONDS,
        reset_at: null,
      });
    keyedOpen.set(owner, open + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (keyedOpen.get(owner) ?? 1) - 1;
      if (left > 0) keyedOpen.set(owner, left);
      else keyedOpen.delete(owner);
    };
  };
  // The last tick's frame: a publish hands every subscriber the same Buffer, framed once.
  let framedFrom: Buffer | null = null;
  let framed: Buffer | null = null;
  const frameOf = (data: Buffer): Buffer => {
    if (data !== framedFrom) {
      framed = textFrame(data);
      framedFrom = data;
    }
    return framed!;
  };

  // Nothing may throw out of this listener (an exception there ends the process): whatever escapes is logged and the
  // socket answered 500 or closed.
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      onUpgrade(req, socket, head);
    } catch (err) {
      failed(socket, err);
    }
  });
  /** `answer`: nothing was written on the socket yet (the synchronous part); else the handshake may be done: close it. */
  const failed = (socket: Duplex, err: unknown, answer = true): void => {
    deps.logger.error({ err }, 'WebSocket upgrade failed');
    if (answer && socket.writable) refuse(socket, traceId(), new ServiceError(500, 'SVC_INTERNAL_ERROR', 'internal error'));
    else socket.destroy();
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const id = traceId();
    socket.on('error', () => socket.destroy());
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://local');
    } catch {
      refuse(socket, id, new ServiceError(400, 'SVC_BAD_REQUEST', 'malformed request target'));
      return;
    }
    if (url.pathname !== WS_STREAM_PATH) {
      refuse(socket, id, new ServiceError(404, 'SVC_NOT_FOUND', `no WebSocket at ${url.pathname}`));
      return;
    }
    // Checked before any work (auth, a relay's upstream): a handshake ws would refuse is refused here, in JSON.
    const bad = handshakeProblem(req);
    if (bad) {
      refuse(socket, id, bad.err, bad.headers);
      return;
    }
    if (deps.keylessStreams && !carriesKey(req, url)) {
      let release: () => void;
      try {
        release = deps.keylessStreams.take(callerOf(req), 'ws');
      } catch (err) {
        refuse(socket, id, err as ServiceError);
        return;
      }
      // Given back when the socket is done: refused (this side ended it) or, once upgraded, closed either way.
      socket.once('finish', release);
      socket.once('close', release);
    }
    const home = homeOfChannel(url.searchParams.get('channel') ?? '');
    if (home !== null && home !== deps.nodeId() && !req.headers[FORWARDED_HEADER]) {
      // The parsed path and query, as a WebSocket client sends them (a fragment in the raw target is not sent on).
      const path = `${url.pathname}${url.search}`;
      const at = deps.peerUrl(home);
      if (at !== null) {
        relay(req, socket, head, id, home, at, path);
        return;
      }
      if (deps.overMesh?.knows(home)) {
        relayOverMesh(req, socket, head, id, home, path, ['HTTP: no URL is known for it']);
        return;
      }
    }
    authorize(deps, req, url, callerOf(req))
      .then(
        ({ channel, stillGood, keyed }) => {
          if (keyed) {
            let release: () => void;
            try {
              release = takeKeyed(channel.owner.zid);
            } catch (err) {
              refuse(socket, id, err as ServiceError);
              return;
            }
            socket.once('close', release);
            socket.once('finish', release);
          }
          wss.handleUpgrade(req, socket, head, (ws: Alive) => {
            ws.alive = true;
            ws.stillGood = stillGood;
            ws.on('pong', () => (ws.alive = true));
            ws.on('error', () => ws.terminate());
            const sub: Subscriber = {
              // ws writes its own frames (hello, pings, close) straight to the socket too (no compression, so no queue):
              // a frame written here is never interleaved with one of its. A closing socket gets nothing more (as
              // ws.send would skip it), its close handshake left to finish.
              send: (data) => {
                if (ws.readyState === ws.OPEN && socket.writable) socket.write(frameOf(data));
              },
              get bufferedAmount() {
                return ws.bufferedAmount;
              },
              // Told why with a close frame when the channel or the node goes; cut off when it does not keep up.
              drop: (reason, code) => {
                deps.logger.debug({ channel: channel.id, reason }, 'stream subscriber dropped');
                if (code === undefined) ws.terminate();
                else ws.close(code, reason);
              },
            };
            if (!hub.add(channel.id, sub)) {
              ws.close(1013, 'channel has too many subscribers');
              return;
            }
            ws.on('close', () => hub.remove(channel.id, sub));
            ws.send(JSON.stringify({ subscribed: channel.id, tick_count: channel.tick_count }));
            // A close that landed between the check above and hub.add told the hub's subscribers before this one
            // joined: read the record again (a close is stored before the hub is told), so it is not left silent.
            deps.streams.get(channel.id).then(
              (now) => {
                if (now.status !== 'open') {
                  hub.remove(channel.id, sub);
                  sub.drop('channel closed', 1000);
                }
              },
              () => undefined,
            );
          });
        },
        (err: unknown) => refuse(socket, id, err instanceof ServiceError ? err : new ServiceError(500, 'SVC_INTERNAL_ERROR', 'internal error')),
      )
      .catch((err: unknown) => failed(socket, err, false));
  };

  /** The caller's address as limits count it: the one a mesh relay stated (verified), else the socket's. */
  const callerOf = (req: IncomingMessage): string => {
    const forwarder = req.headers[FORWARDED_HEADER];
    const stated = req.headers[FORWARDED_FOR_HEADER];
    const ip = statedIp(
      deps.meshSecret ?? null,
      typeof forwarder === 'string' ? forwarder : null,
      typeof stated === 'string' ? stated : undefined,
      { method: 'GET', path: req.url ?? '', body: '' },
      req.socket.remoteAddress ?? '',
    );
    return addressKey(ip);
  };

  const relays = new Set<WebSocket>();
  const maxRelayed = deps.relayMaxBufferedBytes ?? HUB_DEFAULTS.maxBufferedBytes;
  const retryAfter = deps.retryAfterSeconds ?? 5;

  /** The headers a relayed upgrade carries to the home: the client's key, and its address stated under the mesh secret. */
  const relayHeaders = (req: IncomingMessage, path: string): Record<string, string> => {
    const headers: Record<string, string> = { [FORWARDED_HEADER]: deps.nodeId(), 'x-forwarded-for': req.socket.remoteAddress ?? '' };
    if (req.headers.authorization) headers.authorization = req.headers.authorization;
    if (deps.meshSecret)
      headers[FORWARDED_FOR_HEADER] = forwardedForValue(deps.meshSecret, {
        forwarder: deps.nodeId(),
        ip: req.socket.remoteAddress ?? '',
        unixMs: Date.now(),
        method: 'GET',
        path,
        body: '',
      });
    return headers;
  };

  /**
   * Neither way reached the home: the upgrade is accepted and closed at once with 1013 (try again later) and a reason
   * naming SVC_HOME_UNREACHABLE, which a browser's WebSocket shows (it never sees an HTTP refusal: 1006).
   */
  const closeUnreachable = (req: IncomingMessage, socket: Duplex, head: Buffer, home: string, tried: string[]): void => {
    deps.logger.debug({ home, tried }, 'relayed stream: the home could not be reached');
    if (!socket.writable) return;
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', () => ws.terminate());
      ws.close(1013, unreachableReason(retryAfter));
    });
  };

  /** Relay the upgrade to the channel's home at `homeUrl` (see the head of this file). */
  const relay = (req: IncomingMessage, socket: Duplex, head: Buffer, traceId: string, home: string, homeUrl: string, path: string): void => {
    const headers = relayHeaders(req, path);
    let upstream: WebSocket;
    try {
      upstream = new WebSocket(`${homeUrl.replace(/^http/, 'ws')}${path}`, { headers, perMessageDeflate: false, handshakeTimeout: RELAY_OPEN_TIMEOUT_MS });
    } catch (err) {
      // ws refuses some targets outright (it throws): answered here, never thrown out of the upgrade handler.
      refuse(socket, traceId, new ServiceError(400, 'SVC_BAD_REQUEST', `this upgrade cannot be relayed: ${(err as Error).message}`));
      return;
    }
    let settled = false;
    const unreachable = (reason: string) => {
      if (settled) return;
      settled = true;
      upstream.terminate();
      closeUnreachable(req, socket, head, home, [`HTTP at ${homeUrl}: ${reason}`]);
    };
    socket.once('close', () => {
      if (!settled) {
        settled = true;
        upstream.terminate();
      }
    });
    upstream.on('unexpected-response', (_r, res) => {
      // The home refused (401, 403, 404 …): its answer is the client's.
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (text.length < 64 * 1024) text += d;
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        upstream.terminate();
        const trace = res.headers['x-trace-id'];
        const after = res.headers['retry-after'];
        answer(socket, res.statusCode ?? 502, text, [
          `${SERVED_BY_HEADER}: ${home}`,
          ...(typeof trace === 'string' ? [`X-Trace-Id: ${trace}`] : []),
          // A home's 429 (its keyless stream caps) says when to come back; so does its relayed answer.
          ...(typeof after === 'string' && /^\d{1,6}$/.test(after) ? [`Retry-After: ${after}`] : []),
        ]);
      });
      res.on('error', () => unreachable('its answer was cut'));
    });
    upstream.on('error', (err: Error & { code?: string }) => {
      // Nothing reached the URL (a home behind NAT): the libp2p way, as a forwarded request goes (forward.ts).
      if (!settled && deps.overMesh && err.code !== undefined && CONNECT_FAILURES.has(err.code)) {
        settled = true;
        upstream.terminate();
        relayOverMesh(req, socket, head, traceId, home, path, [`HTTP at ${homeUrl}: ${err.code}`]);
        return;
      }
      unreachable(err.code ?? err.message);
    });
    upstream.once('open', () => {
      if (settled) return;
      settled = true;
      upstream.pause();
      wss.handleUpgrade(req, socket, head, (ws: Alive) => {
        ws.alive = true;
        ws.on('pong', () => (ws.alive = true));
        relays.add(ws);
        upstream.on('message', (data: Buffer, isBinary: boolean) => {
          if (ws.readyState !== ws.OPEN) return;
          if (ws.bufferedAmount + data.length > maxRelayed) {
            deps.logger.debug({ home, reason: 'slow consumer' }, 'relayed stream subscriber dropped');
            ws.terminate();
            return;
          }
          ws.send(data, { binary: isBinary });
        });
        const closeBoth = () => {
          relays.delete(ws);
          if (upstream.readyState === upstream.OPEN || upstream.readyState === upstream.CONNECTING) upstream.terminate();
        };
        // The home's own close frame is passed on; a home that went away without one (1006, an error) is told to the
        // client in a close frame of its own: 1013 (try again later) with SVC_HOME_UNREACHABLE, never a bare 1006.
        const homeGone = () => {
          relays.delete(ws);
          if (ws.readyState === ws.OPEN) ws.close(1013, unreachableReason(retryAfter));
        };
        upstream.on('close', (code, reason) => {
          relays.delete(ws);
          const c = sendableCode(code);
          if (c === undefined) homeGone();
          else if (ws.readyState === ws.OPEN) ws.close(c, reason.subarray(0, 123));
        });
        upstream.on('error', homeGone);
        ws.on('error', () => ws.terminate());
        ws.on('close', closeBoth);
        upstream.resume();
      });
    });
  };

  /**
   * Relay the upgrade to the channel's home over libp2p (/svc/stream/1): the home runs it against its own server and
   * sends its answer, then each message, as frames; the client is upgraded only once the home has accepted.
   */
  const relayOverMesh = (req: IncomingMessage, socket: Duplex, head: Buffer, traceId: string, home: string, path: string, tried: string[]): void => {
    const overMesh = deps.overMesh;
    if (!overMesh) return closeUnreachable(req, socket, head, home, [...tried, 'libp2p: the mesh is not running']);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`no answer within ${RELAY_OPEN_TIMEOUT_MS} ms`)), RELAY_OPEN_TIMEOUT_MS);
    let gone = false;
    const onGone = () => {
      gone = true;
      controller.abort(new Error('the client left'));
    };
    socket.once('close', onGone);
    overMesh.open(home, { kind: 'ws', path, headers: relayHeaders(req, path) }, controller.signal).then(
      (session) => {
        clearTimeout(timer);
        socket.off('close', onGone);
        if (gone) return session.close();
        const h = session.head;
        if (h.status !== 101) {
          // The home refused (401, 403, 404, 429 …): its answer is the client's.
          session.close();
          const after = h.headers['retry-after'];
          answer(socket, h.status, h.body, [
            `${SERVED_BY_HEADER}: ${home}`,
            ...(h.headers['x-trace-id'] ? [`X-Trace-Id: ${h.headers['x-trace-id']}`] : []),
            ...(after !== undefined && /^\d{1,6}$/.test(after) ? [`Retry-After: ${after}`] : []),
          ]);
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws: Alive) => {
          ws.alive = true;
          ws.on('pong', () => (ws.alive = true));
          ws.on('error', () => ws.terminate());
          relays.add(ws);
          ws.on('close', () => {
            relays.delete(ws);
            session.close();
          });
          void (async () => {
            for await (const f of session.frames) {
              if (ws.readyState !== ws.OPEN) return;
              if ('close' in f) return ws.close(f.close, f.reason);
              if (ws.bufferedAmount + f.data.length > maxRelayed) {
                deps.logger.debug({ home, reason: 'slow consumer' }, 'relayed stream subscriber dropped');
                return ws.terminate();
              }
              ws.send(f.data);
            }
            throw new Error('the home ended the stream');
          })().catch((err: unknown) => {
            if (ws.readyState === ws.OPEN) ws.close(1013, unreachableReason(deps.retryAfterSeconds ?? 5));
            deps.logger.debug({ home, err: String(err) }, 'relayed stream over libp2p ended');
          });
        });
      },
      (err: unknown) => {
        clearTimeout(timer);
        socket.off('close', onGone);
        if (gone) return;
        closeUnreachable(req, socket, head, home, [...tried, `libp2p ${PEER_STREAM_PROTOCOL}: ${err instanceof Error ? err.message : String(err)}`]);
      },
    );
  };

  const heartbeat = setInterval(() => {
    for (const ws of wss.clients as Set<Alive>) {
      if (ws.alive === false) {
        ws.terminate();
        continue;
      }
      ws.alive = false;
      ws.ping();
      // A credential revoked, or a link expired, since the subscription opened ends it (1008, within a heartbeat).
      void ws.stillGood?.().then((ok) => {
        if (!ok && ws.readyState === ws.OPEN) ws.close(1008, 'the credential was revoked or has expired');
      });
    }
  }, deps.heartbeatMs ?? HEARTBEAT_MS);
  heartbeat.unref();

  return {
    close: () => {
      clearInterval(heartbeat);
      hub.closeAll('node stopping');
      for (const ws of relays) ws.terminate();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
    clients: () => wss.clients.size,
  };
}
