// Canonical JSON with room for members added later: the RFC 8785 text of an object (canonical.ts) as UTF-8, plus
// the places where members of given names would go in sorted key order, at its top level and in one nested object.
// Inserting `"name":value` there gives the canonical JSON of the object with those members, without serialising the
// rest again (canonical order depends on keys only). A sealed body is made this way: the seal worker serialises it,
// and the main thread adds the ledger's members and the proofs when the seal is committed (receipt.ts).
import { canonicalJson } from './canonical.js';

/**
 * Where a member named `name` goes: a byte offset into the UTF-8 text, and whether a comma goes before or after it.
 * Slots at one offset share their commas (insertMembers).
 */
export interface Slot {
  name: string;
  offset: number;
  commaBefore: boolean;
  commaAfter: boolean;
}

/** Canonical JSON as UTF-8 with its member slots, sorted by offset then name (plain data: it crosses threads). */
export interface SlottedJson {
  bytes: Uint8Array;
  slots: Slot[];
}

/**
 * The canonical JSON of `value` with slots for members named `top` in the object itself and, when its member
 * `nested` is a plain object, for members named `inNested` in that one. The object must not have such members yet.
 */
export function canonicalJsonWithSlots(value: Record<string, unknown>, top: readonly string[], nested: string, inNested: readonly string[]): SlottedJson {
  const slots: Slot[] = [];
  const text = objectWithSlots(value, [...top].sort(), nested, [...inNested].sort(), 0, slots);
  slots.sort((a, b) => a.offset - b.offset || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // The offsets so far count UTF-16 code units of the text; the slots say where in its UTF-8 bytes.
  let units = 0;
  let bytes = 0;
  for (const s of slots) {
    bytes += Buffer.byteLength(text.slice(units, s.offset), 'utf8');
    units = s.offset;
    s.offset = bytes;
  }
  return { bytes: Buffer.from(text, 'utf8'), slots };
}

function objectWithSlots(
  obj: Record<string, unknown>,
  names: readonly string[],
  nested: string | null,
  inNested: readonly string[],
  base: number,
  slots: Slot[],
): string {
  // Default sort compares UTF-16 code units, as RFC 8785 orders keys.
  const keys = Object.keys(obj).sort();
  let out = '{';
  let members = 0;
  let next = 0;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || typeof v === 'symbol') continue;
    if (names.includes(k)) throw new Error(`object already has a ${k} member`);
    if (members > 0) out += ',';
    // Names that sort before this member go at the start of its key, each followed by a comma.
    while (next < names.length && names[next]! < k) slots.push({ name: names[next++]!, offset: base + out.length, commaBefore: false, commaAfter: true });
    out += canonicalJson(k) + ':';
    if (k === nested && isPlainObject(v)) out += objectWithSlots(v, inNested, null, [], base + out.length, slots);
    else out += canonicalJson(v);
    members++;
  }
  // The rest go before the closing brace, after a comma (none in an empty object).
  while (next < names.length) slots.push({ name: names[next++]!, offset: base + out.length, commaBefore: members > 0, commaAfter: false });
  return out + '}';
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/**
 * The text with `members` (name → canonical JSON text of its value) inserted at their slots; slots of other names
 * stay empty. Members sharing a place are written in name order, joined by commas, and take the place's commas once.
 */
export function insertMembers(json: SlottedJson, members: ReadonlyMap<string, string>): Buffer {
  const { bytes, slots } = json;
  // The text to insert at each place that gets members: [offset, text] pairs.
  const inserts: [number, string][] = [];
  let size = bytes.length;
  let s = 0;
  while (s < slots.length) {
    const first = slots[s]!;
    let text = '';
    let group = 0;
    for (; s < slots.length && slots[s]!.offset === first.offset; s++) {
      const value = members.get(slots[s]!.name);
      if (value === undefined) continue;
      if (group > 0 || first.commaBefore) text += ',';
      text += canonicalJson(slots[s]!.name) + ':' + value;
      group++;
    }
    if (group === 0) continue;
    if (first.commaAfter) text += ',';
    inserts.push([first.offset, text]);
    size += Buffer.byteLength(text, 'utf8');
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  let from = 0;
  for (const [offset, text] of inserts) {
    out.set(bytes.subarray(from, offset), at);
    at += offset - from;
    at += out.write(text, at, 'utf8');
    from = offset;
  }
  out.set(bytes.subarray(from), at);
  return out;
}
