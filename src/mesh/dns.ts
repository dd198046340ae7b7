// Mesh DNS: name → {peerId, url, multiaddrs}. Registrations are signed mesh events ('dns.register' on
// svc/dns/1) and every node folds them with the same order-independent rule, so all nodes agree whatever the
// arrival order:
//   - per name, each owner (record peerId) keeps its first claim tick (the minimum svcond seen) and its latest
//     record (the maximum by (svcond, canonical digest)): an owner may update its own record;
//   - the winning owner of a name is the one with the earliest first claim, ties to the smaller peer id;
//   - resolve(name) answers the winner's latest record.
// A node re-announces the records it registered every REANNOUNCE_TICKS so nodes that join later learn them.
// A record names the peer id of the node that signs it (registrations for other peers are refused on every
// entrance), and the HTTP route registers this node's own URL and multiaddrs only.
import { multiaddr } from '@multiformats/multiaddr';
import { peerIdFromString } from '@libp2p/peer-id';
import { canonicalDigest } from '../kernel/canonical.js';
import { ServiceError } from '../kernel/errors.js';
import type { Store, Sublevel } from '../store/db.js';
import { MAX_SKEW_TICKS } from './validator.js';

export const DNS_EVENT_TYPE = 'dns.register';
export const REANNOUNCE_TICKS = 64;
const NAME_RE = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const MAX_OWNERS_PER_NAME = 8;
const MAX_MULTIADDRS = 8;

export interface DnsTarget {
  peerId: string;
  url: string;
  multiaddrs: string[];
}

export interface DnsRecord extends DnsTarget {
  name: string;
  /** Tick of the claim (decides conflicts). */
  svcond: number;
  /** Node that signed the registration event. */
  registrar: string;
}

interface OwnerClaim {
  peerId: string;
  first: number;
  latest: DnsRecord;
}

interface NameEntry {
  owners: OwnerClaim[];
}

function recordKey(r: DnsRecord): string {
  return canonicalDigest({ name: r.name, peerId: r.peerId, url: r.url, multiaddrs: r.multiaddrs, svcond: r.svcond });
}

function winnerOf(e: NameEntry): OwnerClaim {
  let best = e.owners[0]!;
  for (const o of e.owners) {
    if (o.first < best.first || (o.first === best.first && o.peerId < best.peerId)) best = o;
  }
  return best;
}

