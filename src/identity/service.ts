// Identities, sessions and keys (spec 2.4, 4.4, part 5). Passwords and ZK hashes with scrypt; keys and session
// tokens stored as SHA-256 digests; every secret comparison in constant time.
import { randomBytes, timingSafeEqual, createHmac } from 'node:crypto';
import { sha256Hex } from '../kernel/bytes.js';
import { canonicalJson } from '../kernel/canonical.js';
import { backfillOnce } from '../store/backfill.js';
import { capReached, ServiceError } from '../kernel/errors.js';
import type { Clock } from '../kernel/clock.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import { RangeCursor } from '../util/range-cursor.js';
import { BoundedMap, LruMap } from '../util/bounded-map.js';
import { MissedLookups } from '../util/missed-lookups.js';
import { KeyedLock } from '../util/keyed-lock.js';
import type { ChainService, MachineRecord } from '../chain/service.js';
import { DEFAULT_SLUG_PREFIX, MachineCreation, type AdminKey } from '../chain/machine-creation.js';
import type { KeyKind, KeyRecord } from '../records/types.js';
import { compareVersions, keyDigest, keyId, keyKind, mintKey } from './keys.js';
import { Claims, conflict, type Claim, type ClaimSpace } from './claims.js';
import { DEFAULT_SCRYPT_COST, MAX_SCRYPT_COST, MIN_SCRYPT_COST } from '../config/scrypt-cost.js';
import { hashSecret } from './secret-hash.js';
import { SlidingWindow, windowFull } from '../util/sliding-window.js';
import { newSessionToken } from './session-token.js';

export const SESSION_TTL_MS = 24 * 3600 * 1000;
export const SESSION_KEY_TTL_MS = 24 * 3600 * 1000;
export const LEGACY_KEY_REMOVED_IN = '1.287.7';

export interface IdentityRecord {
  zid: string;
  /** 'remote': an identity whose home is another node, known here from its signed assertion. */
  kind: 'password' | 'zk' | 'remote';
  email?: string;
  password_hash?: string;
  /** ZK flow: scrypt of the client's equation digest; the equation never reaches the server. */
  hash?: string;
  salt: string;
  /** log2 of scrypt's N the hash (password_hash or hash) was made with; absent: 14 (secret-hash.ts). */
  scrypt_cost?: number;
  home: string;
  default_machine?: string;
  created_unix_ms: number;
}

/**
 * What a home node tells the mesh about its identities (svc/identity/1): key digests with their records, the identity's
 * home and default machine, and a v3 identity's login verifier. Keys and password hashes never leave the home.
 */
/** A default machine's slug, and the hex of its owner's zid it carries. */
const DEFAULT_SLUG = new RegExp(`^${DEFAULT_SLUG_PREFIX}([0-9a-f]{16}|[0-9a-f]{32})$`);
/** Identities read under one slug's zid prefix (two sharing 64 bits are already unlikely). */
const DEFAULT_OWNER_SCAN = 8;

/** The record of an identity's default machine as registration writes it, homed at `home`. */
function defaultMachine(zid: string, slug: string, home: string, createdUnixMs: number): MachineRecord {
  return {
    slug,
    owner: zid,
    genesis_svcond: 0,
    is_public: false,
    key_digest: '',
    roles: { [zid]: 'owner' },
    inject_agent_rail: false,
    inject_pulse_orb: false,
    home,
    created_unix_ms: createdUnixMs,
  };
}

/**
 * A v3 identity's login verifier: scrypt of its equation's digest, with the salt and cost it was made with. It travels
 * with the identity so that the node a failover makes its home checks logins (docs/decisions.md, "Identities, keys and
 * access": it tells nothing the public zid does not, which is half of that digest).
 */
export interface LoginVerifier {
  hash: string;
  salt: string;
  scrypt_cost: number;
}

export interface IdentityAssertion {
  digest: string;
  key: KeyRecord;
  identity: { zid: string; home: string; default_machine: string | null; verifier?: LoginVerifier } | null;
}

/** The identity part of an assertion made by its home: with the login verifier this node holds for a v3 identity. */
function assertedIdentity(ident: IdentityRecord): NonNullable<IdentityAssertion['identity']> {
  const out: NonNullable<IdentityAssertion['identity']> = { zid: ident.zid, home: ident.home, default_machine: ident.default_machine ?? null };
  const verifier = verifierOf(ident);
  if (verifier !== null) out.verifier = verifier;
  return out;
}

/** The login verifier of a v3 identity's record (registered here, or carried by its assertion), else null. */
function verifierOf(ident: IdentityRecord): LoginVerifier | null {
  if ((ident.kind !== 'zk' && ident.kind !== 'remote') || ident.hash === undefined || ident.salt === '') return null;
  return { hash: ident.hash, salt: ident.salt, scrypt_cost: ident.scrypt_cost ?? DEFAULT_SCRYPT_COST };
}

interface SessionRecord {
  zid: string;
  expires_unix_ms: number;
}

/** Who is calling, as resolved from a key. */
export interface KeyPrincipal {
  key: KeyRecord;
}

export interface IdentityDeps {
  store: Store;
  clock: Clock;
  chain: ChainService;
  nodeId: () => string;
  kernelVersion: string;
  /** Secret used to derive decoy salts for unknown emails (no account enumeration through /salt). */
  saltSecret: Buffer;
  /** log2 of scrypt's N for the secrets of identities registered here (config identity.scryptCost). */
  scryptCost?: number;
  /** Key records kept in memory (limits.identityCacheMax; default 10 000). */
  keyCacheMax?: number;
  /** Live sk_ and sk_test_ keys one identity may hold here (limits.keysPerIdentity; default 1000). */
  keysPerIdentity?: number;
  /** Key records of identities homed elsewhere that gossip may add here (limits.remoteKeysMax; default 100 000). */
  remoteKeysMax?: number;
}

/** Where an assertion comes from: gossip (bounded by remoteKeysMax) or the answer to this node's own question. */
export type AssertionSource = 'gossip' | 'lookup';

/**
 * Why `minter` may not mint a `kind` key expiring at `expiresMs` (null: never), or null when it may. A key handed out
 * for a while (a session key, a key with ttl_seconds) would otherwise mint a permanent one and outlive its grant, and
 * a test key would mint a production one.
 */
export function mintFault(minter: KeyRecord, kind: string, expiresMs: number | null): string | null {
  if (minter.kind === 'sk_test' && kind !== 'sk_test') return `a test key (${minter.key_id}) mints only sk_test keys`;
  const until = minter.expires_unix_ms;
  if (until !== null && (expiresMs === null || expiresMs > until))
    return `a key that expires (${minter.key_id}, at ${new Date(until).toISOString()}) mints only keys that expire no later: give ttl_seconds`;
  return null;
}

const expiresAt = (k: KeyRecord): string | null => (k.expires_unix_ms === null ? null : new Date(k.expires_unix_ms).toISOString());

export type AssertionSink = (assertions: IdentityAssertion[]) => void;
/**
 * Ask other nodes for a key minted elsewhere (by digest) or an identity homed elsewhere (by zid); resolves to a verified
 * assertion and its signer that `accept` took (each answer is offered to it until one is), or null.
 */
export type RemoteLookup = (
  name: string,
  accept?: (found: { assertion: unknown; sender: string }) => Promise<boolean>,
  /** Called before a null that is not every peer's word: a peer failed or timed out (the home may be among them). */
  unanswered?: () => void,
) => Promise<{ assertion: unknown; sender: string } | null>;
/** Whether a node's claim to be the home of an identity not known here stands (mesh/home-corroboration.ts). */
export type HomeClaimCheck = (zid: string, home: string) => Promise<boolean>;

