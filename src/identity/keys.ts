// API keys: kinds by prefix (spec part 5 item 3), minted at random, shown once, stored as SHA-256 digests.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../kernel/bytes.js';
import type { KeyKind } from '../records/types.js';

export const KEY_PREFIX: Record<KeyKind, string> = {
  sk: 'sk_',
  sk_test: 'sk_test_',
  svc_ak: 'svc_ak_',
  zsm: 'zsm_',
  zsm_pub: 'zsm_pub_',
};

/** Longest prefix first, so 'sk_test_' is not read as 'sk_' and 'zsm_pub_' not as 'zsm_'. */
const BY_LENGTH = (Object.entries(KEY_PREFIX) as [KeyKind, string][]).sort((a, b) => b[1].length - a[1].length);

const KEY_BODY = /^[A-Za-z0-9_-]{32,64}$/;

/** The kind of a well-formed key, or null when the text is not a key of any kind. */
export function keyKind(key: string): KeyKind | null {
  for (const [kind, prefix] of BY_LENGTH) {
    if (key.startsWith(prefix)) return KEY_BODY.test(key.slice(prefix.length)) ? kind : null;
  }
  return null;
}

export function mintKey(kind: KeyKind): string {
  return KEY_PREFIX[kind] + randomBytes(24).toString('base64url');
}

/** Storage id of a key: its SHA-256. The key itself is never stored. */
export function keyDigest(key: string): string {
  return sha256Hex(key);
}

/** A short public id for a key (error bodies, listings): prefix plus the first 8 hex of its digest. */
export function keyId(key: string): string {
  const kind = keyKind(key);
  return `${kind ? KEY_PREFIX[kind] : ''}${keyDigest(key).slice(0, 8)}`;
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Compare two semantic versions; negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}
