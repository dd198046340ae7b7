// Identities, sessions and keys (spec 2.4, 4.4, part 5). Passwords and ZK hashes with scrypt; keys and session
// tokens stored as SHA-256 digests; every secret comparison in constant time.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, createHmac } from 'node:crypto';
import { promisify } from 'node:util';
import { sha256Hex } from '../kernel/canonical.js';
import { ServiceError } from '../kernel/errors.js';
import type { Clock } from '../kernel/clock.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import type { ChainService, MachineRecord } from '../chain/service.js';
import { compareVersions, keyDigest, keyId, keyKind, mintKey, randomToken, type KeyKind } from './keys.js';

const scrypt = promisify(scryptCb) as (pw: string | Buffer, salt: string | Buffer, len: number) => Promise<Buffer>;

export const SESSION_TTL_MS = 24 * 3600 * 1000;
export const SESSION_KEY_TTL_MS = 24 * 3600 * 1000;
export const LEGACY_KEY_REMOVED_IN = '1.287.7';

export interface IdentityRecord {
  zid: string;
  kind: 'password' | 'zk';
  email?: string;
  password_hash?: string;
  /** ZK flow: scrypt of the client's equation digest; the equation never reaches the server. */
  hash?: string;
  salt: string;
  home: string;
  default_machine?: string;
  created_unix_ms: number;
}

export interface KeyRecord {
  key_id: string;
  kind: KeyKind;
  zid: string | null;
  slug: string | null;
  plan: 'standard' | 'demo' | 'test';
  created_unix_ms: number;
  expires_unix_ms: number | null;
  revoked_unix_ms: number | null;
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
  /** Key records by digest: a hot read on every authenticated request. Bounded; writes go through it. */
  private readonly keyCache = new Map<string, KeyRecord>();

  constructor(private readonly deps: IdentityDeps) {
    this.identities = deps.store.sub('identities');
    this.emails = deps.store.sub('emails');
    this.keys = deps.store.sub('keys');
    this.sessions = deps.store.sub('sessions');
  }

  private cacheKey(digest: string, rec: KeyRecord): void {
    if (this.keyCache.size >= 10_000) this.keyCache.delete(this.keyCache.keys().next().value as string);
    this.keyCache.set(digest, rec);
  }

  private now(): number {
    return nowMs(this.deps.clock);
  }

  async getIdentity(zid: string): Promise<IdentityRecord | undefined> {
    return this.deps.store.get<IdentityRecord>(this.identities, zid);
  }

  /** v1: {email, password} → {zid, message}. */
  async register(email: string, password: string): Promise<{ zid: string; message: string }> {
    const normalised = email.trim().toLowerCase();
    if (await this.deps.store.get(this.emails, normalised)) {
      throw new ServiceError(409, 'SVC_CONFLICT', 'an identity with this email already exists', { field: 'email' });
    }
    const salt = await this.saltFor(normalised, true);
    const hash = (await scrypt(password, Buffer.from(salt, 'hex'), 32)).toString('hex');
    const zid = `zid_${randomBytes(16).toString('hex')}`;
    const slug = this.defaultSlug(zid);
    const record: IdentityRecord = { zid, kind: 'password', email: normalised, password_hash: hash, salt, home: this.deps.nodeId(), default_machine: slug, created_unix_ms: this.now() };
    const { ops } = this.machineFor(zid, slug, 0);
    await this.deps.store.commit([
      { type: 'put', sub: this.identities, key: zid, value: record },
      { type: 'put', sub: this.emails, key: normalised, value: zid },
      ...ops,
    ]);
    return { zid, message: 'identity registered; log in to obtain a session' };
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
    const zid = await this.deps.store.get<string>(this.emails, normalised);
    const rec = zid ? await this.getIdentity(zid) : undefined;
    // Hash even for unknown emails so timing does not reveal which emails exist.
    const salt = rec?.salt ?? (await this.saltFor(normalised));
    const hash = await scrypt(password, Buffer.from(salt, 'hex'), 32);
    const stored = rec?.password_hash ? Buffer.from(rec.password_hash, 'hex') : Buffer.alloc(32);
    if (!rec || !rec.password_hash || !timingSafeEqual(hash, stored)) {
      throw new ServiceError(401, 'SVC_INVALID_CREDENTIALS', 'email or password is wrong');
    }
    return this.openSession(rec.zid);
  }

