// Which URLs a webhook may call (no open proxy): http or https only, no credentials in the URL, the host on the
// configured allow-list when there is one, and never a loopback, private, link-local or otherwise non-public address
// unless webhooks.allowLoopback (SVC_WEBHOOK_ALLOW_LOOPBACK=true) says so. A name is checked again when it is
// resolved for each delivery (sender.ts), so a name that later points inside is refused then.
import { BlockList, isIP } from 'node:net';
import { ServiceError } from '../kernel/errors.js';

export interface UrlPolicy {
  allowLoopback: boolean;
  /** Hosts a webhook may call: exact names, or `*.example.com` for its subdomains; empty = any public host. */
  allowHosts: string[];
}

const blocked = new BlockList();
for (const [net, prefix] of [
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
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** A loopback, private, link-local, multicast or unspecified address (IPv4-mapped IPv6 is read as its IPv4). */
export function isBlockedAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return blocked.check(mapped[1]!, 'ipv4');
  const v = isIP(ip);
  if (v === 4) return blocked.check(ip, 'ipv4');
  if (v === 6) return blocked.check(ip, 'ipv6');
  return true;
}

function refuse(reason: string): ServiceError {
  return new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input url: ${reason}`, { field: 'url', reason, allowed: 'an http or https URL of a public host' });
}

function hostAllowed(host: string, list: string[]): boolean {
  if (list.length === 0) return true;
  return list.some((h) => (h.startsWith('*.') ? host.endsWith(h.slice(1)) && host.length > h.length - 1 : host === h.toLowerCase()));
}

/** The URL a webhook may call, or 400 SVC_INVALID_INPUT (field url) saying why not. */
export function checkWebhookUrl(raw: string, policy: UrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('only http and https URLs');
  if (url.username !== '' || url.password !== '') throw refuse('credentials in the URL are not accepted (use headers)');
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (!hostAllowed(host, policy.allowHosts)) throw refuse(`host ${host} is not on the allow-list`);
  if (!policy.allowLoopback) {
    if (isIP(host) !== 0 && isBlockedAddress(host)) throw refuse('loopback, private and link-local addresses are refused');
    if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) throw refuse('local names are refused');
  }
  return url;
}
