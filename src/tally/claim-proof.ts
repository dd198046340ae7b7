// The daily claim's proof of work (hashcash on SHA-256) and its stateless challenges. A challenge is
// `c1.<hour>.<difficulty>.<expires_unix_ms>.<mac>`, the mac an HMAC (node key derived for CLAIM) over the zid and
// address it was issued to, the UTC hour, the difficulty and the expiry: the node stores nothing per challenge, and
// a challenge made for another identity or address, or altered, fails. A proof is a nonce such that
// SHA-256(`<challenge>:<nonce>`) starts with at least `difficulty` zero bits. Pure: no clock reads.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const CHALLENGE_VERSION = 'c1';

export interface ChallengeFields {
  zid: string;
  ip: string;
  /** UTC hour, e.g. '2026-11-25T13'. */
  hour: string;
  difficulty: number;
  expiresUnixMs: number;
}

function mac(key: Buffer, f: ChallengeFields): string {
  return createHmac('sha256', key).update(`${CHALLENGE_VERSION}|${f.zid}|${f.ip}|${f.hour}|${f.difficulty}|${f.expiresUnixMs}`).digest('hex').slice(0, 32);
}

export function makeChallenge(key: Buffer, f: ChallengeFields): string {
  return `${CHALLENGE_VERSION}.${f.hour}.${f.difficulty}.${f.expiresUnixMs}.${mac(key, f)}`;
}

const CHALLENGE = /^c1\.(\d{4}-\d{2}-\d{2}T\d{2})\.(\d{1,2})\.(\d{13})\.([0-9a-f]{32})$/;

/** The fields of a challenge issued by `key` to (zid, ip), or null when it is malformed or not ours. */
export function openChallenge(key: Buffer, challenge: string, zid: string, ip: string): Omit<ChallengeFields, 'zid' | 'ip'> | null {
  const m = CHALLENGE.exec(challenge);
  if (!m) return null;
  const f: ChallengeFields = { zid, ip, hour: m[1]!, difficulty: Number(m[2]), expiresUnixMs: Number(m[3]) };
  const expected = Buffer.from(mac(key, f), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(m[4]!, 'hex'))) return null;
  return { hour: f.hour, difficulty: f.difficulty, expiresUnixMs: f.expiresUnixMs };
}

/** Leading zero bits of a digest. */
export function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

export function proofBits(challenge: string, nonce: string): number {
  return leadingZeroBits(createHash('sha256').update(`${challenge}:${nonce}`).digest());
}

/** Find a nonce (decimal) whose proof has at least `difficulty` zero bits: ~2^difficulty hashes. */
export function solveChallenge(challenge: string, difficulty: number): string {
  for (let n = 0; ; n++) {
    const nonce = n.toString(10);
    if (proofBits(challenge, nonce) >= difficulty) return nonce;
  }
}
