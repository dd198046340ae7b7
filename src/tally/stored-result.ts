// How a sealed result is kept in the `results` sublevel. A body filled from a kept template (sealed-body.ts) is
// stored as the template's id plus its own texts: the holes' JSON and the members the ledger and the proof add.
// The template itself is stored once, under its id, in the same batch as the first result that uses it. Any other
// body is stored whole, as its UTF-8 JSON.
// Rebuilding runs the same fill and join as sealing did, so the bytes are the ones that were sent.
// Why: a repeated request's body is ~3.3 KB, of which ~1 KB changes from result to result. Storing the whole body
// made the result ~75 % of the bytes each seal writes, and LevelDB's log, memtable and compactions cost CPU per byte.
import { holeOrder, joinedBytes, sha256Hex, type Joined, type Template } from '../kernel/canonical.js';
import { sealedBytes } from '../kernel/receipt.js';

/** A template in its stored form, and its id (the SHA-256 of that form). */
export interface StoredTemplate {
  id: string;
  /** The id as its 32 bytes (what a compact record holds). */
  idBytes: Buffer;
  json: string;
}

/** A result stored compact: its record (encodeCompact), and the template the record names. */
export interface CompactRecord {
  template: StoredTemplate;
  record: Buffer;
}

/** A whole body starts with `{`; a compact record with this byte, then its format version. */
const COMPACT_MARK = 0x00;
/** Version 1 named every text; version 2 (written now) leaves out the holes' names, which the template has. */
const COMPACT_V1 = 0x01;
const COMPACT_V2 = 0x02;
/** Separators in the record's text: canonical JSON never holds a raw control character (RFC 8785 escapes them). */
const FIELD = '\x01';
const PART = '\x02';
const FIELD_BYTE = 0x01;
const PART_BYTE = 0x02;

export function storedTemplate(t: Template): StoredTemplate {
  const json = JSON.stringify({ pieces: t.pieces.map((p) => p.toString('utf8')), holes: t.holes, slots: t.slots });
  const id = sha256Hex(json);
  return { id, idBytes: Buffer.from(id, 'hex'), json };
}

export function templateFromStored(json: string): Template {
  const o = JSON.parse(json) as { pieces: string[]; holes: string[]; slots: Template['slots'] };
  return { pieces: o.pieces.map((p) => Buffer.from(p, 'utf8')), holes: o.holes, slots: o.slots };
}

export function isCompact(record: Uint8Array): boolean {
  return record[0] === COMPACT_MARK;
}

/**
 * The compact record of a body sealed from `template` (finishSeal's layout): mark, version 2, the template id
 * (32 bytes), then each distinct hole's text (in holeOrder) followed by FIELD, then PART, then each member added at a
 * slot as name, FIELD, text, FIELD. The texts are copied from where the seal wrote them, not converted again.
 */
export function encodeCompact(template: StoredTemplate, layout: { buf: Buffer; joined: Joined }): Buffer {
  const { buf, joined } = layout;
  const h = joined.holes;
  const members = joined.members.filter((m, i) => joined.members.findIndex((o) => o.name === m.name) === i);
  let size = 35;
  for (let i = 0; i < h.length; i += 2) size += h[i + 1]! - h[i]! + 1;
  for (const m of members) size += Buffer.byteLength(m.name, 'utf8') + m.end - m.start + 2;
  const out = sealedBytes.take(size);
  out[0] = COMPACT_MARK;
  out[1] = COMPACT_V2;
  out.set(template.idBytes, 2);
  let at = 34;
  for (let i = 0; i < h.length; i += 2) {
    out.set(buf.subarray(h[i]!, h[i + 1]!), at);
    at += h[i + 1]! - h[i]!;
    out[at++] = FIELD_BYTE;
  }
  out[at++] = PART_BYTE;
  for (const m of members) {
    at += out.write(m.name, at, 'utf8');
    out[at++] = FIELD_BYTE;
    out.set(buf.subarray(m.start, m.end), at);
    at += m.end - m.start;
    out[at++] = FIELD_BYTE;
  }
  return out;
}

/** The id of the template a compact record was filled from. */
export function compactTemplateId(record: Uint8Array): string {
  if (record.length < 35 || record[0] !== COMPACT_MARK || (record[1] !== COMPACT_V1 && record[1] !== COMPACT_V2)) throw new Error('not a compact result record');
  return Buffer.from(record.buffer, record.byteOffset, record.byteLength).toString('hex', 2, 34);
}

/** A compact record's texts: each hole's and each member's JSON text, by name. `template` is the record's own. */
export function decodeCompact(record: Uint8Array, template: Template): { holes: Map<string, string>; members: Map<string, string> } {
  compactTemplateId(record);
  const buf = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  const parts = buf.toString('utf8', 34).split(PART);
  if (parts.length !== 2) throw new Error('compact result record: damaged text');
  const fieldsOf = (part: string, each: number): string[] => {
    const fields = part.split(FIELD);
    // `each` texts per entry, then '' after the last FIELD
    if ((fields.length - 1) % each !== 0 || fields[fields.length - 1] !== '') throw new Error('compact result record: damaged text');
    return fields.slice(0, -1);
  };
  const named = (fields: string[]): Map<string, string> => {
    const map = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
    return map;
  };
  const members = named(fieldsOf(parts[1]!, 2));
  if (record[1] === COMPACT_V1) return { holes: named(fieldsOf(parts[0]!, 2)), members };
  const names = holeOrder(template).names;
  const texts = fieldsOf(parts[0]!, 1);
  if (texts.length !== names.length) throw new Error('compact result record: damaged text (its holes do not match its template)');
  return { holes: new Map(names.map((name, i) => [name, texts[i]!])), members };
}

/** The body's bytes from its compact record and its template (the same fill and join as sealing). */
export function rebuildBody(template: Template, holes: ReadonlyMap<string, string>, members: ReadonlyMap<string, string>): Buffer {
  return joinedBytes({ template, holes }, members);
}
