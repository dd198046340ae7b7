// RFC 8785 (JSON Canonicalization Scheme), plus the digests built on it.
// A direct serializer: keys sorted by UTF-16 code units, numbers in ECMAScript Number-to-string form (-0 → 0,
// NaN/Infinity refused), strings escaped as JSON.stringify does, lone surrogates refused. It produces the same
// text as the `canonicalize` package (the test oracle in test/kernel/canonical.test.ts) for every JSON value,
// about 3× faster (no intermediate arrays, no per-character surrogate scan in JS).
import crypto, { createHash } from 'node:crypto';

const stringify = JSON.stringify;
/** String.prototype.isWellFormed (ES2024, in Node ≥ 20); the project's TypeScript lib predates it. */
type WellFormed = { isWellFormed(): boolean };

/** Characters JSON.stringify would escape, and surrogates (possibly lone). */
const NEEDS_CARE = /[\u0000-\u001f"\\\ud800-\udfff]/;

function str(s: string): string {
  // Fast path (native scan): nothing to escape and no surrogate → quote as is.
  if (!NEEDS_CARE.test(s)) return '"' + s + '"';
  // isWellFormed is native (Node ≥ 20); JSON.stringify escapes exactly as RFC 8785 §3.2.2.2 asks.
  if (!(s as unknown as WellFormed).isWellFormed()) throw new Error('Lone surrogate is not allowed');
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
  if (n !== n) throw new Error('NaN is not allowed');
  if (n === Infinity || n === -Infinity) throw new Error('Infinity is not allowed');
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
      throw new TypeError(`${typeof value} has no canonical JSON form`);
  }
  if (value === null) return 'null';
  if (value instanceof Hole) return holeMark(value);
  if (value instanceof CanonicalText) return value.text;
  if (depth > CYCLE_DEPTH) {
    if (seen === null) seen = new Set();
    else if (seen.has(value)) throw new Error('Circular reference detected');
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

/**
 * A value left open in a template (see canonicalTemplate): serialised as a marker that no JSON text contains (a raw
 * control character, which JSON strings always escape), so the text can be cut there.
 */
export class Hole {
  constructor(readonly name: string) {}
}

/**
 * A value given as its canonical JSON text, written as it is (what a caller serialised already, e.g. to sign it).
 * Only for text made by canonicalJson or checked against it: nothing here re-validates it.
 */
export class CanonicalText {
  constructor(readonly text: string) {}
}

const HOLE_MARK = '\u0001';
/** Set only while canonicalTemplate serialises: anywhere else a Hole is not a JSON value. */
let holesAllowed = false;

function holeMark(hole: Hole): string {
  if (!holesAllowed) throw new TypeError(`hole ${hole.name} has no canonical JSON form (fill it first)`);
  return HOLE_MARK + hole.name + HOLE_MARK;
}

/**
 * The canonical text of one string and of one number, for writers of fixed-shape records (members in sorted order,
 * each value written with these): a record made on every seal is written directly instead of walked. Such a writer
 * is held to canonicalJson of the same object by its tests, and takes only values of its record's types.
 */
export const jsonString: (s: string) => string = str;
export const jsonNumber: (n: number) => string = num;

/** RFC 8785 canonical JSON text of a JSON value. Throws on values JSON cannot carry (undefined at top, NaN). */
export function canonicalJson(value: unknown): string {
  if (value === undefined || typeof value === 'symbol') throw new TypeError('value has no canonical JSON form');
  return ser(value, 0, null);
}

/**
 * Where a member named `name` would be inserted into canonical text: offset, and whether a comma goes before or
 * after it. Slots at the same offset share their commas (see joinTemplate).
 */
export interface Slot {
  name: string;
  offset: number;
  commaBefore: boolean;
  commaAfter: boolean;
}

/**
 * Canonical JSON of an object, plus the places where members named `top` would go in sorted order in the object
 * itself and, when its member `nested` is a plain object, where members named `inNested` would go in that one.
 * The object must not have such members yet. Inserting `"name":value` at those places (joinTemplate) gives the
 * canonical JSON of the object with the members added, without serialising the rest again.
 */
export function canonicalJsonWithSlots(value: Record<string, unknown>, top: readonly string[], nested: string, inNested: readonly string[]): { text: string; slots: Slot[] } {
  const slots: Slot[] = [];
  const text = objectWithSlots(value, [...top].sort(), nested, [...inNested].sort(), 0, 0, slots);
  slots.sort((a, b) => a.offset - b.offset || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { text, slots };
}

function objectWithSlots(obj: Record<string, unknown>, names: readonly string[], nested: string | null, inNested: readonly string[], base: number, depth: number, slots: Slot[]): string {
  const keys = sortedKeys(obj);
  let out = '{';
  let members = 0;
  let next = 0;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = obj[k];
    if (v === undefined || typeof v === 'symbol') continue;
    if (names.includes(k)) throw new Error(`object already has a ${k} member`);
    if (members > 0) out += ',';
    // Names that sort before this member go at the start of its key, each followed by a comma.
    while (next < names.length && names[next]! < k) slots.push({ name: names[next++]!, offset: base + out.length, commaBefore: false, commaAfter: true });
    out += key(k);
    if (k === nested && v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Hole) && typeof (v as { toJSON?: unknown }).toJSON !== 'function') {
      out += objectWithSlots(v as Record<string, unknown>, inNested, null, [], base + out.length, depth + 1, slots);
    } else {
      out += ser(v, depth + 1, null);
    }
    members++;
  }
  // The rest go before the closing brace, after a comma (none in an empty object).
  while (next < names.length) slots.push({ name: names[next++]!, offset: base + out.length, commaBefore: members > 0, commaAfter: false });
  out += '}';
  return out;
}

/**
 * The canonical JSON of an object that has Holes in it, cut at the holes, with the member slots of
 * canonicalJsonWithSlots: made once, then filled (fillTemplate) with the holes' values many times. Filling gives
 * the same text as serialising the object with the values in place of the holes, because canonical order depends
 * on keys only, never on values.
 */
export interface Template {
  /** The text between the holes, as UTF-8: pieces.length === holes.length + 1. */
  pieces: Buffer[];
  /** Name of each hole, in text order (a name may repeat). */
  holes: string[];
  /** The member slots, each in a piece at a byte offset from that piece's start. */
  slots: (Omit<Slot, 'offset'> & { piece: number; at: number })[];
}

export function canonicalTemplate(value: Record<string, unknown>, top: readonly string[], nested: string, inNested: readonly string[]): Template {
  let text: string;
  let slots: Slot[];
  holesAllowed = true;
  try {
    ({ text, slots } = canonicalJsonWithSlots(value, top, nested, inNested));
  } finally {
    holesAllowed = false;
  }
  const cut = text.split(HOLE_MARK);
  const pieces: string[] = [];
  const holes: string[] = [];
  for (let i = 0; i < cut.length; i++) (i % 2 === 0 ? pieces : holes).push(cut[i]!);
  // Slots sit between members, never inside a hole: find each one's piece by its offset in the marked text.
  const out: Template['slots'] = [];
  let piece = 0;
  let start = 0;
  for (const s of slots) {
    while (s.offset > start + pieces[piece]!.length) {
      start += pieces[piece]!.length + holes[piece]!.length + 2 * HOLE_MARK.length;
      piece++;
    }
    out.push({ name: s.name, commaBefore: s.commaBefore, commaAfter: s.commaAfter, piece, at: Buffer.byteLength(pieces[piece]!.slice(0, s.offset - start), 'utf8') });
  }
  return { pieces: pieces.map((p) => Buffer.from(p, 'utf8')), holes, slots: out };
}

/**
 * The template with each hole's value serialised in its place, as UTF-8 with the member slots at byte offsets
 * (what prepareSeal gives for the filled object). Every hole needs a JSON value.
 */
export function fillTemplate(t: Template, values: Readonly<Record<string, unknown>>): MemberSlots {
  return fillTemplateTexts(t, holeTexts(t, values));
}

/** The canonical JSON text of each hole's value, by hole name (a name that repeats is serialised once). */
export function holeTexts(t: Template, values: Readonly<Record<string, unknown>>): Map<string, string> {
  const texts = new Map<string, string>();
  for (const name of t.holes) {
    if (texts.has(name)) continue;
    const v = values[name];
    if (v === undefined) throw new TypeError(`no value for hole ${name}`);
    texts.set(name, canonicalJson(v));
  }
  return texts;
}

/**
 * A buffer reused for output that is read before the next call that uses it (synchronously): a sealed body's
 * intermediate texts are 3–8 KB, and a fresh ArrayBuffer for each costs an allocation and GC work per result.
 */
export class Scratch {
  private buf = Buffer.allocUnsafe(0);
  get(size: number): Buffer {
    if (this.buf.length < size) this.buf = Buffer.allocUnsafe(Math.max(size, 2 * this.buf.length));
    return this.buf;
  }
}

/**
 * Fresh buffers of a few KB cut from large slabs, as Buffer.allocUnsafe cuts small ones from its 8 KiB pool: a sealed
 * body (3–4 KB) is too big for that pool to hold more than one or two, so nearly every seal paid for a new
 * ArrayBuffer (~1 µs). A region is never handed out twice; a slab is freed when no region of it is referenced.
 */
export class Slab {
  private slab = Buffer.allocUnsafe(0);
  private used = 0;
  constructor(
    private readonly slabSize = 256 * 1024,
    private readonly most = 16 * 1024,
  ) {}
  take(size: number): Buffer {
    if (size > this.most) return Buffer.allocUnsafe(size);
    if (this.used + size > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(this.slabSize);
      this.used = 0;
    }
    const region = this.slab.subarray(this.used, this.used + size);
    // Regions start on 8-byte boundaries, as the pool's do.
    this.used += (size + 7) & ~7;
    return region;
  }
}

/** fillTemplate with the holes' canonical JSON texts given (holeTexts). */
export function fillTemplateTexts(t: Template, texts: ReadonlyMap<string, string>): MemberSlots {
  const filled = new Array<string>(t.holes.length);
  let most = 0;
  for (const p of t.pieces) most += p.length;
  for (let i = 0; i < t.holes.length; i++) {
    const text = texts.get(t.holes[i]!);
    if (text === undefined) throw new TypeError(`no text for hole ${t.holes[i]}`);
    filled[i] = text;
    most += UTF8_MAX * text.length;
  }
  // Written straight into the result (sized for the longest UTF-8 the holes can take, then cut): the pieces as
  // UTF-8 made once, the holes' text converted in place.
  const out = Buffer.allocUnsafe(most);
  const starts = new Array<number>(t.pieces.length);
  let at = 0;
  for (let i = 0; i < t.pieces.length; i++) {
    starts[i] = at;
    out.set(t.pieces[i]!, at);
    at += t.pieces[i]!.length;
    if (i < filled.length) at += out.write(filled[i]!, at, 'utf8');
  }
  const slots: Slot[] = t.slots.map((s) => ({ name: s.name, offset: starts[s.piece]! + s.at, commaBefore: s.commaBefore, commaAfter: s.commaAfter }));
  return { bytes: out.subarray(0, at), slots };
}

/** A copy of a value with every Hole replaced by its value (the object form of fillTemplate). */
export function fillHoles<T>(value: T, values: Readonly<Record<string, unknown>>): T {
  if (value instanceof Hole) {
    const v = values[value.name];
    if (v === undefined) throw new TypeError(`no value for hole ${value.name}`);
    return fillHoles(v as T, values);
  }
  if (value instanceof CanonicalText) return JSON.parse(value.text) as T;
  if (Array.isArray(value)) return value.map((v) => fillHoles(v, values)) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = fillHoles(v, values);
    return out as T;
  }
  return value;
}