/** How long a name every peer asked said it did not know is not asked again. */
const NEGATIVE_LOOKUP_MS = 30_000;
/** How long a name is not asked again when a peer did not answer (a slow or restarting home): soon asked again. */
const UNANSWERED_LOOKUP_MS = 2_000;
/** Questions about unknown keys and identities one caller address may send the peers a minute; beyond, 429 without asking. */
export const KEY_QUESTIONS_PER_MINUTE = 30;
/** Questions to the peers in flight at once, node-wide; beyond, a new one is 429 without asking. */
export const PEER_QUESTIONS_MAX = 64;
/** How long a revocation is asserted again (reannounceRevocations): a node cut off for less learns it when it is back. */
export const REVOCATION_REANNOUNCE_MS = 24 * 3600_000;
/** Where the node keeps when it last heard the mesh (noteMeshHeard), and how often that is written. */
const MESH_HEARD_KEY = 'mesh-heard-at';
const MESH_HEARD_RESOLUTION_MS = 60_000;
/** Key records of keys minted elsewhere that gossip may add, unless configured (limits.remoteKeysMax). */
export const REMOTE_KEYS_DEFAULT = 100_000;
/** Deletions committed per batch when remote key records are forgotten. */
const FORGET_CHUNK_OPS = 512;
/** Revocations asserted again per run, at most (the next run reads on from there). */
const REVOCATIONS_PER_RUN = 256;
/** Embed keys one machine's listing reads at most. */
export const EMBED_KEYS_MAX = 10_000;
const EMBED_INDEX_VERSION_KEY = 'embed-key-index-v1';
const IDENTITY_KEY_INDEX_VERSION_KEY = 'identity-key-index-v2';
/** Keys one identity's listing reads at most. */
export const IDENTITY_KEYS_MAX = 10_000;
/** A key's last use is written at most once per this many ms (a write per request would be one per request). */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** A key as its identity lists it: what it is and when it was used, never the secret nor its digest. */
export interface KeyListing {
  key: KeyRecord;
  last_used_unix_ms: number | null;
}

function nowMs(clock: Clock): number {
  return Number(clock.nowNs() / 1_000_000n);
}

function invalidKey(key: string, reason: string, revokedAt: string | null = null): ServiceError {
  return new ServiceError(401, 'SVC_INVALID_KEY', `API key rejected: ${reason}`, { key_id: keyKind(key) ? keyId(key) : null, revoked_at: revokedAt, reason });
}

export class IdentityService {
  private readonly identities: Sublevel;
  private readonly emails: Sublevel;
  private readonly keys: Sublevel;
  private readonly sessions: Sublevel;
  /** A machine's embed keys: `${slug}!${key_id}` → the key's digest (list and revoke by key id; no secret in it). */
  private readonly embedKeys: Sublevel;
  /**
   * An identity's keys known here (minted here, or asserted by its home): `${zid}!${key_id}` → the key's digest (list
   * and revoke by key id).
   */
  private readonly identityKeys: Sublevel;
  /**
   * When each key minted here or of an identity homed here was last presented here: digest → ms, at
   * LAST_USED_RESOLUTION_MS.
   */
  private readonly lastUsed: Sublevel;
  /** One key mint at a time per identity, so two cannot both pass the cap (checkKeyCap). */
  private readonly mintLocks = new KeyedLock();
  /** Keys revoked here within REVOCATION_REANNOUNCE_MS: digest → when (the marker is put in the revocation's batch). */
  private readonly recentRevocations: Sublevel;
  /** Markers beside the index versions (chain_meta, store/backfill.ts): when the mesh was last heard. */
  private readonly meta: Sublevel;
  private readonly revocationCursor = new RangeCursor();
  /** The last-use time last written per digest, so a busy key is written once per resolution. */
  private readonly lastUseWritten: BoundedMap<string, number>;
  /** Key records by digest: a hot read on every authenticated request. Bounded; writes go through it. */
  private readonly keyCache: BoundedMap<string, KeyRecord>;
  /**
   * Identity records by zid (null: none), frozen: a keyed request reads its identity's (its home), and a store read
   * costs the main thread ~60 µs. Every write of an identity record is followed by forget (this service's own, and a
   * home move's batch through identityRecordWritten), so a read in flight across a write is made again.
   */
  private readonly identityCache: LruMap<string, Readonly<IdentityRecord> | null>;
  private assertionSink: AssertionSink | null = null;
  private remoteLookup: RemoteLookup | null = null;
  private remoteIdentityLookup: RemoteLookup | null = null;
  private homeClaimCheck: HomeClaimCheck | null = null;
  /** Digests and zids no peer knew, so a stream of bad keys or zids does not fan out to the mesh. */
  private readonly unknownRemote = new MissedLookups({ max: 10_000, nowMs: () => this.now(), peersLearnt: () => this.peersLearnt() });
  /** How many peers the mesh has learnt (set with the lookups): a miss stands only until a new peer is heard. */
  private peersLearnt: () => number = () => 0;
  /** Questions to the peers in flight, by digest or zid (askPeersOnce). */
  private readonly asking = new Map<string, Promise<unknown>>();
  /** Slugs, emails and zids being created right now (see claims.ts). */
  private readonly claims = new Claims();
  /**
   * Failed password logins by email: past 10 in 15 minutes, a login for it is refused before its secret is hashed,
   * from any address (decisions.md, "Sign-ins and registrations are bounded three ways").
   */
  private readonly failedLogins = new SlidingWindow(10, 15 * 60_000, () => this.now());
  /**
   * Questions to the peers about keys and identities not known here, by the caller's address that brought each: a name
   * the node does not know is asked of every peer, so a stream of made-up ones would fan out to the whole mesh
   * (decisions.md, "Late joiners and lost gossip").
   */
  private readonly questionsByAddress = new SlidingWindow(KEY_QUESTIONS_PER_MINUTE, 60_000, () => this.now());
  /** Machines with their admin keys: identities' default ones at registration, and further ones (createMachine). */
  private readonly machines: MachineCreation;
  /**
   * Key records held here of keys minted elsewhere (counted at start, kept as assertions add and forgetting removes
   * them): gossip adds one only below remoteKeysMax, since a member can assert keys of identities it invents.
   */
  private remoteKeys = 0;

  /** log2 of scrypt's N for secrets hashed here now. */
  private get scryptCost(): number {
    return this.deps.scryptCost ?? DEFAULT_SCRYPT_COST;
  }

  constructor(private readonly deps: IdentityDeps) {
    this.keyCache = new BoundedMap(deps.keyCacheMax ?? 10_000);
    this.identityCache = new LruMap(deps.keyCacheMax ?? 10_000);
    this.identities = deps.store.sub('identities');
    this.emails = deps.store.sub('emails');
    this.keys = deps.store.sub('keys');
    this.sessions = deps.store.sub('sessions');
    this.embedKeys = deps.store.sub('embed_keys');
    this.identityKeys = deps.store.sub('identity_keys');
    this.lastUsed = deps.store.sub('key_last_used');
    this.recentRevocations = deps.store.sub('key_revocations_recent');
    this.meta = deps.store.sub('chain_meta');
    this.lastUseWritten = new BoundedMap(deps.keyCacheMax ?? 10_000);
    this.machines = new MachineCreation({
      store: deps.store,
      chain: deps.chain,
      nodeId: deps.nodeId,
      nowMs: () => this.now(),
      adminKey: (zid, slug) => this.adminKey(zid, slug),
      slugClaims: { take: (slug) => this.claims.take('slug', slug), conflict: (slug) => conflict('slug', slug) },
    });
  }

  /** The op placing a key in its identity's list (keys without an identity, demo keys, are in no list). */
  private indexOp(digest: string, rec: KeyRecord): Op[] {
    return rec.zid ? [{ type: 'put', sub: this.identityKeys, key: `${rec.zid}!${rec.key_id}`, value: digest }] : [];
  }

