// RFC 8785 (JSON Canonicalization Scheme): the one serializer of everything the node hashes or signs, and the digest
// built on it. (Canonical text with room for members added later: member-slots.ts; SHA-256: bytes.ts.)
// A direct serializer: keys sorted by UTF-16 code units, numbers in ECMAScript Number-to-string form (-0 → 0,
// NaN/Infinity refused), strings escaped as JSON.stringify does, lone surrogates refused (NoCanonicalForm). It produces the same
// text as the `canonicalize` package (the test oracle in test/kernel/canonical.test.ts) for every JSON value,
// several times faster (scripts/bench/micro/canonical.ts; no intermediate arrays, no per-character surrogate scan in JS).
import { sha256Hex } from './bytes.js';
import { ServiceError } from './errors.js';

export type NoCanonicalFormReason = 'lone_surrogate' | 'not_finite' | 'circular' | 'not_json';

/**
 * A value RFC 8785 has no text for, in part 7's shape. Its status follows from what it can have come from: a lone
 * surrogate only from a caller's JSON text (a `\ud800` escape), so 400 SVC_INVALID_INPUT; JSON text carries no NaN,
 * Infinity, cycle or undefined, so those are the node's own values: 500 SVC_INTERNAL_ERROR, naming what it was.
 */
export class NoCanonicalForm extends ServiceError {
  readonly reason: NoCanonicalFormReason;
  constructor(reason: NoCanonicalFormReason, what: string) {
    const message = `${what} has no canonical JSON form (RFC 8785)`;
    if (reason === 'lone_surrogate') super(400, 'SVC_INVALID_INPUT', message, { field: null, reason: message, allowed: null });
    else super(500, 'SVC_INTERNAL_ERROR', `a value to hash or sign: ${message}`);
    this.name = 'NoCanonicalForm';
    this.reason = reason;
  }
}

const stringify = JSON.stringify;
/** String.prototype.isWellFormed (ES2024, in Node ≥ 20); the project's TypeScript lib predates it. */
type WellFormed = { isWellFormed(): boolean };

/** Characters JSON.stringify would escape, and surrogates (possibly lone). */
// eslint-disable-next-line no-control-regex -- RFC 8785 escapes the control characters: finding them is the point
const NEEDS_CARE = /[\u0000-\u001f"\\\ud800-\udfff]/;

function str(s: string): string {
  // Fast path (native scan): nothing to escape and no surrogate → quote as is.
  if (!NEEDS_CARE.test(s)) return '"' + s + '"';
  // isWellFormed is native (Node ≥ 20); JSON.stringify escapes exactly as RFC 8785 §3.2.2.2 asks.
  if (!(s as unknown as WellFormed).isWellFormed()) throw new NoCanonicalForm('lone_surrogate', 'a string holding a lone UTF-16 surrogate');
  return stringify(s);
}

/** `"key":` of object keys seen before (keys repeat from body to body); bounded. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_MAX = 4096;

function key(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = str(k) + ':';
    if (quotedKeys.size < QUOTED_KEYS_MAX) quotedKeys.set(k, q);
  }
  return q;
}

/**
 * Sorted key lists of object shapes seen before, by first key: an object with the same own keys in the same
 * order (compared element by element) reuses the sorted list instead of sorting again. Bounded.
 */
const sortedShapes = new Map<string, { keys: string[]; sorted: string[] }[]>();
let shapeCount = 0;
const SHAPES_MAX = 2048;

function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  const n = keys.length;
  if (n < 2) return keys;
  const first = keys[0]!;
  const candidates = sortedShapes.get(first);
  if (candidates !== undefined) {
    for (let c = 0; c < candidates.length; c++) {
      const cand = candidates[c]!;
      const ck = cand.keys;
      if (ck.length !== n) continue;
      let same = true;
      for (let i = 1; i < n; i++) {
        if (ck[i] !== keys[i]) {
          same = false;
          break;
        }
      }
      if (same) return cand.sorted;
    }
  }
  const sorted = keys.slice().sort();
  if (shapeCount < SHAPES_MAX) {
    shapeCount++;
    if (candidates === undefined) sortedShapes.set(first, [{ keys, sorted }]);
    else candidates.push({ keys, sorted });
  }
  return sorted;
}

function num(n: number): string {
  if (n !== n || n === Infinity || n === -Infinity) throw new NoCanonicalForm('not_finite', String(n));
  // ECMAScript Number::toString, which RFC 8785 adopts; -0 prints as "0".
  return '' + n;
}

/**
 * Cycle check: ancestors deeper than CYCLE_DEPTH are tracked in `seen` (created on first need). A cycle repeats
 * forever, so it always reaches the tracked depth and is refused there, as canonicalize refuses it; shallow
 * values (every body we sign) pay nothing for it.
 */
const CYCLE_DEPTH = 24;

function ser(value: unknown, depth: number, seen: Set<object> | null): string {
  switch (typeof value) {
    case 'string':
      return str(value);
    case 'number':
      return num(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      // undefined, symbol, function, bigint: not JSON values (objects skip the first two, arrays make them null).
      throw new NoCanonicalForm('not_json', `a ${typeof value}`);
  }
  if (value === null) return 'null';
  if (depth > CYCLE_DEPTH) {
    if (seen === null) seen = new Set();
    else if (seen.has(value)) throw new NoCanonicalForm('circular', 'a circular reference');
    seen.add(value);
  }
  const d = depth + 1;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    const text = ser((value as { toJSON(): unknown }).toJSON(), d, seen);
    if (depth > CYCLE_DEPTH) seen!.delete(value);
    return text;
  }
  let out: string;
  if (Array.isArray(value)) {
    const n = value.length;
    if (n === 0) out = '[]';
    else {
      out = '[';
      for (let i = 0; i < n; i++) {
        const v: unknown = value[i];
        if (i > 0) out += ',';
        out += v === undefined || typeof v === 'symbol' ? 'null' : ser(v, d, seen);
      }
      out += ']';
    }
  } else {
    const obj = value as Record<string, unknown>;
    const keys = sortedKeys(obj);
    out = '{';
    let first = true;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]!;
      const v = obj[k];
      if (v === undefined || typeof v === 'symbol') continue;
      if (first) first = false;
      else out += ',';
      out += key(k);
      out += ser(v, d, seen);
    }
    out += '}';
  }
  if (depth > CYCLE_DEPTH) seen!.delete(value);
  return out;
}

/** RFC 8785 canonical JSON text of a JSON value. Throws NoCanonicalForm on values JSON cannot carry (undefined at top, NaN, a lone surrogate). */
export function canonicalJson(value: unknown): string {
  if (value === undefined || typeof value === 'symbol') throw new NoCanonicalForm('not_json', `a ${String(typeof value)}`);
  return ser(value, 0, null);
}

/** SHA-256 (hex) of the canonical JSON of a value. */
export function canonicalDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
