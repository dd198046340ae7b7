// Webhook signatures. One secret per webhook, `whsec_<base64 of 24 random bytes>` (the Standard Webhooks form); the
// HMAC key of both signatures is the secret's decoded bytes:
//   X-Svc-Signature: sha256=<hex HMAC-SHA256(key, raw body)>                        (spec 6.2)
//   webhook-signature: v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<raw body>")>   (Standard Webhooks)
// The secret is stored encrypted (AES-256-GCM under a key derived from the node's receipt secret), never in the clear.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export function svcSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secretKey(secret)).update(body).digest('hex')}`;
}

/** Constant-time check of an X-Svc-Signature header (what a receiver does). */
export function verifySvcSignature(secret: string, body: string, header: unknown): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(svcSignature(secret, body));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface SealedSecret {
  iv: string;
  ct: string;
  tag: string;
}

export function sealSecret(key: Buffer, secret: string): SealedSecret {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([c.update(secret, 'utf8'), c.final()]);
  return { iv: iv.toString('base64'), ct: ct.toString('base64'), tag: c.getAuthTag().toString('base64') };
}

export function openSecret(key: Buffer, s: SealedSecret): string {
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(s.iv, 'base64'));
  d.setAuthTag(Buffer.from(s.tag, 'base64'));
  return Buffer.concat([d.update(Buffer.from(s.ct, 'base64')), d.final()]).toString('utf8');
}
