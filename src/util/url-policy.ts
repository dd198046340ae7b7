// Which URLs a caller may make this node call (no open proxy): webhook receivers and the base URLs of provider
// credentials. http or https only, no credentials in the URL, the host on the configured allow-list when there is
// one, and never a loopback, private, link-local or otherwise non-public address unless the policy allows loopback.
// A name is checked again when it is resolved for each request (guardedLookup, used by outbound-post.ts), so a name
// that later points inside is refused then.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { PoolGate } from './pool-gate.js';
import { BlockList, isIP } from 'node:net';
import { ServiceError } from '../kernel/errors.js';

export interface UrlPolicy {
  allowLoopback: boolean;
  /** Hosts that may be called: exact names, or `*.example.com` for its subdomains; empty = any public host. */
  allowHosts: string[];
}

/** The operator's own configuration is trusted: any host, loopback included. */
export const TRUSTED_URLS: UrlPolicy = { allowLoopback: true, allowHosts: [] };

const blocked = new BlockList();
/** IPv4 ranges no caller may make this node call: unspecified, private, CGNAT, loopback, link-local, benchmarking, multicast, reserved. */
const BLOCKED_V4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
for (const [net, prefix] of BLOCKED_V4) blocked.addSubnet(net, prefix, 'ipv4');

/** IPv6 ranges refused whole. */
const BLOCKED_V6: readonly (readonly [string, number])[] = [
  // IPv4-compatible (deprecated, RFC 4291 2.5.5.1), with the unspecified `::` and loopback `::1` inside: no public
  // use, and a stack may carry `::127.0.0.1` to the IPv4 inside.
  ['::', 96],
  ['64:ff9b:1::', 48], // NAT64 local-use (RFC 8215): a network's own translator, to its own IPv4 space
  ['100::', 64], // discard-only (RFC 6666)
  ['2001::', 32], // Teredo (RFC 4380): a tunnel to the IPv4 of a server and (obfuscated) of a client
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, RFC 3879), still private where it is routed
  ['ff00::', 8], // multicast
];
for (const [net, prefix] of BLOCKED_V6) blocked.addSubnet(net, prefix, 'ipv6');

