// Reading result records of the compact format older nodes wrote when a repeated request's body was
// filled from a kept template: such a record holds the template's id plus the result's own texts (the holes' JSON and
// the members the ledger and the proof added), and the template is stored once under its id (`result_templates`).
// Every result is now stored whole, as its UTF-8 JSON; records already written this way are still read, rebuilt
// byte for byte as they were sent.
// Record layout: 0x00 (a whole body starts with `{`), the format version, the template id (32 bytes), then
// version 2: each distinct hole's text in the order the holes first appear in the template, each followed by 0x01;
// version 1: each hole as name, 0x01, text, 0x01; then (both) 0x02, then each member as name, 0x01, text, 0x01.
// Canonical JSON never holds a raw control character (RFC 8785 escapes them), so the separators cannot occur in a text.

/**
 * A stored template: the canonical text of a body cut at its holes (pieces.length === holes.length + 1, a hole name
 * may repeat), and the slots where members were inserted, each at a UTF-8 byte offset `at` into piece `piece`. Slots
 * at one place share their commas: one before the first member written if `commaBefore`, one after the last if
 * `commaAfter`, and one between members.
 */
export interface StoredTemplate {
  pieces: string[];
  holes: string[];
  slots: { name: string; commaBefore: boolean; commaAfter: boolean; piece: number; at: number }[];
}

const COMPACT_MARK = 0x00;
const COMPACT_V1 = 0x01;
const COMPACT_V2 = 0x02;
const FIELD = '\x01';
const PART = '\x02';

export function templateFromStored(json: string): StoredTemplate {
  const o = JSON.parse(json) as StoredTemplate;
  if (!Array.isArray(o.pieces) || !Array.isArray(o.holes) || !Array.isArray(o.slots) || o.pieces.length !== o.holes.length + 1)
    throw new Error('stored result template: damaged');
  return { pieces: o.pieces, holes: o.holes, slots: o.slots };
}

export function isCompact(record: Uint8Array): boolean {
  return record[0] === COMPACT_MARK;
}

/** The id of the template a compact record was filled from. */
export function compactTemplateId(record: Uint8Array): string {
  if (record.length < 35 || record[0] !== COMPACT_MARK || (record[1] !== COMPACT_V1 && record[1] !== COMPACT_V2))
    throw new Error('not a compact result record');
  return Buffer.from(record.buffer, record.byteOffset, record.byteLength).toString('hex', 2, 34);
}

/** A compact record's texts: each hole's and each member's JSON text, by name. `template` is the record's own. */
export function decodeCompact(record: Uint8Array, template: StoredTemplate): { holes: Map<string, string>; members: Map<string, string> } {
  compactTemplateId(record);
  const parts = Buffer.from(record.buffer, record.byteOffset, record.byteLength).toString('utf8', 34).split(PART);
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
  const names = [...new Set(template.holes)];
  const texts = fieldsOf(parts[0]!, 1);
  if (texts.length !== names.length) throw new Error('compact result record: damaged text (its holes do not match its template)');
  return { holes: new Map(names.map((name, i) => [name, texts[i]!])), members };
}

/** The body's bytes from its template and its texts: the pieces with the members at their slots, and the holes filled. */
export function rebuildBody(template: StoredTemplate, holes: ReadonlyMap<string, string>, members: ReadonlyMap<string, string>): Buffer {
  const out: Buffer[] = [];
  let s = 0;
  for (let p = 0; p < template.pieces.length; p++) {
    const piece = Buffer.from(template.pieces[p]!, 'utf8');
    let from = 0;
    while (s < template.slots.length && template.slots[s]!.piece === p) {
      const first = template.slots[s]!;
      let text = '';
      let group = 0;
      for (; s < template.slots.length && template.slots[s]!.piece === p && template.slots[s]!.at === first.at; s++) {
        const value = members.get(template.slots[s]!.name);
        if (value === undefined) continue;
        if (group > 0 || first.commaBefore) text += ',';
        text += `${JSON.stringify(template.slots[s]!.name)}:${value}`;
        group++;
      }
      if (group === 0) continue;
      if (first.commaAfter) text += ',';
      out.push(piece.subarray(from, first.at), Buffer.from(text, 'utf8'));
      from = first.at;
    }
    out.push(piece.subarray(from));
    if (p < template.holes.length) {
      const text = holes.get(template.holes[p]!);
      if (text === undefined) throw new Error(`compact result record: no text for hole ${template.holes[p]}`);
      out.push(Buffer.from(text, 'utf8'));
    }
  }
  return Buffer.concat(out);
}
