// Who an address-based limit counts (anonymous computations per day, per-minute limits, claim proofs per hour,
// demo-key mints per day): an IPv4 address is one caller, an IPv6 caller is its /64. One IPv6 host is routinely
// given a whole /64 and can pick any address in it, so counting single IPv6 addresses would let it step around every
// such limit, and grow the day counters by one entry per address it tries.
import { isIP } from 'node:net';
import type { Context } from 'koa';

/** The /64 network of an IPv6 address as `x:x:x:x::/64` (lower-case, no leading zeros); other input as it is. */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (isIP(ip) !== 6) return ip;
  const zone = ip.indexOf('%');
  const bare = zone >= 0 ? ip.slice(0, zone) : ip;
  const [head = '', tail = ''] = bare.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = bare.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  // An embedded IPv4 tail (a.b.c.d) is two groups; it sits in the last 64 bits, which are dropped anyway.
  const groups = bare.includes('::') ? [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** The caller's address as the limits count it. */
export function callerAddress(ctx: Context): string {
  return addressKey(ctx.ip);
}
