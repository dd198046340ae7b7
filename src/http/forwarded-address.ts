// The caller's address across a forward (architecture.md §5). A request forwarded to a home node arrives from the
// forwarding node's socket, so the home's ctx.ip is that node, not the caller: per-address limits at the home (the
// daily claim's proof of work, spec part 8) would count every caller of the forwarding node as one address. The
// forwarding node therefore states the caller's address in `x-svc-forwarded-for: <ip>;<unix ms>;v1=<mac>`, the mac an
// HMAC with the mesh secret over the forwarder's id, the address, the time, the method, the path and the body's
// SHA-256. The home believes it only when the mac verifies (constant time) and the time is within a minute of its
// own: a caller cannot name another address, and a node outside the mesh cannot either. Anything else: ctx.ip.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

export const FORWARDED_FOR_HEADER = 'x-svc-forwarded-for';
/** How far the stated time may be from the home's clock (ms). */
export const FORWARDED_FOR_SKEW_MS = 60_000;

interface Forwarded {
  forwarder: string;
  ip: string;
  unixMs: number;
  method: string;
  path: string;
  body: string;
}

function mac(secret: string, f: Forwarded): string {
  const bodyDigest = createHash('sha256').update(f.body).digest('hex');
  return createHmac('sha256', secret)
    .update(`forwarded-for|${f.forwarder}|${f.ip}|${f.unixMs}|${f.method.toUpperCase()}|${f.path}|${bodyDigest}`)
    .digest('hex');
}

/** The header's value a forwarding node sends. */
export function forwardedForValue(secret: string, f: Forwarded): string {
  return `${f.ip};${f.unixMs};v1=${mac(secret, f)}`;
}

const VALUE = /^([0-9A-Fa-f:.]{2,64});(\d{13});v1=([0-9a-f]{64})$/;

/** The address a forwarded request states, when its mac verifies and its time is fresh; else null. */
export function verifyForwardedFor(secret: string, value: string, f: Omit<Forwarded, 'ip' | 'unixMs'>, nowMs: number): string | null {
  const m = VALUE.exec(value);
  if (!m) return null;
  const ip = m[1]!;
  const unixMs = Number(m[2]);
  if (Math.abs(nowMs - unixMs) > FORWARDED_FOR_SKEW_MS) return null;
  const expected = Buffer.from(mac(secret, { ...f, ip, unixMs }), 'hex');
  return timingSafeEqual(expected, Buffer.from(m[3]!, 'hex')) ? ip : null;
}

/**
 * The caller's IP: the one the forwarding mesh node `forwarder` stated in `stated` (the header's value) for this
 * request (verified), else the socket's. `forwarder` is null when the request was not forwarded.
 */
export function statedIp(
  secret: string | null,
  forwarder: string | null,
  stated: string | undefined,
  request: { method: string; path: string; body: string },
  socketIp: string,
): string {
  if (!secret || !forwarder || !stated) return socketIp;
  return verifyForwardedFor(secret, stated, { forwarder, ...request }, Date.now()) ?? socketIp;
}

/** statedIp of a Koa request (`forwarder`: its x-svc-forwarded-by header, null when it was not forwarded). */
export function statedClientIp(ctx: Context, secret: string | null, forwarder: string | null): string {
  const request = { method: ctx.method, path: ctx.originalUrl, body: ctx.request.rawBody ?? '' };
  return statedIp(secret, forwarder, ctx.get(FORWARDED_FOR_HEADER) || undefined, request, ctx.ip);
}
