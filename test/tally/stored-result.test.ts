// The compact record of a sealed result (stored-result.ts): its texts come back exactly, a damaged record is refused,
// and a body rebuilt from its template and texts is the body that was sealed.
import { describe, expect, it } from 'vitest';
import { canonicalTemplate, fillTemplate, Hole, holeTexts, joinAtSlots } from '../../src/kernel/canonical.js';
import { decodeCompact, encodeCompact, isCompact, rebuildBody, storedTemplate, templateFromStored } from '../../src/tally/stored-result.js';

const body = { a: new Hole('x'), b: 'π · ∘ 🜁', cko: { n: new Hole('y'), z: [1, 2.5e-7, null] }, k: new Hole('x') };
const template = canonicalTemplate(body, ['audit', 'svcProof'], 'cko', ['svcProof']);

describe('compact result records', () => {
  it('round-trips hole and member texts, multi-byte and long ones included', () => {
    const long = `"${'é'.repeat(70_000)}"`;
    const holes = new Map([['x', '"🜁 ∘ \\u0000"'], ['y', long]]);
    const members = new Map([['audit', '{"seq":3}'], ['svcProof', `"${'ab'.repeat(32)}"`]]);
    const record = encodeCompact({ template: storedTemplate(template), holes, members });
    expect(isCompact(record)).toBe(true);
    const back = decodeCompact(record);
    expect(back.templateId).toBe(storedTemplate(template).id);
    expect(back.holes).toEqual(holes);
    expect(back.members).toEqual(members);
  });

  it('rebuilds the sealed bytes from the stored template, after a JSON round trip of the template', () => {
    const values = { x: 'v ∘ 1', y: { deep: [1, 'two'] } };
    const members = new Map([['audit', '{"seq":3}'], ['svcProof', '"00ff"']]);
    const sealed = joinAtSlots(fillTemplate(template, values), members);
    const t = templateFromStored(storedTemplate(template).json);
    expect(rebuildBody(t, holeTexts(template, values), members).equals(sealed)).toBe(true);
    expect(JSON.parse(sealed.toString('utf8'))).toMatchObject({ a: 'v ∘ 1', k: 'v ∘ 1', audit: { seq: 3 }, cko: { n: { deep: [1, 'two'] }, svcProof: '00ff' }, svcProof: '00ff' });
  });

  it('refuses a record with another version, extra text or a cut', () => {
    const record = encodeCompact({ template: storedTemplate(template), holes: new Map([['x', '1'], ['y', '2']]), members: new Map() });
    const otherVersion = Buffer.from(record);
    otherVersion[1] = 2;
    expect(() => decodeCompact(otherVersion)).toThrow(/not a compact result record/);
    expect(() => decodeCompact(Buffer.concat([record, Buffer.from('x')]))).toThrow(/damaged/);
    expect(() => decodeCompact(record.subarray(0, record.length - 3))).toThrow(/damaged/);
    expect(() => decodeCompact(record.subarray(0, 20))).toThrow(/not a compact result record/);
    // A whole body is not a compact record.
    expect(isCompact(Buffer.from('{"a":1}'))).toBe(false);
  });
});