/** Canonical text as UTF-8 with its slots at byte offsets: what crosses a thread (asTemplate makes it joinable). */
export interface MemberSlots {
  bytes: Uint8Array;
  slots: Slot[];
}

/** UTF-8 bytes per UTF-16 code unit, at most (a surrogate pair is 2 units and 4 bytes). */
const UTF8_MAX = 3;

/** Canonical text as a template and its holes' texts (holeTexts): what joinTemplate writes out. */
export interface TemplateTexts {
  template: Template;
  holes: ReadonlyMap<string, string>;
}

/** A text with member slots as a template of one piece and no holes. */
export function asTemplate(m: MemberSlots): TemplateTexts {
  const bytes = Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
  return { template: { pieces: [bytes], holes: [], slots: m.slots.map((s) => ({ name: s.name, commaBefore: s.commaBefore, commaAfter: s.commaAfter, piece: 0, at: s.offset })) }, holes: new Map() };
}

/** A template's distinct hole names in the order they first appear, and each hole's place among them. */
export interface HoleOrder {
  names: string[];
  /** For each hole of the template (text order), the index of its name in `names`. */
  index: number[];
}
const holeOrders = new WeakMap<Template, HoleOrder>();

export function holeOrder(t: Template): HoleOrder {
  let order = holeOrders.get(t);
  if (order === undefined) {
    const names: string[] = [];
    const index = t.holes.map((name) => {
      const i = names.indexOf(name);
      return i >= 0 ? i : names.push(name) - 1;
    });
    order = { names, index };
    holeOrders.set(t, order);
  }
  return order;
}

