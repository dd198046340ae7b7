// How a sealed result is kept in the `results` sublevel. A body filled from a kept template (sealed-body.ts) is
// stored as the template's id plus its own texts: the holes' JSON and the members the ledger and the proof add.
// The template itself is stored once, under its id, in the same batch as the first result that uses it. Any other
// body is stored whole, as its UTF-8 JSON.
// Rebuilding runs the same fill and join as sealing did, so the bytes are the ones that were sent.
// Why: a repeated request's body is ~3.3 KB, of which ~1 KB changes from result to result. Storing the whole body
// made the result ~75 % of the bytes each seal writes, and LevelDB's log, memtable and compactions cost CPU per byte.
import { fillTemplateTexts, joinAtSlots, sha256Hex, type Template } from '../kernel/canonical.js';

/** A template in its stored form, and its id (the SHA-256 of that form). */
export interface StoredTemplate {
  id: string;
  /** The id as its 32 bytes (what a compact record holds). */
  idBytes: Buffer;
  json: string;
}

/** What a sealed result filled from a kept template stores instead of its body. */
export interface CompactResult {
  template: StoredTemplate;
  /** Each hole's JSON text, by hole name. */
  holes: ReadonlyMap<string, string>;
  /** Each member added at a slot (ledger members and proofs), by name: its JSON text. */
  members: ReadonlyMap<string, string>;
}

/** A whole body starts with `{`; a compact record with this byte, then its format version. */
const COMPACT_MARK = 0x00;
const COMPACT_VERSION = 0x01;
/** Separators in the record's text: canonical JSON never holds a raw control character (RFC 8785 escapes them). */
const FIELD = '\x01';
const PART = '\x02';

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
 * The record: mark, version, the template id (32 bytes), then one UTF-8 text: each hole as name, FIELD, text,
 * FIELD; then PART; then each member the same way. Made as one string and written once (one UTF-8 conversion).
 */
export function encodeCompact(c: CompactResult): Buffer {
  let text = '';
  for (const [name, json] of c.holes) text += name + FIELD + json + FIELD;
  text += PART;
  for (const [name, json] of c.members) text += name + FIELD + json + FIELD;
  const out = Buffer.allocUnsafe(34 + 3 * text.length);
  out[0] = COMPACT_MARK;
  out[1] = COMPACT_VERSION;
  out.set(c.template.idBytes, 2);
  return out.subarray(0, 34 + out.write(text, 34, 'utf8'));
}

export function decodeCompact(record: Uint8Array): { templateId: string; holes: Map<string, string>; members: Map<string, string> } {
  const buf = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  if (buf.length < 35 || buf[0] !== COMPACT_MARK || buf[1] !== COMPACT_VERSION) throw new Error('not a compact result record');
  const parts = buf.toString('utf8', 34).split(PART);
  if (parts.length !== 2) throw new Error('compact result record: damaged text');
  const [holes, members] = parts.map((part) => {
    const fields = part.split(FIELD);
    // name, text, name, text, …, then '' after the last FIELD
    if (fields.length % 2 !== 1 || fields[fields.length - 1] !== '') throw new Error('compact result record: damaged text');
    const map = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
    return map;
  }) as [Map<string, string>, Map<string, string>];
  return { templateId: buf.toString('hex', 2, 34), holes, members };
}

/** The body's bytes from its compact record and its template (the same fill and join as sealing). */
export function rebuildBody(template: Template, holes: ReadonlyMap<string, string>, members: ReadonlyMap<string, string>): Buffer {
  return joinAtSlots(fillTemplateTexts(template, holes), members);
}