/** `a.b.c.d` as the two hextets `aabb:ccdd` it fills in an IPv6 address. */
function hextets(v4: string): string {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

// IPv6 forms that carry an IPv4 address and reach it (a host's own stack, a NAT64 translator, a 6to4 relay): one whose
// IPv4 is blocked is refused as that IPv4, one whose IPv4 is public is as public as it. Each blocked IPv4 range is
// written as the IPv6 range of each form, so the one BlockList answers for both.
for (const [net, prefix] of BLOCKED_V4) {
  const h = hextets(net);
  blocked.addSubnet(`::ffff:${h}`, 96 + prefix, 'ipv6'); // IPv4-mapped (RFC 4291 2.5.5.2), dotted or hex
  blocked.addSubnet(`::ffff:0:${h}`, 96 + prefix, 'ipv6'); // IPv4-translated (RFC 2765)
  blocked.addSubnet(`64:ff9b::${h}`, 96 + prefix, 'ipv6'); // NAT64 well-known prefix (RFC 6052)
  blocked.addSubnet(`2002:${h}::`, 16 + prefix, 'ipv6'); // 6to4 (RFC 3056): the IPv4 in bits 16-48
}

/**
 * A loopback, private, link-local, multicast, unspecified or otherwise non-public address, IPv4 or IPv6 (an IPv6 form
 * that embeds an IPv4 is judged by that IPv4; see BLOCKED_V6 for the forms refused whole). A zone (`fe80::1%eth0`) is
 * not part of the address. Anything that is not an IP address is refused.
 */
export function isBlockedAddress(ip: string): boolean {
  const addr = ip.replace(/%.*$/, '');
  const v = isIP(addr);
  if (v === 4) return blocked.check(addr, 'ipv4');
  if (v === 6) return blocked.check(addr, 'ipv6');
  return true;
}

function refuse(field: string, reason: string): ServiceError {
  return new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input ${field}: ${reason}`, { field, reason, allowed: 'an http or https URL of a public host' });
}

/** Names of this machine in the usual hosts files (glibc, Debian), besides `localhost` itself. */
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback', 'localhost6', 'localhost6.localdomain6']);
/** Suffixes of names that only resolve inside a host or a private network. */
const LOCAL_SUFFIXES = ['.localhost', '.local', '.internal', '.localdomain'];

/** A name (lower case, no trailing dot) that points at this machine or a private network, whatever DNS says. */
export function isLocalName(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || LOCAL_SUFFIXES.some((s) => host.endsWith(s));
}

function hostAllowed(host: string, list: string[]): boolean {
  if (list.length === 0) return true;
  return list.some((h) => (h.startsWith('*.') ? host.endsWith(h.slice(1)) && host.length > h.length - 1 : host === h.toLowerCase()));
}

/** The URL the node may call for a caller, or 400 SVC_INVALID_INPUT naming `field` and saying why not. */
export function checkOutboundUrl(raw: string, policy: UrlPolicy, field = 'url'): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse(field, 'not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse(field, 'only http and https URLs');
  if (url.username !== '' || url.password !== '') throw refuse(field, 'credentials in the URL are not accepted (use headers)');
  // A fully qualified name's trailing dot names the same host (`localhost.` is localhost).
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.+$/, '');
  if (!hostAllowed(host, policy.allowHosts)) throw refuse(field, `host ${host} is not on the allow-list`);
  if (!policy.allowLoopback) {
    if (isIP(host) !== 0 && isBlockedAddress(host)) throw refuse(field, 'loopback, private and link-local addresses are refused');
    if (isLocalName(host)) throw refuse(field, 'local names are refused');
  }
  return url;
}

/** Name lookups of outbound calls at once at most: each holds a thread of libuv's pool while its DNS server answers. */
export const LOOKUPS_RUNNING = 1;
/** Lookups waiting at most; beyond, the call fails at once (a delivery is retried on its schedule). */
export const LOOKUPS_WAITING = 64;
// getaddrinfo runs on libuv's pool, as LevelDB does: a name whose DNS server never answers holds a thread for the
// resolver's timeouts (5 s × its attempts), and 32 webhook deliveries to such names would take every thread and stall
// the store. One at a time, the others wait (pool-gate.ts).
const lookups = new PoolGate(LOOKUPS_RUNNING, LOOKUPS_WAITING);

type Lookup = (hostname: string, options: { all: true; family?: number }, cb: (err: Error | null, addresses: LookupAddress[]) => void) => void;

/** Lookups running and waiting now (tests). */
export function lookupLoad(): { running: number; waiting: number } {
  return lookups.load();
}

/**
 * A `lookup` for node:http(s) that drops the private addresses a name resolves to (all of them: the request fails).
 * `resolve` is node:dns's lookup (a test gives its own).
 */
export function guardedLookup(policy: UrlPolicy, resolve: Lookup = dnsLookup as Lookup) {
  return (hostname: string, options: { all?: boolean; family?: number }, cb: (...a: unknown[]) => void): void => {
    lookups
      .run(
        () =>
          new Promise<LookupAddress[]>((done, fail) => resolve(hostname, { ...options, all: true }, (err, addresses) => (err ? fail(err) : done(addresses)))),
        () => new Error(`too many name lookups waiting (${LOOKUPS_WAITING}): ${hostname} not looked up`),
      )
      // The callback is called outside the promise, as node:dns calls it: what it throws is not taken for a rejection.
      .then(
        (addresses) =>
          process.nextTick(() => {
            const ok = policy.allowLoopback ? addresses : addresses.filter((a) => !isBlockedAddress(a.address));
            if (ok.length === 0) return cb(new Error(`${hostname} resolves to a private address`));
            if (options.all) cb(null, ok);
            else cb(null, ok[0]!.address, ok[0]!.family);
          }),
        (err: unknown) => process.nextTick(() => cb(err)),
      );
  };
}