  private cacheKey(digest: string, rec: KeyRecord): void {
    this.keyCache.set(digest, rec);
  }

  private now(): number {
    return nowMs(this.deps.clock);
  }

  /** Where assertions about identities homed here go (the mesh); set by the composition root. */
  onAssertions(sink: AssertionSink): void {
    this.assertionSink = sink;
  }

  private assert(digest: string, key: KeyRecord, identity: IdentityAssertion['identity'] = null): void {
    if (this.asserted(key, identity) && this.assertionSink) this.assertionSink([{ digest, key, identity }]);
  }

  /**
   * Whether the mesh is told of a key: an identity's, minted here or of an identity homed here (`identity`: one this
   * node took over, whose keys were minted at its old home); embed keys are valid at their machine's home only.
   */
  private asserted(key: KeyRecord, identity: IdentityAssertion['identity'] = null): boolean {
    const self = this.deps.nodeId();
    return Boolean(key.zid) && key.kind !== 'zsm_pub' && (key.home === self || (identity?.zid === key.zid && identity.home === self));
  }

  /**
   * Assert a key written here with its identity as the store holds it now. A failed read sends nothing: a peer that
   * needs the key or the identity asks this node for it (findIdentity, lookupRemote).
   */
  private async announceHomed(digest: string, key: KeyRecord): Promise<void> {
    const identity = await this.homedIdentityOf(key).catch(() => undefined);
    if (identity !== undefined) this.assert(digest, key, identity);
  }

  /** A key's identity as its assertion names it, when homed here (its home asserts the key); else null. */
  private async homedIdentityOf(key: KeyRecord): Promise<IdentityAssertion['identity']> {
    const ident = key.zid ? await this.getIdentity(key.zid) : undefined;
    if (ident === undefined || ident.home !== this.deps.nodeId()) return null;
    return assertedIdentity(ident);
  }

  /**
   * Note whether this node hears the mesh now (a ticker's run, and at start with `hearing` false). A node that went
   * longer than REVOCATION_REANNOUNCE_MS without hearing it (stopped, or cut off) may have missed revocations that no
   * home asserts any more: the live records it holds of keys of identities homed elsewhere are forgotten, to be looked
   * up on their homes when next presented (as a late joiner does). Returns the records forgotten.
   */
  async noteMeshHeard(hearing: boolean): Promise<number> {
    const now = this.now();
    const last = await this.deps.store.get<number>(this.meta, MESH_HEARD_KEY);
    const away = last !== undefined && now - last > REVOCATION_REANNOUNCE_MS;
    if (!away && (!hearing || (last !== undefined && now - last < MESH_HEARD_RESOLUTION_MS))) return 0;
    const forgotten = away ? await this.forgetRemoteKeys() : 0;
    // After forgetting, every remote key record held is as of now: the next absence is counted from here.
    await this.deps.store.commit([{ type: 'put', sub: this.meta, key: MESH_HEARD_KEY, value: now }]);
    return forgotten;
  }

  /** At start: count the key records held of keys minted elsewhere (the gossip bound, applyAssertion). */
  async countRemoteKeys(): Promise<number> {
    const self = this.deps.nodeId();
    let n = 0;
    for await (const rec of this.keys.values() as AsyncIterable<KeyRecord>) if (rec.home !== self) n++;
    this.remoteKeys = n;
    return n;
  }

  /** Key records held of keys minted elsewhere, and how many gossip may add (applyAssertion). */
  remoteKeyCount(): { held: number; max: number } {
    return { held: this.remoteKeys, max: this.deps.remoteKeysMax ?? REMOTE_KEYS_DEFAULT };
  }

  /** Delete the live key records of identities homed elsewhere, in chunks (a crash before the end: the next start runs it again). */
  private async forgetRemoteKeys(): Promise<number> {
    const self = this.deps.nodeId();
    const homes = new Map<string, string | undefined>();
    let ops: Op[] = [];
    let forgotten = 0;
    for await (const [digest, rec] of this.keys.iterator() as AsyncIterable<[string, KeyRecord]>) {
      if (rec.home === self || rec.revoked_unix_ms !== null) continue;
      if (rec.zid) {
        if (!homes.has(rec.zid)) homes.set(rec.zid, (await this.getIdentity(rec.zid))?.home);
        // A key minted at an identity's earlier home, of an identity homed here now (a failover): this node speaks for it.
        if (homes.get(rec.zid) === self) continue;
      }
      ops.push({ type: 'del', sub: this.keys, key: digest });
      if (rec.zid) ops.push({ type: 'del', sub: this.identityKeys, key: `${rec.zid}!${rec.key_id}` });
      if (rec.kind === 'zsm_pub' && rec.slug) ops.push({ type: 'del', sub: this.embedKeys, key: `${rec.slug}!${rec.key_id}` });
      this.keyCache.delete(digest);
      forgotten++;
      this.remoteKeys--;
      if (ops.length >= FORGET_CHUNK_OPS) {
        await this.deps.store.commit(ops);
        ops = [];
      }
    }
    if (ops.length > 0) await this.deps.store.commit(ops);
    return forgotten;
  }

  /** The ops storing a revoked key, with its marker for reannounceRevocations when the mesh is told of it. */
  private revocationOps(digest: string, revoked: KeyRecord, identity: IdentityAssertion['identity'] = null): Op[] {
    const ops: Op[] = [{ type: 'put', sub: this.keys, key: digest, value: revoked }];
    if (this.asserted(revoked, identity)) ops.push({ type: 'put', sub: this.recentRevocations, key: digest, value: revoked.revoked_unix_ms });
    return ops;
  }

  /**
   * Assert again the revocations of keys homed here made within REVOCATION_REANNOUNCE_MS (a ticker's run): gossip
   * is not sent again, so a node cut off or stopped when a revocation went out would go on taking the key for what it
   * serves itself. A page of markers a run; a marker past the window is deleted.
   */
  async reannounceRevocations(): Promise<number> {
    const now = this.now();
    let page: { key: string; value: number }[] = [];
    await this.revocationCursor.next(async (limit, from) => {
      page = await this.deps.store.range<number>(this.recentRevocations, { gte: from, limit });
      return page.map((m) => m.key);
    }, REVOCATIONS_PER_RUN);
    const done: Op[] = [];
    let sent = 0;
    for (const { key: digest, value: revokedAt } of page) {
      const rec = now - revokedAt > REVOCATION_REANNOUNCE_MS ? undefined : await this.deps.store.get<KeyRecord>(this.keys, digest);
      if (rec === undefined || rec.revoked_unix_ms === null) done.push({ type: 'del', sub: this.recentRevocations, key: digest });
      else {
        this.assert(digest, rec, await this.homedIdentityOf(rec));
        sent++;
      }
    }
    if (done.length > 0) await this.deps.store.commit(done);
    return sent;
  }

  /** How unknown keys are looked up on other nodes (the mesh); set by the composition root. */
  onRemoteLookup(lookup: RemoteLookup, identityLookup?: RemoteLookup, peersLearnt?: () => number): void {
    this.remoteLookup = lookup;
    this.remoteIdentityLookup = identityLookup ?? null;
    this.peersLearnt = peersLearnt ?? (() => 0);
  }

  /** How a claim to be the home of an identity not known here is weighed before it is learnt; set by the composition root. */
  onHomeClaim(check: HomeClaimCheck): void {
    this.homeClaimCheck = check;
  }

