// Signed, expiring pull links (spec 4.5, part 5 item 7): `sig` = `<expires_ms>.<hex HMAC-SHA256(key, "pull|<channel>|<expires_ms>")>`.
// The signature is the credential of a keyless pull: a signature for another channel, an altered one or an expired one
// is refused. The key is derived from the node's receipt secret for this purpose only.
import { hexEqual, hmacHex } from '../kernel/receipt.js';

/** Longest and default lifetime of a link. */
export const LINK_TTL_MAX_SECONDS = 7 * 24 * 3600;
export const LINK_TTL_DEFAULT_SECONDS = 3600;

export function signLink(key: Buffer, channelId: string, expiresMs: number): string {
  return `${expiresMs}.${hmacHex(key, `pull|${channelId}|${expiresMs}`)}`;
}

export type LinkCheck = { ok: true; expiresMs: number } | { ok: false; reason: 'malformed' | 'bad signature' | 'expired' };

/** Check a presented signature for `channelId` at `nowMs` (constant-time on the MAC). */
export function checkLink(key: Buffer, channelId: string, sig: unknown, nowMs: number): LinkCheck {
  if (typeof sig !== 'string' || sig.length > 200) return { ok: false, reason: 'malformed' };
  const m = /^(\d{1,15})\.([0-9a-f]{64})$/.exec(sig);
  if (!m) return { ok: false, reason: 'malformed' };
  const expiresMs = Number(m[1]);
  if (!hexEqual(m[2], hmacHex(key, `pull|${channelId}|${expiresMs}`))) return { ok: false, reason: 'bad signature' };
  if (expiresMs <= nowMs) return { ok: false, reason: 'expired' };
  return { ok: true, expiresMs };
}
