// Secure pull (spec 4.5): an AES-256-GCM session per client, keyed by X25519 key agreement (node:crypto).
//
// Key agreement, as a client implements it:
//   1. the client makes an X25519 key pair and sends its raw 32-byte public key, base64url, as `client_public_key`
//      to POST /api/svc/streams/:id/secure/open;
//   2. the node makes its own X25519 key pair for the session and answers `server_public_key` (raw, base64url),
//      `session` (the session id) and `expires_at`;
//   3. both sides compute the shared secret Z = X25519(own private, other's public) and the session key
//      K = HKDF-SHA256(ikm = Z, salt = UTF-8 of the session id, info = "svc-stream-secure/v1|<channel id>", 32 bytes);
//   4. each frame of GET …/secure/pull?session= is {session, seq, nonce, ciphertext, tag} (binary fields base64url):
//      AES-256-GCM with K, nonce = 4 zero bytes ‖ seq as 8 bytes big-endian (seq counts from 1 per session, so a nonce
//      never repeats under one key), additional data = UTF-8 of "<session>|<seq>"; the plaintext is the sealed envelope.
// A session lives SESSION_TTL_MS and survives a restart of the node: it is stored in LevelDB (`stream_sessions`) with
// its key encrypted at rest (AES-256-GCM under a key derived from the node's credential secret, which never leaves
// this node; additional data = session id and channel), its expiry and the high-water mark of its counter. Counters are
// reserved SEQ_RESERVE at a time: the mark is stored before a frame uses a seq above the last one stored, and a session
// loaded after a restart continues past the mark, so a seq (a nonce) is never used twice under its key, even when the
// node died between two frames (up to SEQ_RESERVE numbers are skipped then). At most SESSIONS_MAX are kept in memory
// (oldest dropped first; a dropped one is read again from the store); expired ones are deleted when met and at start.
// The unexpired sessions on one identity's channels are at most `perIdentity`, counted by an index by owner written
// in the batch of each open, under one lock per owner: beyond it 429 until the first of them expires. Closing a
// channel takes its sessions out of that count (uncountOps, in the close's batch); their records stay until they
// expire, so a pull with one is answered that the channel is closed rather than that the session is unknown.
import { createCipheriv, createDecipheriv, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { ServiceError } from '../kernel/errors.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import { BoundedMap } from '../util/bounded-map.js';
import { KeyedLock } from '../util/keyed-lock.js';

export const SESSION_TTL_MS = 10 * 60 * 1000;
export const SESSIONS_MAX = 4096;
/** Unexpired sessions on one identity's channels, unless configured (limits.secureSessionsPerIdentity). */
export const SESSIONS_PER_IDENTITY_DEFAULT = 256;
export const SECURE_INFO_PREFIX = 'svc-stream-secure/v1|';
/** Sequence numbers reserved per store write. */
export const SEQ_RESERVE = 1024n;

/** The at-rest key of stored session keys: HKDF-SHA256 of the node's credential secret (config/credential-secret.ts). */
export function sessionAtRestKey(credentialSecret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', credentialSecret, Buffer.from('svc-node stream sessions'), Buffer.from('AES-256-GCM v1'), 32));
}

/** A session as stored: never its key in clear. */
interface StoredSession {
  id: string;
  channelId: string;
  expiresMs: number;
  /** The highest seq this session may use before another reservation is stored (decimal). */
  seqReserved: string;
  enc: { iv: string; tag: string; ct: string };
}

export interface SecureSession {
  id: string;
  channelId: string;
  key: Buffer;
  seq: bigint;
  /** Seqs up to this one are reserved in the store. */
  reserved: bigint;
  expiresMs: number;
}

export interface SecureFrame {
  session: string;
  seq: number;
  algorithm: 'AES-256-GCM';
  nonce: string;
  ciphertext: string;
  tag: string;
}

/** An X25519 public key from its raw 32 bytes (base64url), or null when it is not one. */
export function x25519PublicKey(raw: string): KeyObject | null {
  if (!/^[A-Za-z0-9_-]{43}=?$/.test(raw)) return null;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: raw.replace(/=$/, '') }, format: 'jwk' });
    // A low-order point (0, 1, …) gives an all-zero shared secret, which the exchange refuses: no key for a session.
    diffieHellman({ privateKey: probeKey(), publicKey: key });
    return key;
  } catch {
    return null;
  }
}

let probe: KeyObject | null = null;
/** A private key of this process's, only to try a public key in an exchange. */
const probeKey = (): KeyObject => (probe ??= generateKeyPairSync('x25519').privateKey);

export function rawPublicKey(key: KeyObject): string {
  return key.export({ format: 'jwk' }).x!;
}

