// Receipts: svcProof = hex HMAC-SHA256 over the RFC 8785 canonical JSON of the sealed body, seal_signature = the
// sealing node's Ed25519 signature over the same body without it (docs/protocol.md §3), the tick receipt (spec 2.2)
// with its own HMAC, and the continuum state fields mapped from the result unit.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './canonical.js';
import { canonicalJsonWithSlots, insertMembers, type SlottedJson } from './member-slots.js';
import { PULSE_HZ, TICK_NS_NUMBER, TICK_SECONDS_EXACT } from './clock.js';
import type { StateField } from './state-field.js';

/** Hex HMAC-SHA256 of `data` (a text's UTF-8, or bytes). */
export function hmacHex(key: Buffer, data: string | Uint8Array): string {
  return createHmac('sha256', key).update(data).digest('hex');
}

/** Constant-time comparison of two hex strings (false on any length or format mismatch). */
export function hexEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  if (!/^[0-9a-f]*$/i.test(a) || a.length !== b.length || a.length % 2 !== 0) return false;
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

/** A key derived from the receipt secret for one purpose (e.g. 'PROVE'), so proofs of one family never verify in another. */
export function deriveKey(secret: Buffer, label: string): Buffer {
  return createHmac('sha256', secret).update(`svc-key:${label}`).digest();
}

/** Fields excluded from the signed body: the proof itself (top level and inside the CKO). */
export function unsignedView(body: Record<string, unknown>): Record<string, unknown> {
  const { svcProof: _p, ...rest } = body;
  if (rest.cko && typeof rest.cko === 'object') {
    const { svcProof: _c, ...cko } = rest.cko as Record<string, unknown>;
    rest.cko = cko;
  }
  return rest;
}

export function signBody(key: Buffer, body: Record<string, unknown>): string {
  return hmacHex(key, canonicalJson(unsignedView(body)));
}

/**
 * The member that names who sealed a body: base64 Ed25519 by the body's `node` (its peer id holds the public key).
 * The receipt secret is shared by the whole mesh, so svcProof says "a mesh member sealed this"; only this signature
 * says which one.
 */
export const SEAL_SIGNATURE = 'seal_signature';

/** Signs UTF-8 bytes (or a text) with the sealing node's Ed25519 key: base64. */
export type SealSigner = (data: Uint8Array | string) => string;

/** What seal_signature signs: the canonical JSON of the body without its two svcProof members and seal_signature. */
export function sealSigningText(body: Record<string, unknown>): string {
  const { [SEAL_SIGNATURE]: _s, ...rest } = unsignedView(body);
  return canonicalJson(rest);
}

/**
 * Seal a whole body at once (the playground's unsealed compute, a sealed event): seal_signature first, then svcProof
 * over the body with it, in both places when the body has a cko.
 */
export function sealWhole(key: Buffer, sign: SealSigner, body: Record<string, unknown>): Record<string, unknown> {
  const signed: Record<string, unknown> = { ...body, [SEAL_SIGNATURE]: sign(sealSigningText(body)) };
  const proof = signBody(key, signed);
  if (signed.cko && typeof signed.cko === 'object') signed.cko = { ...(signed.cko as object), svcProof: proof };
  signed.svcProof = proof;
  return signed;
}

/**
 * The first half of sealing a freshly built body that has neither a proof nor the members named in `later` yet
 * (the ledger's charge, envelope and audit row, which are known only when the seal is committed): its canonical
 * JSON as UTF-8, with slots for those members, seal_signature and the two svcProof fields (top level and in the CKO). Pure
 * and key-free, so it runs on the seal worker.
 */
export function prepareSeal(body: Record<string, unknown>, later: readonly string[]): SlottedJson {
  if (!body.cko || typeof body.cko !== 'object' || Array.isArray(body.cko)) throw new Error('a sealed body has a cko object');
  return canonicalJsonWithSlots(body, [...later, SEAL_SIGNATURE, 'svcProof'], 'cko', ['svcProof']);
}

/** A body sealed by finishSeal: its proof, its seal signature, and the UTF-8 canonical JSON of the body with both in. */
export interface FinishedSeal {
  proof: string;
  sealSignature: string;
  bytes: Buffer;
}

/**
 * The second half: add the `later` members (JSON values), sign the text with the node key (seal_signature, over
 * sealSigningText's text), then prove it (signBody's proof: the HMAC over the canonical JSON of the whole body, the
 * signature included, without its two svcProof fields) and return the canonical JSON of the body with both in.
 */
export function finishSeal(key: Buffer, sign: SealSigner, prepared: SlottedJson, later: Readonly<Record<string, unknown>>): FinishedSeal {
  const members = new Map<string, string>();
  for (const [name, value] of Object.entries(later)) members.set(name, canonicalJson(value));
  // Base64 needs no JSON escaping.
  const sealSignature = sign(insertMembers(prepared, members));
  members.set(SEAL_SIGNATURE, `"${sealSignature}"`);
  const proof = hmacHex(key, insertMembers(prepared, members));
  members.set('svcProof', `"${proof}"`);
  return { proof, sealSignature, bytes: insertMembers(prepared, members) };
}

export function verifyBody(key: Buffer, body: Record<string, unknown>): boolean {
  let expected: string;
  try {
    expected = signBody(key, body);
  } catch {
    return false;
  }
  return hexEqual(body.svcProof, expected);
}

const UNIT_FIELDS: Record<string, string> = {
  Pa: 'pressure',
  'm/s': 'velocity',
  V: 'potential',
  T: 'magnetic_field',
  'kg*m/s': 'momentum',
  K: 'temperature',
};

/** Continuum state fields: the unit-mapped one (if the unit maps) plus a solver's explicit set. */
export function stateFields(value: number, unit: string, explicit?: Record<string, StateField>): Record<string, StateField> {
  const out: Record<string, StateField> = {};
  const mapped = Object.hasOwn(UNIT_FIELDS, unit) ? UNIT_FIELDS[unit] : undefined;
  if (mapped) out[mapped] = { value, unit };
  if (explicit) for (const [k, v] of Object.entries(explicit)) out[k] = v;
  return out;
}

export interface TickReceiptFacts {
  svcond: number;
  phase: number;
  R_t: number;
  value: number;
  unit: string;
  result_digest: string;
  fields: Record<string, StateField>;
}

/**
 * The tick receipt (spec 2.2): the stamp, the field state and the tick's constants, with `hmac` over the receipt
 * without it plus the result's value, unit and result_digest (what verification recomputes).
 */
export function tickReceipt(key: Buffer, f: TickReceiptFacts): Record<string, unknown> {
  const receipt = {
    svcond: f.svcond,
    phase: f.phase,
    R_t: f.R_t,
    fields: f.fields,
    pulse_hz: PULSE_HZ,
    tick_period_s: TICK_SECONDS_EXACT,
    zeqond_ns: TICK_NS_NUMBER,
  };
  const hmac = hmacHex(key, canonicalJson({ ...receipt, value: f.value, unit: f.unit, result_digest: f.result_digest }));
  return { ...receipt, hmac };
}