/** Where joinTemplate put a member: its value's bytes, and the bytes that removing the member takes out (with one comma). */
export interface JoinedMember {
  name: string;
  start: number;
  end: number;
  cutStart: number;
  cutEnd: number;
}

/** What joinTemplate wrote: the text's end, and where its variable texts are (byte offsets into the buffer). */
export interface Joined {
  end: number;
  /** [start, end) of each distinct hole's text (holeOrder), as flat pairs. */
  holes: number[];
  /** The members written, in text order. */
  members: JoinedMember[];
}

/** `"key":` as UTF-8, by name (slot names repeat from body to body); bounded. */
const keyBytes = new Map<string, Buffer>();

function keyBytesOf(name: string): Buffer {
  let b = keyBytes.get(name);
  if (b === undefined) {
    b = Buffer.from(key(name), 'utf8');
    if (keyBytes.size < QUOTED_KEYS_MAX) keyBytes.set(name, b);
  }
  return b;
}

/** The most bytes joinTemplate can write for these texts. */
export function joinedBound(tt: TemplateTexts, members: ReadonlyMap<string, string>): number {
  const { template: t, holes } = tt;
  let most = 0;
  for (const p of t.pieces) most += p.length;
  for (const name of t.holes) {
    const text = holes.get(name);
    if (text === undefined) throw new TypeError(`no text for hole ${name}`);
    most += UTF8_MAX * text.length;
  }
  // A member: a comma, its key, its value, and the group's other comma.
  for (const s of t.slots) {
    const text = members.get(s.name);
    if (text !== undefined) most += 2 + UTF8_MAX * (s.name.length + 3 + text.length);
  }
  return most;
}

