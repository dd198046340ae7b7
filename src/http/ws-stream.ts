// WS /ws/stream?channel=<id> (spec 4.5) on the node's HTTP server, with `ws`: each sealed tick of the channel is pushed
// as a text frame holding the sealed envelope, after its batch is durable (streams/channels.ts publishes only then).
// Auth as the channel's routes: the owner's key or the channel key (Authorization: Bearer, or ?key=), or a pull link's
// ?sig=. The first frame is {"subscribed": <channel id>, "tick_count": n}. A client whose unsent bytes pass the hub's
// bound is dropped (streams/hub.ts); every client is pinged each heartbeat and dropped when it missed the last pong.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from 'pino';
import { ServiceError } from '../kernel/errors.js';
import type { IdentityService } from '../identity/service.js';
import type { StreamService, ChannelRecord } from '../streams/channels.js';
import type { Subscriber } from '../streams/hub.js';
import { errorBody } from './errors.js';
import { traceIdSource } from './trace.js';
import { keyFrom } from './auth.js';
import { homeOfChannel } from '../streams/channel-id.js';

export const WS_STREAM_PATH = '/ws/stream';
export const HEARTBEAT_MS = 30_000;

export interface StreamSocketDeps {
  streams: StreamService;
  /** This node's id, and a peer's HTTP URL when known: a channel held by another node is named with its URL. */
  nodeId: () => string;
  peerUrl: (nodeId: string) => string | null;
  identity: IdentityService;
  logger: Logger;
  heartbeatMs?: number;
}

type Alive = WebSocket & { alive?: boolean };

/**
 * One unmasked, unfragmented RFC 6455 text frame holding `data` (a server's frames are never masked). A tick's frame is
 * built once and the same bytes written to every subscriber's socket: one write each, instead of ws framing it anew per
 * socket (session 13: the send loop to 1,000 sockets 12 % shorter).
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

function refuse(socket: Duplex, traceId: string, err: ServiceError): void {
  const text = JSON.stringify(errorBody(traceId, err.status, err.code, err.message, err.extra));
  socket.end(
    [
      `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(text)}`,
      `X-Trace-Id: ${traceId}`,
      'Connection: close',
      '',
      text,
    ].join('\r\n'),
  );
}

async function authorize(deps: StreamSocketDeps, req: IncomingMessage, url: URL): Promise<ChannelRecord> {
  const id = url.searchParams.get('channel');
  if (!id) throw new ServiceError(400, 'SVC_INVALID_INPUT', 'channel is required', { field: 'channel', reason: 'missing', allowed: 'a stream channel id' });
  // A WebSocket is not relayed: a channel held by another node is refused with where to open it.
  const home = homeOfChannel(id);
  if (home !== null && home !== deps.nodeId()) {
    const at = deps.peerUrl(home);
    throw new ServiceError(404, 'SVC_NOT_FOUND', `stream channel ${id} is held by node ${home}${at ? `: open the WebSocket at ${at}` : ''}`, {
      channel: id,
      home,
      ws_url: at ? `${at.replace(/^http/, 'ws')}${WS_STREAM_PATH}` : null,
    });
  }
  const sig = url.searchParams.get('sig');
  const key = keyFrom(req.headers.authorization, url.searchParams.get('key'));
  if (key === null && sig !== null) {
    const check = deps.streams.checkLink(id, sig);
    if (!check.ok)
      throw new ServiceError(401, 'SVC_INVALID_KEY', `pull link refused: ${check.reason}`, { key_id: null, revoked_at: null, reason: check.reason });
    return deps.streams.get(id);
  }
  if (key === null) throw new ServiceError(401, 'SVC_NO_KEY', 'this route needs an API key, the channel key or a signed link');
  const channel = await deps.streams.get(id);
  if (deps.streams.isChannelKey(channel, key)) return channel;
  if (key.startsWith('stk_'))
    throw new ServiceError(401, 'SVC_INVALID_KEY', 'this is not the channel key', { key_id: null, revoked_at: null, reason: 'wrong channel key' });
  const rec = await deps.identity.resolveKey(key);
  if (rec.kind === 'zsm_pub' || rec.zid !== channel.owner.zid)
    throw new ServiceError(403, 'SVC_FORBIDDEN', `stream channel ${channel.id} belongs to another identity`);
  return channel;
}

/** Serve /ws/stream on `server`; close() ends every client. */
export function attachStreamSocket(server: Server, deps: StreamSocketDeps): { close(): void; clients(): number } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const traceId = traceIdSource();
  const hub = deps.streams.hub;
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

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
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
    authorize(deps, req, url).then(
      (channel) => {
        wss.handleUpgrade(req, socket, head, (ws: Alive) => {
          ws.alive = true;
          ws.on('pong', () => (ws.alive = true));
          ws.on('error', () => ws.terminate());
          const sub: Subscriber = {
            // ws writes its own frames (hello, pings, close) straight to the socket too (no compression, so no queue):
            // a frame written here is never interleaved with one of its.
            send: (data) => {
              if (ws.readyState !== ws.OPEN || !socket.writable) throw new Error('socket not open');
              socket.write(frameOf(data));
            },
            get bufferedAmount() {
              return ws.bufferedAmount;
            },
            drop: (reason) => {
              deps.logger.debug({ channel: channel.id, reason }, 'stream subscriber dropped');
              ws.terminate();
            },
          };
          if (!hub.add(channel.id, sub)) {
            ws.close(1013, 'channel has too many subscribers');
            return;
          }
          ws.on('close', () => hub.remove(channel.id, sub));
          ws.send(JSON.stringify({ subscribed: channel.id, tick_count: channel.tick_count }));
        });
      },
      (err: unknown) => refuse(socket, id, err instanceof ServiceError ? err : new ServiceError(500, 'SVC_INTERNAL_ERROR', 'internal error')),
    );
  });

  const heartbeat = setInterval(() => {
    for (const ws of wss.clients as Set<Alive>) {
      if (ws.alive === false) {
        ws.terminate();
        continue;
      }
      ws.alive = false;
      ws.ping();
    }
  }, deps.heartbeatMs ?? HEARTBEAT_MS);
  heartbeat.unref();

  return {
    close: () => {
      clearInterval(heartbeat);
      hub.closeAll('node stopping');
      for (const ws of wss.clients) ws.terminate();
      wss.close();
    },
    clients: () => wss.clients.size,
  };
}
