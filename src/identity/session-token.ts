// A session token names the identity it opens (`<zid>.<32 random bytes, base64url>`): the session is kept by the
// identity's home, and any node that is handed the cookie reads from the token where to relay it. The zid is public;
// the random part is the secret, and only its SHA-256 is stored.
import { randomToken } from './keys.js';

const TOKEN = /^(zid_[0-9a-f]{32})\.[A-Za-z0-9_-]{43}$/;

export function newSessionToken(zid: string): string {
  return `${zid}.${randomToken(32)}`;
}

/** The zid a session token names; null for a token of another shape (one made before tokens named it, or forged). */
export function sessionTokenZid(token: string | undefined): string | null {
  return token === undefined ? null : (TOKEN.exec(token)?.[1] ?? null);
}