  private async openSession(zid: string): Promise<{ zid: string; token: string; expires_unix_ms: number }> {
    const token = randomToken(32);
    const expires = this.now() + SESSION_TTL_MS;
    await this.deps.store.commit([{ type: 'put', sub: this.sessions, key: sha256Hex(token), value: { zid, expires_unix_ms: expires } satisfies SessionRecord }]);
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

  /** Mint a key of the given kind for an identity (shown once; only its digest is stored). */
  async mintKeyFor(zid: string, kind: 'sk' | 'sk_test' | 'svc_ak', ttlMs: number | null): Promise<{ key: string; record: KeyRecord }> {
    if (kind === 'svc_ak' && compareVersions(this.deps.kernelVersion, LEGACY_KEY_REMOVED_IN) >= 0) {
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'legacy svc_ak_ keys were removed in 1.287.7', { field: 'kind', reason: 'removed', allowed: ['sk', 'sk_test'] });
    }
    const key = mintKey(kind);
    const now = this.now();
    const record: KeyRecord = { key_id: keyId(key), kind, zid, slug: null, plan: kind === 'sk_test' ? 'test' : 'standard', created_unix_ms: now, expires_unix_ms: ttlMs === null ? null : now + ttlMs, revoked_unix_ms: null };
    await this.deps.store.commit([{ type: 'put', sub: this.keys, key: keyDigest(key), value: record }]);
    return { key, record };
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
    const key = mintKey('sk');
    const record: KeyRecord = { key_id: keyId(key), kind: 'sk', zid: null, slug: null, plan: 'demo', created_unix_ms: this.now(), expires_unix_ms: null, revoked_unix_ms: null };
    await this.deps.store.commit([{ type: 'put', sub: this.keys, key: keyDigest(key), value: { ...record, shared } }]);
    return { key, record };
  }

  async revokeKey(key: string): Promise<void> {
    const digest = keyDigest(key);
    const rec = await this.deps.store.get<KeyRecord>(this.keys, digest);
    if (!rec) return;
    const revoked = { ...rec, revoked_unix_ms: this.now() };
    await this.deps.store.commit([{ type: 'put', sub: this.keys, key: digest, value: revoked }]);
    this.cacheKey(digest, revoked);
  }

  /**
   * Resolve a presented key. Malformed, unknown, expired, revoked, or a legacy key past its version → 401
   * SVC_INVALID_KEY with key_id, revoked_at and reason. The lookup is by digest, which is itself constant-time
   * with respect to the key's bytes.
   */
  async resolveKey(key: string): Promise<KeyRecord> {
    const kind = keyKind(key);
    if (!kind) throw invalidKey(key, 'malformed');
    if (kind === 'svc_ak' && compareVersions(this.deps.kernelVersion, LEGACY_KEY_REMOVED_IN) >= 0) {
      throw invalidKey(key, `legacy svc_ak_ keys are removed in ${LEGACY_KEY_REMOVED_IN}`);
    }
    const digest = keyDigest(key);
    let rec = this.keyCache.get(digest);
    if (!rec) {
      rec = await this.deps.store.get<KeyRecord>(this.keys, digest);
      if (!rec) throw invalidKey(key, 'unknown');
      this.cacheKey(digest, rec);
    }
    if (rec.revoked_unix_ms !== null) throw invalidKey(key, 'revoked', new Date(rec.revoked_unix_ms).toISOString());
    if (rec.expires_unix_ms !== null && rec.expires_unix_ms <= this.now()) throw invalidKey(key, 'expired');
    return rec;
  }