/** Parse and check a registration body signed by `registrar`; throws ServiceError 400 DNS_INVALID_RECORD. */
export function parseDnsBody(body: unknown, registrar: string): DnsRecord {
  const bad = (m: string): never => {
    throw new ServiceError(400, 'DNS_INVALID_RECORD', m);
  };
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return bad('a DNS record must be an object');
  const o = body as Record<string, unknown>;
  const name = typeof o.name === 'string' ? o.name.toLowerCase() : '';
  if (!NAME_RE.test(name)) return bad('name must be a DNS-style name (a-z, 0-9, -, dots; at most 253 characters)');
  if (typeof o.peerId !== 'string') return bad('peerId is required');
  try {
    peerIdFromString(o.peerId);
  } catch {
    return bad('peerId is not a libp2p peer id');
  }
  // A name points at the node that signs its claim: no node can send another's callers elsewhere.
  if (o.peerId !== registrar) return bad('a node registers names for its own peer id only');
  if (typeof o.url !== 'string' || o.url.length > 2048) return bad('url is required');
  let u: URL;
  try {
    u = new URL(o.url);
  } catch {
    return bad('url is not a URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return bad('url must be http or https');
  const mas = o.multiaddrs ?? [];
  if (!Array.isArray(mas) || mas.length > MAX_MULTIADDRS) return bad(`multiaddrs must be an array of at most ${MAX_MULTIADDRS}`);
  for (const m of mas) {
    if (typeof m !== 'string' || m.length > 512) return bad('each multiaddr must be a string');
    try {
      multiaddr(m);
    } catch {
      return bad(`not a multiaddr: ${m}`);
    }
  }
  if (typeof o.svcond !== 'number' || !Number.isSafeInteger(o.svcond) || o.svcond < 0) return bad('svcond must be a tick');
  return { name, peerId: o.peerId, url: o.url, multiaddrs: mas as string[], svcond: o.svcond, registrar };
}

export interface DnsRegistryOptions {
  store: Store;
  /** This node's id (read when needed: it is known once the node key is loaded). */
  nodeId: () => string;
  nowSvcond: () => number;
  /** Publish a registration into the mesh (signed by this node); resolves when sent. */
  publish: (body: object) => Promise<void>;
  maxNames?: number;
  maxSkewTicks?: number;
}

export class DnsRegistry {
  private readonly names = new Map<string, NameEntry>();
  private readonly sub: Sublevel;
  private readonly maxNames: number;
  private readonly maxSkew: number;
  private lastAnnounce = -Infinity;

  constructor(private readonly opts: DnsRegistryOptions) {
    this.sub = opts.store.sub('mesh-dns');
    this.maxNames = opts.maxNames ?? 10_000;
    this.maxSkew = opts.maxSkewTicks ?? MAX_SKEW_TICKS;
  }

  async load(): Promise<void> {
    this.names.clear();
    for (const { key, value } of await this.opts.store.range<NameEntry>(this.sub, { limit: this.maxNames })) {
      if (!value || !Array.isArray(value.owners)) continue;
      // Claims stored before a record had to name its own signer are dropped as they are read.
      const owners = value.owners.filter((o) => o.latest && o.latest.peerId === o.latest.registrar);
      if (owners.length > 0) this.names.set(key, { owners });
    }
  }

  /**
   * Register a name for a target at a tick (default now) and gossip it. Resolves to the record now winning the
   * name, which is not the new one when an earlier claim exists.
   */
  async register(name: string, target: DnsTarget, svcond?: number): Promise<{ record: DnsRecord; winner: DnsRecord; won: boolean }> {
    const now = this.opts.nowSvcond();
    const tick = svcond ?? now;
    if (Math.abs(tick - now) > this.maxSkew) {
      throw new ServiceError(400, 'DNS_INVALID_RECORD', `svcond must be within ${this.maxSkew} ticks of now (${now})`);
    }
    const record = parseDnsBody({ name, ...target, svcond: tick }, this.opts.nodeId());
    if (!this.names.has(record.name) && this.names.size >= this.maxNames) {
      throw new ServiceError(507, 'DNS_REGISTRY_FULL', `the registry holds its maximum of ${this.maxNames} names`);
    }
    await this.apply(record);
    await this.opts.publish(this.bodyOf(record));
    const winner = this.resolve(record.name) as DnsRecord;
    return { record, winner, won: recordKey(winner) === recordKey(record) };
  }

  private bodyOf(r: DnsRecord): object {
    return { name: r.name, peerId: r.peerId, url: r.url, multiaddrs: r.multiaddrs, svcond: r.svcond };
  }

  /** Fold a registration (from this node or the mesh) into the registry. Returns true when anything changed. */
  async apply(record: DnsRecord): Promise<boolean> {
    let entry = this.names.get(record.name);
    if (!entry) {
      if (this.names.size >= this.maxNames) return false;
      entry = { owners: [] };
    }
    const owners = entry.owners.map((o) => ({ ...o }));
    const mine = owners.find((o) => o.peerId === record.peerId);
    let changed = false;
    if (!mine) {
      owners.push({ peerId: record.peerId, first: record.svcond, latest: record });
      changed = true;
    } else {
      if (record.svcond < mine.first) {
        mine.first = record.svcond;
        changed = true;
      }
      const cur = mine.latest;
      if (record.svcond > cur.svcond || (record.svcond === cur.svcond && recordKey(record) > recordKey(cur))) {
        mine.latest = record;
        changed = true;
      }
    }
    if (!changed) return false;
    // Keep the best owners only (the winner is always kept).
    owners.sort((a, b) => a.first - b.first || (a.peerId < b.peerId ? -1 : a.peerId > b.peerId ? 1 : 0));
    const next: NameEntry = { owners: owners.slice(0, MAX_OWNERS_PER_NAME) };
    // Update memory before the write: concurrent applies on one name then compose (each reads the previous
    // result), and the store's FIFO group commit writes their snapshots in the same order.
    this.names.set(record.name, next);
    await this.opts.store.commit([{ type: 'put', sub: this.sub, key: record.name, value: next }]);
    return true;
  }

  resolve(name: string): DnsRecord | null {
    const e = this.names.get(name.toLowerCase());
    return e ? winnerOf(e).latest : null;
  }

  /** Names whose winning record points at a peer id. */
  lookup(peerId: string): DnsRecord[] {
    const out: DnsRecord[] = [];
    for (const e of this.names.values()) {
      const w = winnerOf(e).latest;
      if (w.peerId === peerId) out.push(w);
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  status(): { names: number; maxNames: number; ownedByThisNode: number; conflicts: number } {
    let owned = 0;
    let conflicts = 0;
    for (const e of this.names.values()) {
      if (winnerOf(e).peerId === this.opts.nodeId()) owned++;
      if (e.owners.length > 1) conflicts++;
    }
    return { names: this.names.size, maxNames: this.maxNames, ownedByThisNode: owned, conflicts };
  }

  /** Re-publish the latest records this node registered, every REANNOUNCE_TICKS (bounded batch). */
  async reannounce(now: number): Promise<number> {
    if (now - this.lastAnnounce < REANNOUNCE_TICKS) return 0;
    this.lastAnnounce = now;
    let sent = 0;
    for (const e of this.names.values()) {
      for (const o of e.owners) {
        if (o.latest.registrar !== this.opts.nodeId()) continue;
        await this.opts.publish(this.bodyOf(o.latest));
        if (++sent >= 100) return sent;
      }
    }
    return sent;
  }
}
