// The compact record of a sealed result (stored-result.ts): its texts come back exactly, a damaged record is refused,
// a body rebuilt from its template and texts is the body that was sealed, and records of the earlier format (v1)
// still read.
import { describe, expect, it } from 'vitest';
import { asTemplate, canonicalTemplate, fillTemplate, Hole, holeTexts, joinedBytes } from '../../src/kernel/canonical.js';
import { deriveKey, finishSeal } from '../../src/kernel/receipt.js';
import { compactTemplateId, decodeCompact, encodeCompact, isCompact, rebuildBody, storedTemplate, templateFromStored } from '../../src/tally/stored-result.js';

const body = { a: new Hole('x'), b: 'π · ∘ 🜁', cko: { n: new Hole('y'), z: [1, 2.5e-7, null] }, k: new Hole('x') };
const template = canonicalTemplate(body, ['audit', 'svcProof'], 'cko', ['svcProof']);
const key = deriveKey(Buffer.from('stored result test'), 'RECEIPT');

/** A v1 record (what earlier builds wrote): every text named, holes then members. */
function v1Record(holes: Map<string, string>, members: Map<string, string>): Buffer {
  let text = '';
  for (const [name, json] of holes) text += `${name}\x01${json}\x01`;
  text += '\x02';
  for (const [name, json] of members) text += `${name}\x01${json}\x01`;
  return Buffer.concat([Buffer.from([0, 1]), storedTemplate(template).idBytes, Buffer.from(text, 'utf8')]);
}

describe('compact result records', () => {
  it('round-trips hole and member texts, multi-byte and long ones included', () => {
    const long = `"${'é'.repeat(70_000)}"`;
    const holes = new Map([['x', '"🜁 ∘ \\u0000"'], ['y', long]]);
    const sealed = finishSeal(key, { template, holes }, { audit: { seq: 3, note: '∘' } });
    const record = encodeCompact(storedTemplate(template), sealed.layout);
    expect(isCompact(record)).toBe(true);
    expect(record[1]).toBe(2);
    expect(compactTemplateId(record)).toBe(storedTemplate(template).id);
    const back = decodeCompact(record, template);
    expect(back.holes).toEqual(holes);
    expect(back.members).toEqual(new Map([['audit', '{"note":"∘","seq":3}'], ['svcProof', `"${sealed.proof}"`]]));
    // Without the holes' names: shorter than the named v1 record of the same texts.
    expect(record.length).toBeLessThan(v1Record(holes, back.members).length);
  });

  it('rebuilds the sealed bytes from the stored template, after a JSON round trip of the template', () => {
    const values = { x: 'v ∘ 1', y: { deep: [1, 'two'] } };
    const sealed = finishSeal(key, { template, holes: holeTexts(template, values) }, { audit: { seq: 3 } });
    const t = templateFromStored(storedTemplate(template).json);
    const { holes, members } = decodeCompact(encodeCompact(storedTemplate(template), sealed.layout), t);
    expect(rebuildBody(t, holes, members).equals(sealed.bytes)).toBe(true);
    // The same bytes as filling the template and joining the members as separate steps.
    expect(joinedBytes(asTemplate(fillTemplate(template, values)), members).equals(sealed.bytes)).toBe(true);
    expect(JSON.parse(sealed.bytes.toString('utf8'))).toMatchObject({ a: 'v ∘ 1', k: 'v ∘ 1', audit: { seq: 3 }, cko: { n: { deep: [1, 'two'] }, svcProof: sealed.proof }, svcProof: sealed.proof });
  });

  it('reads records of the earlier format (v1, every text named)', () => {
    const values = { x: 7, y: 'why' };
    const members = new Map([['audit', '{"seq":3}'], ['svcProof', '"00ff"']]);
    const record = v1Record(holeTexts(template, values), members);
    expect(compactTemplateId(record)).toBe(storedTemplate(template).id);
    const back = decodeCompact(record, template);
    expect(back.holes).toEqual(holeTexts(template, values));
    expect(back.members).toEqual(members);
    expect(rebuildBody(template, back.holes, back.members).equals(joinedBytes(asTemplate(fillTemplate(template, values)), members))).toBe(true);
  });

  it('refuses a record with an unknown version, extra text, a cut, or holes that do not match its template', () => {
    const sealed = finishSeal(key, { template, holes: holeTexts(template, { x: 1, y: 2 }) }, {});
    const record = encodeCompact(storedTemplate(template), sealed.layout);
    expect(decodeCompact(record, template).holes).toEqual(new Map([['x', '1'], ['y', '2']]));
    const otherVersion = Buffer.from(record);
    otherVersion[1] = 3;
    expect(() => compactTemplateId(otherVersion)).toThrow(/not a compact result record/);
    expect(() => decodeCompact(otherVersion, template)).toThrow(/not a compact result record/);
    expect(() => decodeCompact(Buffer.concat([record, Buffer.from('x')]), template)).toThrow(/damaged/);
    expect(() => decodeCompact(record.subarray(0, record.length - 3), template)).toThrow(/damaged/);
    expect(() => decodeCompact(record.subarray(0, 20), template)).toThrow(/not a compact result record/);
    const fewerHoles = canonicalTemplate({ a: new Hole('x') }, [], 'cko', []);
    expect(() => decodeCompact(record, fewerHoles)).toThrow(/do not match its template/);
    // A whole body is not a compact record.
    expect(isCompact(Buffer.from('{"a":1}'))).toBe(false);
  });
});