  /** The assertion for a key minted here or of an identity homed here, by digest (what a peer asks for), or null. */
  async assertionFor(digest: string): Promise<IdentityAssertion | null> {
    const rec = this.keyCache.get(digest) ?? (await this.deps.store.get<KeyRecord>(this.keys, digest));
    if (!rec || !rec.zid) return null;
    const ident = await this.getIdentity(rec.zid);
    const self = this.deps.nodeId();
    if (rec.home !== self && ident?.home !== self) return null;
    return { digest, key: rec, identity: ident ? assertedIdentity(ident) : { zid: rec.zid, home: self, default_machine: null } };
  }

  /**
   * The assertion of an identity homed here, by zid (what a peer that missed its gossip asks for): one of its keys
   * (minted here, or at its home before a failover), with the identity; null when it is not homed here or has none.
   */
  async identityAssertionFor(zid: string): Promise<IdentityAssertion | null> {
    const ident = await this.getIdentity(zid);
    // Homed here: registered here, or taken over (a remote record whose home a failover moved here).
    if (!ident || ident.home !== this.deps.nodeId()) return null;
    const first = await this.deps.store.range<string>(this.identityKeys, { gte: `${zid}!`, lt: `${zid}!~`, limit: 1 });
    const digest = first[0]?.value;
    return digest === undefined ? null : this.assertionFor(digest);
  }

  /**
   * An identity known here, or else learnt from its home (a late joiner, or gossip lost while the mesh re-formed):
   * its assertion asked of the peers and applied as gossip's would be.
   */
  async findIdentity(zid: string, asker?: string): Promise<IdentityRecord | undefined> {
    const known = await this.getIdentity(zid);
    const lookup = this.remoteIdentityLookup;
    if (known !== undefined || lookup === null) return known;
    return this.askPeersOnce(
      zid,
      (accept, unanswered) => lookup(zid, accept, unanswered),
      () => this.getIdentity(zid),
      this.questionBudget(asker),
    );
  }

  private async lookupRemote(digest: string, asker: string | undefined): Promise<KeyRecord | undefined> {
    const lookup = this.remoteLookup;
    if (lookup === null) return undefined;
    return this.askPeersOnce(
      digest,
      (accept, unanswered) => lookup(digest, accept, unanswered),
      async () => this.keyCache.get(digest) ?? (await this.deps.store.get<KeyRecord>(this.keys, digest)),
      this.questionBudget(asker),
    );
  }

  /** What a new question to the peers costs a caller's address (nothing when no caller brought it). */
  private questionBudget(asker: string | undefined): (() => void) | undefined {
    if (asker === undefined) return undefined;
    return () => {
      const heldUntil = this.questionsByAddress.heldUntil(asker);
      if (heldUntil !== null) {
        const message = `too many keys or identities this node does not know from this address: ${KEY_QUESTIONS_PER_MINUTE} a minute are looked up on the mesh`;
        throw windowFull(this.questionsByAddress, heldUntil, this.now(), message, 'address');
      }
      this.questionsByAddress.add(asker);
    };
  }

  /**
   * Ask the peers for a key's digest or a zid, apply the first assertion found that applies (a claim refused, a liar's,
   * does not end the question), and answer what this node holds then (`held`: gossip may have brought it meanwhile).
   * Concurrent misses of one name share one question; a name every peer asked said it did not know is not asked again
   * for 30 s, one some peer did not answer (failed, timed out) for 2 s, and either is asked again once a peer is learnt.
   * A new question is sent only while fewer than PEER_QUESTIONS_MAX are in flight, and once `admit` (the asker's
   * budget) lets it; otherwise 429, nothing asked.
   */
  private askPeersOnce<T>(
    name: string,
    ask: (accept: (found: { assertion: unknown; sender: string }) => Promise<boolean>, unanswered: () => void) => ReturnType<RemoteLookup>,
    held: () => Promise<T | undefined>,
    admit?: () => void,
  ): Promise<T | undefined> {
    if (this.unknownRemote.stands(name)) return Promise.resolve(undefined);
    // A digest (64 hex) and a zid (zid_…) never share a name: the question in flight is of the same kind.
    let pending = this.asking.get(name) as Promise<T | undefined> | undefined;
    if (pending === undefined) {
      if (this.asking.size >= PEER_QUESTIONS_MAX) {
        return Promise.reject(
          new ServiceError(429, 'SVC_RATE_LIMIT', 'too many questions to the mesh in flight on this node: try again in a second', {
            limit: PEER_QUESTIONS_MAX,
            window_seconds: 1,
            retry_after_seconds: 1,
            reset_at: new Date(this.now() + 1000).toISOString(),
            scope: 'node',
          }),
        );
      }
      try {
        admit?.();
      } catch (err) {
        return Promise.reject(err as Error);
      }
      pending = (async () => {
        let partial = false;
        await ask(
          (found) => this.applyAssertion(found.assertion, found.sender),
          () => (partial = true),
        );
        const holding = await held();
        if (holding === undefined) this.unknownRemote.missed(name, partial ? UNANSWERED_LOOKUP_MS : NEGATIVE_LOOKUP_MS);
        return holding;
      })().finally(() => this.asking.delete(name));
      this.asking.set(name, pending);
    }
    return pending;
  }

  /**
   * Apply an assertion received from the mesh. `sender` is the verified signer of the event: only the home node
   * may assert its identities' keys. A revocation wins over an earlier live record; nothing overwrites a record
   * homed here. Returns whether anything was written. From gossip, a key not held here is refused once the node
   * holds remoteKeysMax keys minted elsewhere (507 MESH_KEYS_FULL): peer ids cost nothing, so a member could assert
   * keys of identities it invents until every node's disk is full. Such a key is asked of its home when presented
   * (lookupRemote), which a caller's address budget bounds; a record held here is still updated (a revocation).
   */
  async applyAssertion(a: unknown, sender: string, source: AssertionSource = 'lookup'): Promise<boolean> {
    if (!isAssertion(a) || sender === this.deps.nodeId()) return false;
    // A node speaks for the keys of the identities homed at itself: of an identity known here, its home as this node
    // knows it (after a failover, the new home, for the keys minted at the old one too); else the key's home or the
    // home the assertion names for its identity (a failover's new home, to a node that missed both the key and the move).
    const known = await this.getIdentity(a.key.zid!);
    const named = a.identity?.zid === a.key.zid ? a.identity.home : null;
    if (known ? known.home !== sender : a.key.home !== sender && named !== sender) return false;
    const existing = this.keyCache.get(a.digest) ?? (await this.deps.store.get<KeyRecord>(this.keys, a.digest));
    if (existing && existing.revoked_unix_ms !== null && a.key.revoked_unix_ms === null) return false;
    // An identity not known here is learnt as its assertion names it, homed at the sender.
    const newIdentity = known === undefined && named === sender;
    // A v3 identity known here without its login verifier (learnt before its home sent one) takes the home's.
    const verifier = a.identity?.zid === a.key.zid ? (a.identity.verifier ?? null) : null;
    const learnsVerifier = known?.kind === 'remote' && verifier !== null && verifierOf(known) === null;
    // An assertion heard again (a revocation's home re-asserts it for a day) writes nothing.
    if (existing && !newIdentity && !learnsVerifier && canonicalJson(existing) === canonicalJson(a.key)) return false;
    const max = this.deps.remoteKeysMax ?? REMOTE_KEYS_DEFAULT;
    if (source === 'gossip' && existing === undefined && this.remoteKeys >= max) {
      throw new ServiceError(
        507,
        'MESH_KEYS_FULL',
        `this node holds its maximum of ${max} keys minted elsewhere learnt from gossip: ${a.key.key_id} is asked of its home when presented`,
      );
    }
    // A claim to an identity not known here stands only if the peers that know it do not name another home.
    if (known === undefined && this.homeClaimCheck !== null && !(await this.homeClaimCheck(a.key.zid!, sender))) return false;
    // Indexed under its identity as a key minted here is: the identity's home lists and revokes it after a failover.
    const ops: Op[] = [{ type: 'put', sub: this.keys, key: a.digest, value: a.key }, ...this.indexOp(a.digest, a.key)];
    if (a.identity && newIdentity) {
      const stub: IdentityRecord = {
        zid: a.identity.zid,
        kind: 'remote',
        salt: '',
        home: sender,
        default_machine: a.identity.default_machine ?? undefined,
        created_unix_ms: this.now(),
        ...(verifier ?? {}),
      };
      ops.push({ type: 'put', sub: this.identities, key: a.identity.zid, value: stub });
    } else if (learnsVerifier) ops.push({ type: 'put', sub: this.identities, key: known.zid, value: { ...known, ...verifier } });
    await this.deps.store.commit(ops);
    if (existing === undefined && a.key.home !== this.deps.nodeId()) this.remoteKeys++;
    if (newIdentity || learnsVerifier) this.identityCache.forget(a.key.zid!);
    this.cacheKey(a.digest, a.key);
    return true;
  }

