// Receipts: svcProof = hex HMAC-SHA256 over the RFC 8785 canonical JSON of the sealed body, the tick receipt
// (spec 2.2) with its own HMAC, and the continuum state fields mapped from the result unit.
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
 * The first half of sealing a freshly built body that has neither a proof nor the members named in `later` yet
 * (the ledger's charge, envelope and audit row, which are known only when the seal is committed): its canonical
 * JSON as UTF-8, with slots for those members and for the two svcProof fields (top level and in the CKO). Pure
 * and key-free, so it runs on the seal worker.
 */
export function prepareSeal(body: Record<string, unknown>, later: readonly string[]): SlottedJson {
  if (!body.cko || typeof body.cko !== 'object' || Array.isArray(body.cko)) throw new Error('a sealed body has a cko object');
  return canonicalJsonWithSlots(body, [...later, 'svcProof'], 'cko', ['svcProof']);
}

/** A body sealed by finishSeal: its proof, and the UTF-8 canonical JSON of the signed body with the proofs in. */
export interface FinishedSeal {
  proof: string;
  bytes: Buffer;
}

/**
 * The second half: add the `later` members (JSON values), sign (signBody's proof: the HMAC over the canonical JSON of
 * the whole body without its two svcProof fields) and return the canonical JSON of the body with the proofs in.
 */
export function finishSeal(key: Buffer, prepared: SlottedJson, later: Readonly<Record<string, unknown>>): FinishedSeal {
  const members = new Map<string, string>();
  for (const [name, value] of Object.entries(later)) members.set(name, canonicalJson(value));
  const proof = hmacHex(key, insertMembers(prepared, members));
  members.set('svcProof', `"${proof}"`);
  return { proof, bytes: insertMembers(prepared, members) };
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
  const mapped = UNIT_FIELDS[unit];
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