  defaultSlug(zid: string): string {
    return `m-${zid.slice(4, 20)}`;
  }

  /** Ops creating a machine with its zsm_ admin key (returned once). */
  private machineFor(zid: string, slug: string, svcond: number, isPublic = false): { ops: Op[]; adminKey: string; machine: MachineRecord } {
    const adminKey = mintKey('zsm');
    const machine: MachineRecord = {
      slug,
      owner: zid,
      genesis_svcond: svcond,
      is_public: isPublic,
      key_digest: keyDigest(adminKey),
      roles: { [zid]: 'owner' },
      inject_agent_rail: false,
      inject_pulse_orb: false,
      home: this.deps.nodeId(),
      created_unix_ms: this.now(),
    };
    const keyRecord: KeyRecord = { key_id: keyId(adminKey), kind: 'zsm', zid, slug, plan: 'standard', created_unix_ms: this.now(), expires_unix_ms: null, revoked_unix_ms: null };
    return { ops: [...this.deps.chain.machineOps(machine), { type: 'put', sub: this.keys, key: keyDigest(adminKey), value: keyRecord }], adminKey, machine };
  }

  /**
   * v3 zero-knowledge registration: the client sends SHA-256(equation) (64 hex); ZID = 'zid_' + its first 32 hex.
   * The server keeps ZID, scrypt hash and salt only, and creates the default state machine.
   */
  async registerV3(equationSha256: string, svcond: number): Promise<{ zid: string; machine: MachineRecord; adminKey: string }> {
    const digest = equationSha256.toLowerCase();
    const zid = `zid_${digest.slice(0, 32)}`;
    if (await this.getIdentity(zid)) throw new ServiceError(409, 'SVC_CONFLICT', 'this identity is already registered', { field: 'equation_sha256' });
    const salt = randomBytes(16).toString('hex');
    const hash = (await scrypt(digest, Buffer.from(salt, 'hex'), 32)).toString('hex');
    const slug = this.defaultSlug(zid);
    const record: IdentityRecord = { zid, kind: 'zk', hash, salt, home: this.deps.nodeId(), default_machine: slug, created_unix_ms: this.now() };
    const { ops, adminKey, machine } = this.machineFor(zid, slug, svcond);
    await this.deps.store.commit([{ type: 'put', sub: this.identities, key: zid, value: record }, ...ops]);
    return { zid, machine, adminKey };
  }

  /** v3 login: proves knowledge of the equation digest; opens a session. */
  async loginV3(equationSha256: string): Promise<{ zid: string; token: string; expires_unix_ms: number }> {
    const digest = equationSha256.toLowerCase();
    const zid = `zid_${digest.slice(0, 32)}`;
    const rec = await this.getIdentity(zid);
    const salt = rec?.salt ?? randomBytes(16).toString('hex');
    const hash = await scrypt(digest, Buffer.from(salt, 'hex'), 32);
    const stored = rec?.hash ? Buffer.from(rec.hash, 'hex') : Buffer.alloc(32);
    if (!rec || rec.kind !== 'zk' || !timingSafeEqual(hash, stored)) throw new ServiceError(401, 'SVC_INVALID_CREDENTIALS', 'identity proof rejected');
    return this.openSession(zid);
  }

  /** Create a further state machine for an identity (returns the admin key once). */
  async createMachine(zid: string, slug: string, svcond: number, isPublic: boolean): Promise<{ machine: MachineRecord; adminKey: string }> {
    if (await this.deps.chain.getMachine(slug)) throw new ServiceError(409, 'SVC_CONFLICT', `state machine ${slug} exists`, { field: 'slug' });
    const { ops, adminKey, machine } = this.machineFor(zid, slug, svcond, isPublic);
    await this.deps.store.commit(ops);
    return { machine, adminKey };
  }
}