  /**
   * The op moving a known identity's home to `home` (a custody failover, custody/home-change.ts): its record says the
   * new home, so authentication and forwarding follow it. Its secrets, where this node holds them, stay as they are.
   */
  homeMoveOp(ident: IdentityRecord, home: string): Op {
    return { type: 'put', sub: this.identities, key: ident.zid, value: { ...ident, home } };
  }

  /**
   * The ops moving a known identity's home to `home`, its default machine with it (architecture.md §5): the identity
   * record, and the machine's record naming the new home. A node that becomes the home and holds no record of the
   * machine writes the one every registration writes (private, the identity its owner); its audit rows ride with the
   * identity's entries (custody/ledger-ops.ts), so the new home holds them.
   */
  async homeMoveOps(ident: IdentityRecord, home: string): Promise<Op[]> {
    const ops = [this.homeMoveOp(ident, home)];
    const slug = ident.default_machine ?? this.defaultSlug(ident.zid);
    const held = await this.deps.chain.getMachine(slug);
    if (held !== undefined && held.owner === ident.zid) {
      if (held.home !== home) ops.push(...this.deps.chain.machineMoveOps(held, { ...held, home }));
    } else if (held === undefined && home === this.deps.nodeId()) {
      ops.push(...this.deps.chain.machineMoveOps(null, defaultMachine(ident.zid, slug, home, ident.created_unix_ms)));
    }
    return ops;
  }

  /**
   * The identity whose default machine `slug` is, when this node knows it: a default slug (m- and 16 or 32 hex) names
   * the first hex of its zid, so the identities under that prefix are read, and the one whose default machine it is
   * answers. Its home serves the machine.
   */
  async ownerOfDefaultMachine(slug: string): Promise<IdentityRecord | undefined> {
    const hex = DEFAULT_SLUG.exec(slug)?.[1];
    if (hex === undefined) return undefined;
    const under = await this.deps.store.range<IdentityRecord>(this.identities, { gte: `zid_${hex}`, lt: `zid_${hex}~`, limit: DEFAULT_OWNER_SCAN });
    return under.map((r) => r.value).find((i) => (i.default_machine ?? this.defaultSlug(i.zid)) === slug);
  }

  async getIdentity(zid: string): Promise<IdentityRecord | undefined> {
    const held = await this.identityCache.load(zid, async () => {
      const rec = await this.deps.store.get<IdentityRecord>(this.identities, zid);
      return rec === undefined ? null : Object.freeze(rec);
    });
    return held ?? undefined;
  }

  /** An identity's record was written by a batch of another part (a custody home move): the next read takes it. */
  identityRecordWritten(zid: string): void {
    this.identityCache.forget(zid);
  }

  /** v1: {email, password} → {zid, message}. */
  async register(email: string, password: string): Promise<{ zid: string; message: string }> {
    const normalised = email.trim().toLowerCase();
    // Claimed before the first await: of concurrent registrations of one email, one goes on.
    const claims = [this.claims.take('email', normalised)];
    try {
      if (await this.deps.store.get(this.emails, normalised)) throw conflict('email', normalised);
      const salt = await this.saltFor(normalised, true);
      const hash = (await hashSecret(password, salt, this.scryptCost)).toString('hex');
      const zid = `zid_${randomBytes(16).toString('hex')}`;
      const slug = await this.claimDefaultSlug(zid, 'email', claims);
      const record: IdentityRecord = {
        zid,
        kind: 'password',
        email: normalised,
        password_hash: hash,
        salt,
        scrypt_cost: this.scryptCost,
        home: this.deps.nodeId(),
        default_machine: slug,
        created_unix_ms: this.now(),
      };
      const { ops } = this.machines.newMachine(zid, slug, 0);
      await this.deps.store.commit([
        { type: 'put', sub: this.identities, key: zid, value: record },
        { type: 'put', sub: this.emails, key: normalised, value: zid },
        ...ops,
      ]);
      this.identityCache.forget(zid);
      this.deps.chain.machineWritten(slug);
      return { zid, message: 'identity registered; log in to obtain a session' };
    } finally {
      // Written (the store answers for the names now) or failed (they are free again).
      for (const c of claims) c.release();
    }
  }

  /**
   * The salt for client-side hashing. Registered emails get their stored salt; unknown emails a stable decoy
   * derived from a node secret, so the route does not reveal which emails exist.
   */
  async saltFor(email: string, fresh = false): Promise<string> {
    const normalised = email.trim().toLowerCase();
    if (fresh) return randomBytes(16).toString('hex');
    const zid = await this.deps.store.get<string>(this.emails, normalised);
    if (zid) {
      const rec = await this.getIdentity(zid);
      if (rec) return rec.salt;
    }
    return createHmac('sha256', this.deps.saltSecret).update(`salt:${normalised}`).digest('hex').slice(0, 32);
  }

  /** v1 login: verifies the password (constant time) and opens a session; returns the session token. */
  async login(email: string, password: string): Promise<{ zid: string; token: string; expires_unix_ms: number }> {
    const normalised = email.trim().toLowerCase();
    // Known and unknown emails are counted alike, so the refusal tells nothing about which exist.
    const heldUntil = this.failedLogins.heldUntil(normalised);
    if (heldUntil !== null) {
      throw windowFull(this.failedLogins, heldUntil, this.now(), 'too many failed logins for this identity: 10 in 15 minutes', 'identity');
    }
    const zid = await this.deps.store.get<string>(this.emails, normalised);
    const rec = zid ? await this.getIdentity(zid) : undefined;
    // Hash even for unknown emails so timing does not reveal which emails exist.
    const salt = rec?.salt ?? (await this.saltFor(normalised));
    const hash = await hashSecret(password, salt, rec?.scrypt_cost ?? (rec ? DEFAULT_SCRYPT_COST : this.scryptCost));
    const stored = rec?.password_hash ? Buffer.from(rec.password_hash, 'hex') : Buffer.alloc(32);
    if (!rec || !rec.password_hash || !timingSafeEqual(hash, stored)) {
      this.failedLogins.add(normalised);
      throw new ServiceError(401, 'SVC_INVALID_CREDENTIALS', 'email or password is wrong');
    }
    this.failedLogins.clear(normalised);
    return this.openSession(rec.zid);
  }

  private async openSession(zid: string): Promise<{ zid: string; token: string; expires_unix_ms: number }> {
    const token = newSessionToken(zid);
    const expires = this.now() + SESSION_TTL_MS;
    await this.deps.store.commit([
      { type: 'put', sub: this.sessions, key: sha256Hex(token), value: { zid, expires_unix_ms: expires } satisfies SessionRecord },
    ]);
    return { zid, token, expires_unix_ms: expires };
  }