const COMMA = 0x2c;

/**
 * The template's text with its holes filled and `members` inserted at their slots (slots of other names stay empty),
 * written as UTF-8 into `buf` from offset `lead`, after which it holds joinedBound bytes. Members sharing a slot's
 * place are joined by commas and take that place's commas once. One pass converts each text once (a repeated hole is
 * copied from its first place), and it tells where every variable text landed, so that other views of the result
 * (the signed text without some members, a compact record) are made by copying bytes instead of converting again.
 */
export function joinTemplate(tt: TemplateTexts, members: ReadonlyMap<string, string>, buf: Buffer, lead = 0): Joined {
  const { template: t, holes } = tt;
  const order = holeOrder(t);
  const holeRanges = new Array<number>(2 * order.names.length).fill(-1);
  const written: JoinedMember[] = [];
  const slots = t.slots;
  let at = lead;
  let s = 0;
  for (let p = 0; p < t.pieces.length; p++) {
    const piece = t.pieces[p]!;
    let from = 0;
    while (s < slots.length && slots[s]!.piece === p) {
      const first = slots[s]!;
      if (first.at > from) {
        buf.set(piece.subarray(from, first.at), at);
        at += first.at - from;
        from = first.at;
      }
      // The slots at one place share its commas: a comma before the first member written (if the place has one),
      // commas between members, and a comma after the last (if the place has one).
      let group = 0;
      let openCut: JoinedMember | null = null;
      for (; s < slots.length && slots[s]!.piece === p && slots[s]!.at === first.at; s++) {
        const name = slots[s]!.name;
        const text = members.get(name);
        if (text === undefined) continue;
        const member: JoinedMember = { name, start: 0, end: 0, cutStart: at, cutEnd: 0 };
        const comma = group > 0 || first.commaBefore;
        if (comma) buf[at++] = COMMA;
        if (openCut !== null) openCut.cutEnd = at;
        const k = keyBytesOf(name);
        buf.set(k, at);
        at += k.length;
        member.start = at;
        at += buf.write(text, at, 'utf8');
        member.end = at;
        // Led by a comma, the member goes with it; the first member of a place without one goes with the comma after it.
        member.cutEnd = at;
        openCut = comma ? null : member;
        written.push(member);
        group++;
      }
      if (group > 0 && first.commaAfter) {
        buf[at++] = COMMA;
        if (openCut !== null) openCut.cutEnd = at;
      }
    }
    if (from < piece.length) {
      buf.set(from === 0 ? piece : piece.subarray(from), at);
      at += piece.length - from;
    }
    if (p < t.holes.length) {
      const i = order.index[p]!;
      const start = at;
      const first = holeRanges[2 * i]!;
      if (first >= 0) {
        buf.copyWithin(at, first, holeRanges[2 * i + 1]!);
        at += holeRanges[2 * i + 1]! - first;
      } else {
        const text = holes.get(t.holes[p]!);
        if (text === undefined) throw new TypeError(`no text for hole ${t.holes[p]}`);
        at += buf.write(text, at, 'utf8');
        holeRanges[2 * i] = start;
        holeRanges[2 * i + 1] = at;
      }
    }
  }
  return { end: at, holes: holeRanges, members: written };
}

/** joinTemplate into a buffer of its own: the text's UTF-8 bytes. */
export function joinedBytes(tt: TemplateTexts, members: ReadonlyMap<string, string>): Buffer {
  const buf = Buffer.allocUnsafe(joinedBound(tt, members));
  return buf.subarray(0, joinTemplate(tt, members, buf).end);
}

/** One-shot crypto.hash (Node ≥ 20.12): no Hash object per digest. */
const oneShot = (crypto as unknown as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex' | 'buffer') => string | Buffer }).hash;

export function sha256Hex(data: string | Uint8Array): string {
  if (oneShot !== undefined) return oneShot('sha256', data, 'hex') as string;
  return createHash('sha256').update(data).digest('hex');
}

export function sha256Bytes(data: string | Uint8Array): Buffer {
  if (oneShot !== undefined) return oneShot('sha256', data, 'buffer') as Buffer;
  return createHash('sha256').update(data).digest();
}

/** SHA-256 (hex) of the canonical JSON of a value. */
export function canonicalDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
