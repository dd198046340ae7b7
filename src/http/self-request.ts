// Requests to this node's own API, made by the node on behalf of the caller of an MCP tool or a chat tool call
// (svc_http and every tool: a tool is a request to the route that serves it, so auth, limits, charges, forwarding to
// a home node and part-7 errors are the route's own, by construction). They go over loopback HTTP to the socket the
// caller's request came in on, so they reach this node and nothing else, carrying the caller's key. The caller's IP
// travels in a header that counts only beside this process's internal token (random, never leaves the process), so
// per-IP limits and the anonymous day quota still count the caller, not 127.0.0.1.
import { Agent, request as httpRequest } from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';

const TOKEN_HEADER = 'x-svc-internal';
const CLIENT_IP_HEADER = 'x-svc-client-ip';
/** Largest answer a tool relays (a sealed field result is far below). */
const ANSWER_MAX_BYTES = 8 * 1024 * 1024;

export interface SelfRequest {
  method: string;
  /** Path under /api, with its query string when it has one. */
  path: string;
  body?: unknown;
  /** The body as text, sent as it is (a request relayed from another node: http/peer-entrance.ts); wins over `body`. */
  rawBody?: string;
  /** Headers besides the ones the self-API sets (which win over these). */
  headers?: Record<string, string>;
}

export interface SelfAnswer {
  status: number;
  contentType: string;
  text: string;
  /** Every header of the answer (lower-case names; repeated ones joined by ', '). */
  headers: Record<string, string>;
}

export interface SelfTarget {
  host: string;
  port: number;
  /** The caller's Authorization header, as it came (or built from ?key=). */
  authorization: string | null;
  ip: string;
}

export class SelfApi {
  private readonly token = randomBytes(32).toString('hex');
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });

  /** Middleware (first in the app): an internal request's caller IP is the one it names. */
  middleware() {
    const expected = Buffer.from(this.token);
    return (ctx: Context, next: Next): Promise<void> => {
      const presented = ctx.get(TOKEN_HEADER);
      if (presented) {
        const ok = presented.length === this.token.length && timingSafeEqual(Buffer.from(presented), expected);
        const ip = ctx.get(CLIENT_IP_HEADER);
        if (ok && ip) ctx.request.ip = ip;
      }
      return next();
    };
  }

  /** Where a request that came in on `ctx` can reach this node, and as whom. */
  targetOf(ctx: Context): SelfTarget {
    const socket = ctx.req.socket;
    let host = socket.localAddress ?? '127.0.0.1';
    if (host.startsWith('::ffff:')) host = host.slice(7);
    const key = typeof ctx.query.key === 'string' && ctx.query.key.length > 0 ? ctx.query.key : null;
    const auth = ctx.get('authorization') || (key ? `Bearer ${key}` : null);
    return { host, port: socket.localPort ?? 0, authorization: auth, ip: ctx.ip };
  }

  send(target: SelfTarget, req: SelfRequest, signal?: AbortSignal): Promise<SelfAnswer> {
    const text = req.rawBody !== undefined ? req.rawBody : req.body === undefined ? undefined : JSON.stringify(req.body);
    const payload = text === undefined || (req.rawBody !== undefined && text === '') ? undefined : Buffer.from(text, 'utf8');
    const headers: Record<string, string | number> = {
      ...req.headers,
      [TOKEN_HEADER]: this.token,
      [CLIENT_IP_HEADER]: target.ip,
      accept: 'application/json',
    };
    if (target.authorization) headers.authorization = target.authorization;
    if (payload) {
      headers['content-type'] = req.headers?.['content-type'] ?? 'application/json';
      headers['content-length'] = payload.length;
    }
    return new Promise<SelfAnswer>((resolve, reject) => {
      const r = httpRequest(
        { host: target.host, port: target.port, method: req.method, path: req.path, headers, agent: this.agent, ...(signal ? { signal } : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > ANSWER_MAX_BYTES) {
              res.destroy(new Error(`answer larger than ${ANSWER_MAX_BYTES} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('error', reject);
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              contentType: String(res.headers['content-type'] ?? ''),
              text: Buffer.concat(chunks).toString('utf8'),
              headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)])),
            }),
          );
        },
      );
      r.on('error', reject);
      r.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
