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
// A session lives SESSION_TTL_MS; the node keeps at most SESSIONS_MAX of them (oldest dropped first), in memory only
// (a restart ends them: the client opens another).
import { createCipheriv, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { BoundedMap } from '../util/bounded-map.js';

export const SESSION_TTL_MS = 10 * 60 * 1000;
export const SESSIONS_MAX = 4096;
export const SECURE_INFO_PREFIX = 'svc-stream-secure/v1|';

export interface SecureSession {
  id: string;
  channelId: string;
  key: Buffer;
  seq: bigint;
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
    return createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: raw.replace(/=$/, '') }, format: 'jwk' });
  } catch {
    return null;
  }
}

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

  constructor(private readonly nowMs: () => number) {}

  /** Steps 2-3: a session for a client's public key. */
  open(channelId: string, clientPublic: KeyObject): { session: SecureSession; serverPublicKey: string } {
    const { privateKey, publicKey } = generateKeyPairSync('x25519');
    const shared = diffieHellman({ privateKey, publicKey: clientPublic });
    const id = `ses_${randomBytes(16).toString('hex')}`;
    const session: SecureSession = { id, channelId, key: sessionKey(shared, id, channelId), seq: 0n, expiresMs: this.nowMs() + SESSION_TTL_MS };
    this.sessions.set(id, session);
    return { session, serverPublicKey: rawPublicKey(publicKey) };
  }

  /** A live session of this channel, or null (unknown, expired or another channel's). */
  get(channelId: string, id: unknown): SecureSession | null {
    if (typeof id !== 'string') return null;
    const s = this.sessions.get(id);
    if (!s) return null;
    if (s.expiresMs <= this.nowMs()) {
      this.sessions.delete(id);
      return null;
    }
    return s.channelId === channelId ? s : null;
  }

  /** Step 4: one frame; the session's counter moves first, so no two frames share a nonce. */
  seal(s: SecureSession, plaintext: Buffer): SecureFrame {
    s.seq += 1n;
    const nonce = nonceFor(s.seq);
    const cipher = createCipheriv('aes-256-gcm', s.key, nonce);
    cipher.setAAD(Buffer.from(`${s.id}|${s.seq}`, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      session: s.id,
      seq: Number(s.seq),
      algorithm: 'AES-256-GCM',
      nonce: nonce.toString('base64url'),
      ciphertext: ciphertext.toString('base64url'),
      tag: cipher.getAuthTag().toString('base64url'),
    };
  }
}
