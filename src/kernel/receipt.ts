// Receipts: svcProof = hex HMAC-SHA256 over the RFC 8785 canonical JSON of the sealed body, the tick receipt
// (spec 2.2) with its own HMAC, and the continuum state fields mapped from the result unit.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { asTemplate, canonicalJson, canonicalTemplate, fillTemplate, joinedBound, joinTemplate, Scratch, Slab, sha256Bytes, sha256Hex, type Joined, type JoinedMember, type MemberSlots, type Template, type TemplateTexts } from './canonical.js';
import { PULSE_HZ, TICK_NS_NUMBER, TICK_SECONDS_EXACT } from './clock.js';
import type { StateField } from './state-field.js';

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

/** The outer hash's input (pad and inner digest): filled and hashed within one call. */
const outer = Buffer.allocUnsafe(96);

/** hmacHex of `led` without its first 64 bytes, which are overwritten with the inner pad. */
function hmacOfLed(key: Buffer, led: Buffer): string {
  const pads = padsOf(key);
  pads.inner.copy(led, 0);
  pads.outer.copy(outer, 0);
  // The inner digest as hex, written back as bytes: a Buffer result of the one-shot hash costs ~0.5–1 µs more.
  outer.write(sha256Hex(led), 64, 'hex');
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

/** A sealed body's texts are assembled here, signed and copied out within one call: one buffer serves every seal. */
const sealScratch = new Scratch();
const SEAL_SCRATCH_MAX = 1 << 20;
/** Where sealed bodies (and their compact records) get their own bytes. */
export const sealedBytes = new Slab();

/** svcProof's text while the body is assembled: a hex digest's length, overwritten with the proof once it is known. */
const PROOF_PLACEHOLDER = `"${'0'.repeat(64)}"`;

/** A body sealed by finishSeal. */
export interface FinishedSeal {
  proof: string;
  /** The UTF-8 canonical JSON of the signed body, proofs in (its own buffer). */
  bytes: Buffer;
  /** The JSON text of every member added at a slot (the later ones and svcProof), by name. */
  members: Map<string, string>;
  /**
   * Where the body's variable texts are in `buf` (joinTemplate): for copies such as a compact record, made before the
   * next finishSeal reuses the buffer.
   */
  layout: { buf: Buffer; joined: Joined };
}

/**
 * The second half: add the `later` members, sign (signBody's proof: the HMAC over the canonical JSON of the whole
 * body without its two svcProof fields) and return the UTF-8 canonical JSON of the signed body with the proofs in.
 * The body is written once, with a placeholder where each proof goes; the signed text is that text without the
 * proofs (copied, not written again), and the proof is then written over the placeholders.
 */
export function finishSeal(key: Buffer, prepared: MemberSlots | TemplateTexts, later: Readonly<Record<string, unknown>>): FinishedSeal {
  const texts = 'template' in prepared ? prepared : asTemplate(prepared);
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(later)) values.set(name, canonicalJson(value));
  values.set('svcProof', PROOF_PLACEHOLDER);
  const bound = joinedBound(texts, values);
  // The body, then (after room for the HMAC's inner pad) the signed text. A rare huge body (a solver's large outputs)
  // gets a buffer of its own, so the one kept between seals stays small.
  const size = 2 * bound + 64;
  const buf = size > SEAL_SCRATCH_MAX ? Buffer.allocUnsafe(size) : sealScratch.get(size);
  const joined = joinTemplate(texts, values, buf);
  const signStart = joined.end;
  let at = signStart + 64;
  let from = 0;
  const proofs: JoinedMember[] = [];
  for (const m of joined.members) {
    if (m.name !== 'svcProof') continue;
    // Two proofs in one place would share a comma: then the signed text is written on its own (no body has that).
    if (m.cutStart < from) return finishSealApart(key, texts, values, joined, buf);
    buf.copyWithin(at, from, m.cutStart);
    at += m.cutStart - from;
    from = m.cutEnd;
    proofs.push(m);
  }
  buf.copyWithin(at, from, joined.end);
  at += joined.end - from;
  const proof = hmacOfLed(key, buf.subarray(signStart, at));
  return sealed(proof, values, joined, buf, proofs);
}

/** finishSeal's end: the proof written over its placeholders, and the body copied out of the scratch buffer. */
function sealed(proof: string, values: Map<string, string>, joined: Joined, buf: Buffer, proofs: JoinedMember[]): FinishedSeal {
  for (const m of proofs) buf.write(proof, m.start + 1, 'latin1');
  values.set('svcProof', `"${proof}"`);
  const bytes = sealedBytes.take(joined.end);
  bytes.set(buf.subarray(0, joined.end));
  return { proof, bytes, members: values, layout: { buf, joined } };
}

function finishSealApart(key: Buffer, texts: TemplateTexts, values: Map<string, string>, joined: Joined, buf: Buffer): FinishedSeal {
  const unsigned = new Map(values);
  unsigned.delete('svcProof');
  const led = Buffer.allocUnsafe(64 + joinedBound(texts, unsigned));
  const proof = hmacOfLed(key, led.subarray(0, joinTemplate(texts, unsigned, led, 64).end));
  return sealed(proof, values, joined, buf, joined.members.filter((m) => m.name === 'svcProof'));
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
export function tickReceiptText(key: Buffer, args: TickReceiptFacts, texts?: { R_t: string; phase: string; svcond: string }): string {
  // The stamp's numbers, when the caller has serialised them already (a sealed body holds them too).
  const R = texts?.R_t ?? canonicalJson(args.R_t);
  const fields = canonicalJson(args.fields);
  const phase = texts?.phase ?? canonicalJson(args.phase);
  const svcond = texts?.svcond ?? canonicalJson(args.svcond);
  const signed =
    `{"R_t":${R},"fields":${fields},"phase":${phase},"pulse_hz":${PULSE_HZ_JSON},"result_digest":${canonicalJson(args.result_digest)},` +
    `"svcond":${svcond},"tick_period_s":${TICK_SECONDS_JSON},"unit":${canonicalJson(args.unit)},"value":${canonicalJson(args.value)},"zeqond_ns":${TICK_NS_JSON}}`;
  const hmac = hmacHex(key, signed);
  return `{"R_t":${R},"fields":${fields},"hmac":"${hmac}","phase":${phase},"pulse_hz":${PULSE_HZ_JSON},"svcond":${svcond},"tick_period_s":${TICK_SECONDS_JSON},"zeqond_ns":${TICK_NS_JSON}}`;
}