  /** {valid, zid} for a session token; valid false (never an error) when missing, unknown or expired. */
  async verifySession(token: string | undefined): Promise<{ valid: boolean; zid: string | null; expiresAt: string | null }> {
    if (!token) return { valid: false, zid: null, expiresAt: null };
    const rec = await this.deps.store.get<SessionRecord>(this.sessions, sha256Hex(token));
    if (!rec || rec.expires_unix_ms <= this.now()) return { valid: false, zid: null, expiresAt: null };
    return { valid: true, zid: rec.zid, expiresAt: new Date(rec.expires_unix_ms).toISOString() };
  }

  async logout(token: string): Promise<void> {
    await this.deps.store.commit([{ type: 'del', sub: this.sessions, key: sha256Hex(token) }]);
  }

  /**
   * 409 when the identity holds keysPerIdentity live sk_ and sk_test_ keys here. Its index lists revoked and expired
   * keys too, so the records are read only once the index holds as many entries as the cap.
   */
  private async checkKeyCap(zid: string): Promise<void> {
    const cap = this.deps.keysPerIdentity ?? 1000;
    const listed = await this.deps.store.range<string>(this.identityKeys, { gte: `${zid}!sk_`, lt: `${zid}!sk_~` });
    if (listed.length < cap) return;
    const records = await this.deps.store.getMany<KeyRecord>(
      this.keys,
      listed.map((e) => e.value),
    );
    const now = this.now();
    const live = records.filter((r) => r && r.revoked_unix_ms === null && (r.expires_unix_ms === null || r.expires_unix_ms > now)).length;
    if (live >= cap) throw capReached('live API keys', cap, live, 'revoking one (DELETE /api/auth/keys/:key_id) frees a slot');
  }

  /** A new random key of `kind` (the draw unlistedKey makes; a test puts chosen keys here). */
  drawKey(kind: KeyKind): string {
    return mintKey(kind);
  }

  /**
   * A new key whose id is not yet in any of the `lists` (sublevel, owner: entries `${owner}!${key_id}`). A key id is
   * 32 bits of the key's digest, and a list keeps one key per id: a colliding key would replace the other's entry,
   * leaving a working key that no listing shows and no revocation by id reaches. Re-rolled (1 in 4 billion a try).
   */
  private async unlistedKey(kind: KeyKind, ...lists: [Sublevel, string][]): Promise<string> {
    for (;;) {
      const key = this.drawKey(kind);
      const id = keyId(key);
      const taken = await Promise.all(lists.map(([sub, owner]) => this.deps.store.get(sub, `${owner}!${id}`)));
      if (taken.every((v) => v === undefined)) return key;
    }
  }