/** The session key of step 3. */
export function sessionKey(shared: Buffer, sessionId: string, channelId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(sessionId, 'utf8'), Buffer.from(SECURE_INFO_PREFIX + channelId, 'utf8'), 32));
}

export function nonceFor(seq: bigint): Buffer {
  const n = Buffer.alloc(12);
  n.writeBigUInt64BE(seq, 4);
  return n;
}

export class SecureSessions {
  private readonly sessions = new BoundedMap<string, SecureSession>(SESSIONS_MAX);
  private readonly sub: Sublevel;
  /** Sessions by the owner of their channel: `zid!session` → its expiry (ms). */
  private readonly byOwner: Sublevel;
  /** One reservation at a time per session. */
  private readonly reserving = new KeyedLock();
  /** One open at a time per owner: its count and its batch. */
  private readonly opening = new KeyedLock();

  constructor(
    private readonly nowMs: () => number,
    private readonly store: Store,
    private readonly atRestKey: Buffer,
    readonly perIdentity = SESSIONS_PER_IDENTITY_DEFAULT,
  ) {
    this.sub = store.sub('stream_sessions');
    this.byOwner = store.sub('stream_session_owner');
  }

  /** Delete the sessions, and their owner index entries, that expired while the node was down. */
  async load(): Promise<void> {
    const now = this.nowMs();
    const gone = (await this.store.range<StoredSession>(this.sub)).filter((r) => r.value.expiresMs <= now);
    const goneIndex = (await this.store.range<number>(this.byOwner)).filter((r) => r.value <= now);
    const ops: Op[] = [
      ...gone.map((r) => ({ type: 'del' as const, sub: this.sub, key: r.key })),
      ...goneIndex.map((r) => ({ type: 'del' as const, sub: this.byOwner, key: r.key })),
    ];
    if (ops.length > 0) await this.store.commit(ops);
  }

  /** The unexpired sessions on `owner`'s channels: their index keys and expiries, and the expired ones' keys. */
  private async ofOwner(owner: string): Promise<{ live: { key: string; expiresMs: number }[]; expired: string[] }> {
    const now = this.nowMs();
    const all = await this.store.range<number>(this.byOwner, { gte: `${owner}!`, lt: `${owner}!~` });
    return {
      live: all.filter((r) => r.value > now).map((r) => ({ key: r.key, expiresMs: r.value })),
      expired: all.filter((r) => r.value <= now).map((r) => r.key),
    };
  }

  /**
   * Ops that take the sessions of `channelId`, a channel of `owner` being closed, out of the owner's count (their
   * index entries; the sessions themselves stay until they expire, refused with the channel).
   */
  async uncountOps(owner: string, channelId: string): Promise<Op[]> {
    const ops: Op[] = [];
    for (const { key } of await this.store.range<number>(this.byOwner, { gte: `${owner}!`, lt: `${owner}!~` })) {
      const id = key.slice(owner.length + 1);
      const s = this.sessions.get(id) ?? (await this.store.get<StoredSession>(this.sub, id));
      if (s?.channelId === channelId) ops.push({ type: 'del', sub: this.byOwner, key });
    }
    return ops;
  }

  /** Unexpired sessions on `owner`'s channels. */
  async openBy(owner: string): Promise<number> {
    return (await this.ofOwner(owner)).live.length;
  }

