// Receipts: svcProof = hex HMAC-SHA256 over the RFC 8785 canonical JSON of the sealed body, the tick receipt
// (spec 2.2) with its own HMAC, and the continuum state fields mapped from the result unit.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson, canonicalTemplate, fillTemplate, joinAtSlots, Scratch, sha256Bytes, sha256Hex, type MemberSlots, type Template } from './canonical.js';
import { PULSE_HZ, TICK_NS_NUMBER, TICK_SECONDS_EXACT } from './clock.js';
import type { StateField } from '../solvers/types.js';

/** HMAC-SHA256 key pads (RFC 2104): K ⊕ ipad and K ⊕ opad, K hashed first when longer than the 64-byte block. */
interface Pads {
  inner: Buffer;
  outer: Buffer;
}
const padsByKey = new WeakMap<Buffer, Pads>();

function padsOf(key: Buffer): Pads {
  let pads = padsByKey.get(key);
  if (pads === undefined) {
    const k = key.length > 64 ? sha256Bytes(key) : key;
    const inner = Buffer.alloc(64, 0x36);
    const outer = Buffer.alloc(64, 0x5c);
    for (let i = 0; i < k.length; i++) {
      inner[i]! ^= k[i]!;
      outer[i]! ^= k[i]!;
    }
    pads = { inner, outer };
    padsByKey.set(key, pads);
  }
  return pads;
}

/**
 * Hex HMAC-SHA256 of the UTF-8 of `text`. Same result as createHmac, computed as H(K⊕opad ‖ H(K⊕ipad ‖ m)) with two
 * one-shot hashes and the key's pads made once: an Hmac object per call (OpenSSL context set-up) cost ~5 µs under
 * load, several times the hashing itself.
 */
export function hmacHex(key: Buffer, text: string): string {
  const led = Buffer.allocUnsafe(64 + Buffer.byteLength(text, 'utf8'));
  led.write(text, 64, 'utf8');
  return hmacOfLed(key, led);
}

/** hmacHex of `led` without its first 64 bytes, which are overwritten with the inner pad. */
function hmacOfLed(key: Buffer, led: Buffer): string {
  const pads = padsOf(key);
  pads.inner.copy(led, 0);
  const outer = Buffer.allocUnsafe(96);
  pads.outer.copy(outer, 0);
  sha256Bytes(led).copy(outer, 64);
  return sha256Hex(outer);
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
 * and key-free, so it can run on another thread; the text is serialised and converted once.
 */
export function prepareSeal(body: Record<string, unknown>, later: readonly string[]): MemberSlots {
  return fillTemplate(sealTemplate(body, later), {});
}

/** prepareSeal for a body with Holes: fillTemplate with the holes' values gives prepareSeal of the filled body. */
export function sealTemplate(body: Record<string, unknown>, later: readonly string[]): Template {
  if (!body.cko || typeof body.cko !== 'object' || Array.isArray(body.cko)) throw new Error('a sealed body has a cko object');
  return canonicalTemplate(body, [...later, 'svcProof'], 'cko', ['svcProof']);
}

/** The signed text is hashed at once and dropped: one buffer serves every seal. */
const signScratch = new Scratch();

/**
 * The second half: add the `later` members, sign (signBody's proof: the HMAC over the canonical JSON of the whole
 * body without its two svcProof fields) and return the UTF-8 canonical JSON of the signed body with the proofs in,
 * and the JSON text of every member added at a slot (the later ones and svcProof), which a compact stored result keeps.
 */
export function finishSeal(key: Buffer, prepared: MemberSlots, later: Readonly<Record<string, unknown>>): { proof: string; bytes: Buffer; members: Map<string, string> } {
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(later)) values.set(name, canonicalJson(value));
  // The signed text is written after room for the HMAC's inner pad, so it is hashed where it lies.
  const proof = hmacOfLed(key, joinAtSlots(prepared, values, 64, signScratch));
  values.set('svcProof', `"${proof}"`);
  return { proof, bytes: joinAtSlots(prepared, values), members: values };
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

const PULSE_HZ_JSON = canonicalJson(PULSE_HZ);
const TICK_SECONDS_JSON = canonicalJson(TICK_SECONDS_EXACT);
const TICK_NS_JSON = canonicalJson(TICK_NS_NUMBER);

/**
 * The tick receipt's canonical JSON, made in one pass: each member is serialised once for both the HMAC input
 * (the receipt without hmac, plus value, unit and result_digest: what verification recomputes) and the receipt.
 * Members are written in canonical (sorted) order; the tests hold it to canonicalJson of the same objects.
 */
export function tickReceiptText(key: Buffer, args: TickReceiptFacts): string {
  const R = canonicalJson(args.R_t);
  const fields = canonicalJson(args.fields);
  const phase = canonicalJson(args.phase);
  const svcond = canonicalJson(args.svcond);
  const signed =
    `{"R_t":${R},"fields":${fields},"phase":${phase},"pulse_hz":${PULSE_HZ_JSON},"result_digest":${canonicalJson(args.result_digest)},` +
    `"svcond":${svcond},"tick_period_s":${TICK_SECONDS_JSON},"unit":${canonicalJson(args.unit)},"value":${canonicalJson(args.value)},"zeqond_ns":${TICK_NS_JSON}}`;
  const hmac = hmacHex(key, signed);
  return `{"R_t":${R},"fields":${fields},"hmac":"${hmac}","phase":${phase},"pulse_hz":${PULSE_HZ_JSON},"svcond":${svcond},"tick_period_s":${TICK_SECONDS_JSON},"zeqond_ns":${TICK_NS_JSON}}`;
}