  /**
   * Mint a key of the given kind for an identity (shown once; only its digest is stored). `minter`: the key that asks
   * (null for a session), which cannot mint a key that outlives it or ranks above it (mintFault).
   */
  async mintKeyFor(
    zid: string,
    kind: 'sk' | 'sk_test' | 'svc_ak',
    ttlMs: number | null,
    minter: KeyRecord | null = null,
  ): Promise<{ key: string; record: KeyRecord }> {
    const fault = minter ? mintFault(minter, kind, ttlMs === null ? null : this.now() + ttlMs) : null;
    if (fault) throw new ServiceError(403, 'SVC_FORBIDDEN', fault, { key_id: minter!.key_id, expires_at: expiresAt(minter!) });
    if (kind === 'svc_ak' && compareVersions(this.deps.kernelVersion, LEGACY_KEY_REMOVED_IN) >= 0) {
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'legacy svc_ak_ keys were removed in 1.287.7', {
        field: 'kind',
        reason: 'removed',
        allowed: ['sk', 'sk_test'],
      });
    }
    return this.mintLocks.run(zid, () => this.mintWithinCap(zid, kind, ttlMs));
  }

  private async mintWithinCap(zid: string, kind: 'sk' | 'sk_test' | 'svc_ak', ttlMs: number | null): Promise<{ key: string; record: KeyRecord }> {
    await this.checkKeyCap(zid);
    const key = await this.unlistedKey(kind, [this.identityKeys, zid]);
    const now = this.now();
    const record: KeyRecord = {
      key_id: keyId(key),
      kind,
      zid,
      slug: null,
      plan: kind === 'sk_test' ? 'test' : 'standard',
      created_unix_ms: now,
      expires_unix_ms: ttlMs === null ? null : now + ttlMs,
      revoked_unix_ms: null,
      home: this.deps.nodeId(),
    };
    await this.deps.store.commit([{ type: 'put', sub: this.keys, key: keyDigest(key), value: record }, ...this.indexOp(keyDigest(key), record)]);
    const ident = await this.getIdentity(zid);
    this.assert(
      keyDigest(key),
      record,
      ident ? assertedIdentity({ ...ident, home: this.deps.nodeId() }) : { zid, home: this.deps.nodeId(), default_machine: null },
    );
    return { key, record };
  }

  /**
   * A zsm_pub_ embed key for a machine (spec part 5 item 3): read-only, valid on the machine's embed ingest only,
   * shown once (its digest is stored). Not asserted to the mesh: only the machine's home accepts it.
   */
  async mintEmbedKey(zid: string, slug: string): Promise<{ key: string; record: KeyRecord }> {
    const key = await this.unlistedKey('zsm_pub', [this.identityKeys, zid], [this.embedKeys, slug]);
    const record: KeyRecord = {
      key_id: keyId(key),
      kind: 'zsm_pub',
      zid,
      slug,
      plan: 'standard',
      created_unix_ms: this.now(),
      expires_unix_ms: null,
      revoked_unix_ms: null,
      home: this.deps.nodeId(),
    };
    const digest = keyDigest(key);
    // The key and its place in the machine's list, in one batch.
    await this.deps.store.commit([
      { type: 'put', sub: this.keys, key: digest, value: record },
      { type: 'put', sub: this.embedKeys, key: `${slug}!${record.key_id}`, value: digest },
      ...this.indexOp(digest, record),
    ]);
    this.cacheKey(digest, record);
    return { key, record };
  }

  /**
   * Index the embed keys minted before the index existed (once; at start): one pass over the key records, marked
   * done in the chain's meta sublevel so later starts skip it.
   */
  async indexEmbedKeysOnce(): Promise<number> {
    return backfillOnce<KeyRecord>(this.deps.store, {
      key: EMBED_INDEX_VERSION_KEY,
      source: this.keys,
      opsFor: (digest, rec) =>
        rec.kind === 'zsm_pub' && rec.slug ? [{ type: 'put', sub: this.embedKeys, key: `${rec.slug}!${rec.key_id}`, value: digest }] : [],
    });
  }

  /** A machine's embed keys (records only: key id, minted by, times; never the secret nor its digest), oldest id first. */
  async listEmbedKeys(slug: string, limit: number, offset: number): Promise<{ total: number; items: KeyRecord[] }> {
    const entries = await this.deps.store.range<string>(this.embedKeys, { gte: `${slug}!`, lt: `${slug}!~`, limit: EMBED_KEYS_MAX });
    const page = entries.slice(offset, offset + limit);
    const recs = await this.deps.store.getMany<KeyRecord>(
      this.keys,
      page.map((e) => e.value),
    );
    return { total: entries.length, items: recs.filter((r): r is KeyRecord => r !== undefined) };
  }

  /**
   * Place the keys minted before identities' key lists existed in their lists (once; at start): the keys homed
   * here that belong to an identity.
   */
  async indexIdentityKeysOnce(): Promise<number> {
    return backfillOnce<KeyRecord>(this.deps.store, {
      key: IDENTITY_KEY_INDEX_VERSION_KEY,
      source: this.keys,
      opsFor: (digest, rec) => this.indexOp(digest, rec),
    });
  }

  /**
   * An identity's keys known here (at its home: all of them, minted there or at an earlier home), by key id, with their
   * last use here; never the secret nor its digest.
   */
  async listKeys(zid: string): Promise<KeyListing[]> {
    const entries = await this.deps.store.range<string>(this.identityKeys, { gte: `${zid}!`, lt: `${zid}!~`, limit: IDENTITY_KEYS_MAX });
    const digests = entries.map((e) => e.value);
    const [recs, used] = await Promise.all([this.deps.store.getMany<KeyRecord>(this.keys, digests), this.deps.store.getMany<number>(this.lastUsed, digests)]);
    const out: KeyListing[] = [];
    recs.forEach((key, i) => {
      if (key) out.push({ key, last_used_unix_ms: used[i] ?? null });
    });
    return out;
  }

  /**
   * Revoke one of an identity's keys by its key id, at once: the revoked record is stored (401 after a restart),
   * replaces the cached one and is asserted to the mesh, whose nodes apply it (a revocation wins over a live record).
   * Revoking a revoked key answers its record unchanged; 404 when the identity has no key of that id here.
   */
  async revokeKeyOf(zid: string, keyIdText: string): Promise<KeyRecord> {
    const digest = await this.deps.store.get<string>(this.identityKeys, `${zid}!${keyIdText}`);
    const rec = digest === undefined ? undefined : await this.deps.store.get<KeyRecord>(this.keys, digest);
    if (digest === undefined || !rec || rec.zid !== zid)
      throw new ServiceError(404, 'SVC_NOT_FOUND', `this identity has no key ${keyIdText} known to this node`);
    if (rec.revoked_unix_ms !== null) return rec;
    const revoked: KeyRecord = { ...rec, revoked_unix_ms: this.now() };
    const identity = await this.homedIdentityOf(rec);
    await this.deps.store.commit(this.revocationOps(digest, revoked, identity));
    this.cacheKey(digest, revoked);
    this.assert(digest, revoked, identity);
    return revoked;
  }

  /**
   * Note that a key minted here or of an identity homed here was presented now (at most one write per key per
   * LAST_USED_RESOLUTION_MS).
   */
  private async noteUse(digest: string, rec: KeyRecord): Promise<void> {
    if (!rec.zid) return;
    const now = this.now();
    const written = this.lastUseWritten.get(digest);
    if (written !== undefined && now - written < LAST_USED_RESOLUTION_MS) return;
    // A key minted elsewhere is counted where its identity is homed (a failover's new home lists it).
    if (rec.home !== this.deps.nodeId() && (await this.getIdentity(rec.zid))?.home !== this.deps.nodeId()) return;
    this.lastUseWritten.set(digest, now);
    await this.deps.store.commit([{ type: 'put', sub: this.lastUsed, key: digest, value: now }]);
  }

  /**
   * Revoke one of a machine's embed keys by its key id: the revoked record is stored (so it stays 401 after a restart)
   * and replaces the cached one at once. Revoking a revoked key answers its record unchanged. 404 when the machine
   * has no embed key of that id.
   */
  async revokeEmbedKey(slug: string, keyIdText: string): Promise<KeyRecord> {
    const digest = await this.deps.store.get<string>(this.embedKeys, `${slug}!${keyIdText}`);
    const rec = digest === undefined ? undefined : await this.deps.store.get<KeyRecord>(this.keys, digest);
    if (digest === undefined || !rec || rec.kind !== 'zsm_pub' || rec.slug !== slug) {
      throw new ServiceError(404, 'SVC_NOT_FOUND', `state machine ${slug} has no embed key ${keyIdText}`);
    }
    if (rec.revoked_unix_ms !== null) return rec;
    const revoked: KeyRecord = { ...rec, revoked_unix_ms: this.now() };
    await this.deps.store.commit([{ type: 'put', sub: this.keys, key: digest, value: revoked }]);
    this.cacheKey(digest, revoked);
    return revoked;
  }

  /** A session-key for in-browser scripts: an sk_ key bound to the session's identity, expiring with it. */
  async sessionKey(token: string | undefined): Promise<{ sessionKey: string; expiresAt: string }> {
    const session = await this.verifySession(token);
    if (!session.valid || !session.zid) throw new ServiceError(401, 'SVC_NO_SESSION', 'a valid session cookie is required');
    const { key, record } = await this.mintKeyFor(session.zid, 'sk', SESSION_KEY_TTL_MS);
    return { sessionKey: key, expiresAt: new Date(record.expires_unix_ms!).toISOString() };
  }

  /** Demo keys carry plan 'demo'; the shared one is created once per node. */
  async demoKey(shared: boolean): Promise<{ key: string; record: KeyRecord }> {
    const made = this.demoKeyOps(shared);
    await this.deps.store.commit(made.ops);
    return made;
  }

  /** A new demo key and the ops that store it, for a caller that commits them with its own (a mint counter). */
  demoKeyOps(shared: boolean): { key: string; record: KeyRecord; ops: Op[] } {
    const key = mintKey('sk');
    const record: KeyRecord = {
      key_id: keyId(key),
      kind: 'sk',
      zid: null,
      slug: null,
      plan: 'demo',
      created_unix_ms: this.now(),
      expires_unix_ms: null,
      revoked_unix_ms: null,
    };
    return { key, record, ops: [{ type: 'put', sub: this.keys, key: keyDigest(key), value: { ...record, shared } }] };
  }

  /**
   * The ops revoking a stored key by its digest (null when there is none, or it is revoked already), for a caller
   * that commits them in its own batch; `applied()` after the commit updates the cache and tells the mesh.
   */
  async revokeDigestOps(digest: string): Promise<{ ops: Op[]; applied: () => void } | null> {
    const rec = await this.deps.store.get<KeyRecord>(this.keys, digest);
    if (!rec || rec.revoked_unix_ms !== null) return null;
    const revoked: KeyRecord = { ...rec, revoked_unix_ms: this.now() };
    return {
      ops: this.revocationOps(digest, revoked),
      applied: () => {
        this.cacheKey(digest, revoked);
        this.assert(digest, revoked);
      },
    };
  }

  async revokeKey(key: string): Promise<void> {
    const digest = keyDigest(key);
    const rec = await this.deps.store.get<KeyRecord>(this.keys, digest);
    if (!rec) return;
    const revoked = { ...rec, revoked_unix_ms: this.now() };
    await this.deps.store.commit(this.revocationOps(digest, revoked));
    this.cacheKey(digest, revoked);
    this.assert(digest, revoked);
  }

  /**
   * Resolve a presented key. Malformed, unknown, expired, revoked, or a legacy key past its version → 401
   * SVC_INVALID_KEY with key_id, revoked_at and reason. The lookup is by digest, which is itself constant-time
   * with respect to the key's bytes. A key not known here is asked of the peers; `asker` (the caller's address) is
   * the budget such questions count against (KEY_QUESTIONS_PER_MINUTE a minute, then 429 without asking).
   */
  async resolveKey(key: string, asker?: string): Promise<KeyRecord> {
    const kind = keyKind(key);
    if (!kind) throw invalidKey(key, 'malformed');
    if (kind === 'svc_ak' && compareVersions(this.deps.kernelVersion, LEGACY_KEY_REMOVED_IN) >= 0) {
      throw invalidKey(key, `legacy svc_ak_ keys are removed in ${LEGACY_KEY_REMOVED_IN}`);
    }
    const digest = keyDigest(key);
    let rec = this.keyCache.get(digest);
    if (!rec) {
      rec = (await this.deps.store.get<KeyRecord>(this.keys, digest)) ?? (await this.lookupRemote(digest, asker));
      if (!rec) throw invalidKey(key, 'unknown');
      this.cacheKey(digest, rec);
    }
    if (rec.revoked_unix_ms !== null) throw invalidKey(key, 'revoked', new Date(rec.revoked_unix_ms).toISOString());
    if (rec.expires_unix_ms !== null && rec.expires_unix_ms <= this.now()) throw invalidKey(key, 'expired');
    await this.noteUse(digest, rec);
    return rec;
  }

  defaultSlug(zid: string): string {
    return `${DEFAULT_SLUG_PREFIX}${zid.slice(4, 20)}`;
  }

  /**
   * Claim the slug of a new identity's default machine (pushed onto `claims`). The usual one, unless a machine is
   * already stored under it (written before callers were kept out of the m-… space): then the zid's full hex, so a
   * registration never takes over a machine that is not its own.
   */
  private async claimDefaultSlug(zid: string, space: ClaimSpace, claims: Claim[]): Promise<string> {
    for (const slug of [this.defaultSlug(zid), `${DEFAULT_SLUG_PREFIX}${zid.slice(4)}`]) {
      const claim = this.claims.tryTake('slug', slug);
      if (!claim) continue;
      if (!(await this.deps.chain.getMachine(slug))) {
        claims.push(claim);
        return slug;
      }
      claim.release();
    }
    throw conflict(space, zid);
  }

  /** A new machine's zsm_ admin key: its record goes into the machine's batch, its assertion out once written. */
  private adminKey(zid: string, slug: string): AdminKey {
    const key = mintKey('zsm');
    const digest = keyDigest(key);
    const record: KeyRecord = {
      key_id: keyId(key),
      kind: 'zsm',
      zid,
      slug,
      plan: 'standard',
      created_unix_ms: this.now(),
      expires_unix_ms: null,
      revoked_unix_ms: null,
      home: this.deps.nodeId(),
    };
    return {
      key,
      digest,
      ops: [{ type: 'put', sub: this.keys, key: digest, value: record }, ...this.indexOp(digest, record)],
      // Announced with the identity as its record says once the batch is written (registration's batch writes it).
      announce: () => void this.announceHomed(digest, record),
    };
  }

  /**
   * v3 zero-knowledge registration: the client sends SHA-256(equation) (64 hex); ZID = 'zid_' + its first 32 hex.
   * The server keeps ZID, scrypt hash and salt only, and creates the default state machine.
   */
  async registerV3(equationSha256: string, svcond: number): Promise<{ zid: string; machine: MachineRecord; adminKey: string }> {
    const digest = equationSha256.toLowerCase();
    const zid = zidOfEquation(digest);
    // Claimed before the first await: of concurrent registrations of one equation, one goes on.
    const claims = [this.claims.take('zid', zid)];
    try {
      if (await this.getIdentity(zid)) throw conflict('zid', zid);
      const salt = randomBytes(16).toString('hex');
      const hash = (await hashSecret(digest, salt, this.scryptCost)).toString('hex');
      const slug = await this.claimDefaultSlug(zid, 'zid', claims);
      const record: IdentityRecord = {
        zid,
        kind: 'zk',
        hash,
        salt,
        scrypt_cost: this.scryptCost,
        home: this.deps.nodeId(),
        default_machine: slug,
        created_unix_ms: this.now(),
      };
      const { ops, adminKey, machine, announce } = this.machines.newMachine(zid, slug, svcond);
      await this.deps.store.commit([{ type: 'put', sub: this.identities, key: zid, value: record }, ...ops]);
      this.identityCache.forget(zid);
      announce();
      return { zid, machine, adminKey };
    } finally {
      for (const c of claims) c.release();
    }
  }

  /** v3 login: proves knowledge of the equation digest; opens a session. */
  async loginV3(equationSha256: string): Promise<{ zid: string; token: string; expires_unix_ms: number }> {
    const digest = equationSha256.toLowerCase();
    const zid = zidOfEquation(digest);
    const rec = await this.getIdentity(zid);
    // Registered here, or homed here by a failover with the verifier its assertion carried.
    const verifier = rec !== undefined && (rec.kind === 'zk' || rec.home === this.deps.nodeId()) ? verifierOf(rec) : null;
    if (rec?.kind === 'remote' && rec.home === this.deps.nodeId() && verifier === null) {
      // Home by a failover, of an identity whose home never sent its verifier: no proof can be checked here.
      throw new ServiceError(
        409,
        'SVC_CONFLICT',
        'this node became the identity’s home by a failover and holds no copy of its login verifier: its API keys work here, a login does not',
        { zid, home: rec.home, reason: 'secret not held by the home' },
      );
    }
    // An unknown identity is hashed at this node's cost, so its timing matches a known one.
    const salt = verifier?.salt ?? randomBytes(16).toString('hex');
    const hash = await hashSecret(digest, salt, verifier?.scrypt_cost ?? this.scryptCost);
    const stored = verifier ? Buffer.from(verifier.hash, 'hex') : Buffer.alloc(32);
    if (verifier === null || !timingSafeEqual(hash, stored)) throw new ServiceError(401, 'SVC_INVALID_CREDENTIALS', 'identity proof rejected');
    return this.openSession(zid);
  }

  /** Create a further state machine for an identity, with its admin key (returned once): chain/machine-creation.ts. */
  createMachine(...args: Parameters<MachineCreation['create']>): ReturnType<MachineCreation['create']> {
    return this.machines.create(...args);
  }
}