  private stored(s: SecureSession): StoredSession {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.atRestKey, iv);
    cipher.setAAD(Buffer.from(`${s.id}|${s.channelId}`, 'utf8'));
    const ct = Buffer.concat([cipher.update(s.key), cipher.final()]);
    return {
      id: s.id,
      channelId: s.channelId,
      expiresMs: s.expiresMs,
      seqReserved: String(s.reserved),
      enc: { iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), ct: ct.toString('base64') },
    };
  }

  private restored(r: StoredSession): SecureSession | null {
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.atRestKey, Buffer.from(r.enc.iv, 'base64'));
      decipher.setAAD(Buffer.from(`${r.id}|${r.channelId}`, 'utf8'));
      decipher.setAuthTag(Buffer.from(r.enc.tag, 'base64'));
      const key = Buffer.concat([decipher.update(Buffer.from(r.enc.ct, 'base64')), decipher.final()]);
      // Continue past everything that may have been used before the restart.
      const reserved = BigInt(r.seqReserved);
      return { id: r.id, channelId: r.channelId, key, seq: reserved, reserved, expiresMs: r.expiresMs };
    } catch {
      return null; // another node's secret, or altered: the session is not usable here
    }
  }

  /**
   * Steps 2-3: a session for a client's public key on a channel of `owner`, stored (with its first reservation and
   * its owner index entry, the owner's expired entries deleted) before it is answered. At the owner's cap: 429 and
   * nothing written.
   */
  async open(channelId: string, owner: string, clientPublic: KeyObject): Promise<{ session: SecureSession; serverPublicKey: string }> {
    return this.opening.run(owner, async () => {
      const { live, expired } = await this.ofOwner(owner);
      if (live.length >= this.perIdentity) throw this.refusal(live.length, Math.min(...live.map((l) => l.expiresMs)));
      const { privateKey, publicKey } = generateKeyPairSync('x25519');
      const shared = diffieHellman({ privateKey, publicKey: clientPublic });
      const id = `ses_${randomBytes(16).toString('hex')}`;
      const session: SecureSession = {
        id,
        channelId,
        key: sessionKey(shared, id, channelId),
        seq: 0n,
        reserved: SEQ_RESERVE,
        expiresMs: this.nowMs() + SESSION_TTL_MS,
      };
      await this.store.commit([
        { type: 'put', sub: this.sub, key: id, value: this.stored(session) },
        { type: 'put', sub: this.byOwner, key: `${owner}!${id}`, value: session.expiresMs },
        ...expired.map((key) => ({ type: 'del' as const, sub: this.byOwner, key })),
      ]);
      this.sessions.set(id, session);
      return { session, serverPublicKey: rawPublicKey(publicKey) };
    });
  }

  /** A slot frees only when a session expires: the refusal says when the first one does. */
  private refusal(open: number, firstExpiryMs: number): ServiceError {
    const retry = Math.max(1, Math.ceil((firstExpiryMs - this.nowMs()) / 1000));
    return new ServiceError(
      429,
      'SVC_RATE_LIMIT',
      `too many secure sessions open: at most ${this.perIdentity} unexpired on one identity's channels; retry when one expires`,
      {
        limit: this.perIdentity,
        scope: 'identity',
        open_sessions: open,
        window_seconds: SESSION_TTL_MS / 1000,
        retry_after_seconds: retry,
        reset_at: new Date(firstExpiryMs).toISOString(),
      },
    );
  }

  /** A live session of this channel, or null (unknown, expired or another channel's). */
  async get(channelId: string, id: unknown): Promise<SecureSession | null> {
    if (typeof id !== 'string' || !/^ses_[0-9a-f]{32}$/.test(id)) return null;
    let s = this.sessions.get(id);
    if (!s) {
      const r = await this.store.get<StoredSession>(this.sub, id);
      if (!r) return null;
      s = this.sessions.get(id) ?? this.restored(r) ?? undefined;
      if (!s) return null;
      this.sessions.set(id, s);
    }
    if (s.expiresMs <= this.nowMs()) {
      this.sessions.delete(id);
      await this.store.commit([{ type: 'del', sub: this.sub, key: id }]);
      return null;
    }
    return s.channelId === channelId ? s : null;
  }

  /**
   * Reserve the session's next range of seqs. The stored mark is the one source of truth: under a per-session lock the
   * mark is read, moved SEQ_RESERVE on and written, and this object gets (old mark, new mark] — so two objects of one
   * session (one evicted from memory while a pull was using it, one read back) never get the same range.
   */
  private reserve(s: SecureSession): Promise<void> {
    return this.reserving.run(s.id, async () => {
      if (s.seq < s.reserved) return; // another pull of this object reserved meanwhile
      const r = await this.store.get<StoredSession>(this.sub, s.id);
      if (!r) {
        // Deleted (expired) while this pull was under way: it can never be read back, so nothing to store.
        s.reserved += SEQ_RESERVE;
        return;
      }
      const start = BigInt(r.seqReserved);
      const next = (start > s.reserved ? start : s.reserved) + SEQ_RESERVE;
      await this.store.commit([{ type: 'put', sub: this.sub, key: s.id, value: this.stored({ ...s, reserved: next }) }]);
      if (s.seq < next - SEQ_RESERVE) s.seq = next - SEQ_RESERVE;
      s.reserved = next;
    });
  }

  /** Step 4: one frame; the session's counter moves first (within a stored reservation), so no two frames share a nonce. */
  async seal(s: SecureSession, plaintext: Buffer): Promise<SecureFrame> {
    while (s.seq >= s.reserved) await this.reserve(s);
    s.seq += 1n;
    const seq = s.seq;
    const nonce = nonceFor(seq);
    const cipher = createCipheriv('aes-256-gcm', s.key, nonce);
    cipher.setAAD(Buffer.from(`${s.id}|${seq}`, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      session: s.id,
      seq: Number(seq),
      algorithm: 'AES-256-GCM',
      nonce: nonce.toString('base64url'),
      ciphertext: ciphertext.toString('base64url'),
      tag: cipher.getAuthTag().toString('base64url'),
    };
  }
}