/** A v3 identity's zid: 'zid_' + the first 32 hex of SHA-256(equation) (spec 2.4). */
export function zidOfEquation(equationSha256: string): string {
  return `zid_${equationSha256.toLowerCase().slice(0, 32)}`;
}

function isAssertion(a: unknown): a is IdentityAssertion {
  if (!a || typeof a !== 'object') return false;
  const x = a as Record<string, unknown>;
  const k = x.key as Record<string, unknown> | undefined;
  if (typeof x.digest !== 'string' || !/^[0-9a-f]{64}$/.test(x.digest) || !k || typeof k !== 'object') return false;
  if (typeof k.key_id !== 'string' || typeof k.zid !== 'string' || typeof k.home !== 'string') return false;
  if (!['sk', 'sk_test', 'svc_ak', 'zsm', 'zsm_pub'].includes(k.kind as string)) return false;
  if (!['standard', 'demo', 'test'].includes(k.plan as string)) return false;
  for (const f of ['created_unix_ms'] as const) if (typeof k[f] !== 'number') return false;
  for (const f of ['expires_unix_ms', 'revoked_unix_ms'] as const) if (k[f] !== null && typeof k[f] !== 'number') return false;
  if (k.slug !== null && typeof k.slug !== 'string') return false;
  const i = x.identity as Record<string, unknown> | null | undefined;
  if (i !== null && i !== undefined && (typeof i !== 'object' || typeof i.zid !== 'string' || typeof i.home !== 'string')) return false;
  return i?.verifier === undefined || isVerifier(i.verifier);
}

/** A login verifier as registration makes one: 32 bytes of scrypt, a 16-byte salt, a cost the node accepts (config/scrypt-cost.ts). */
function isVerifier(v: unknown): v is LoginVerifier {
  if (!v || typeof v !== 'object') return false;
  const x = v as Record<string, unknown>;
  const cost = x.scrypt_cost;
  return (
    typeof x.hash === 'string' &&
    /^[0-9a-f]{64}$/.test(x.hash) &&
    typeof x.salt === 'string' &&
    /^[0-9a-f]{32}$/.test(x.salt) &&
    typeof cost === 'number' &&
    Number.isInteger(cost) &&
    cost >= MIN_SCRYPT_COST &&
    cost <= MAX_SCRYPT_COST
  );
}
