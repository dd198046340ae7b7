// Result records of the old compact format (written by nodes before the kept-template path was removed; a fixture
// made by that code, test/tally/fixtures/compact-records.json) still read: each is rebuilt as the exact bytes that
// were sent, which verify with the receipt key they were sealed with; a damaged record is refused.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/kernel/bytes.js';
import { deriveKey, verifyBody } from '../../src/kernel/receipt.js';
import { compactTemplateId, decodeCompact, isCompact, rebuildBody, templateFromStored } from '../../src/tally/stored-result.js';

const fixture = JSON.parse(readFileSync(new URL('./fixtures/compact-records.json', import.meta.url), 'utf8')) as {
  secret: string;
  templateId: string;
  template: string;
  results: { version: number; record: string; body: string }[];
};
const key = deriveKey(Buffer.from(fixture.secret, 'utf8'), 'RECEIPT');
const template = templateFromStored(fixture.template);

describe('compact result records of the old format', () => {
  it('name their template by the SHA-256 of its stored form', () => {
    expect(sha256Hex(fixture.template)).toBe(fixture.templateId);
    for (const r of fixture.results) expect(compactTemplateId(Buffer.from(r.record, 'base64'))).toBe(fixture.templateId);
  });

  it('are rebuilt as the bytes that were sent, which verify (formats 2 and 1)', () => {
    expect(fixture.results.map((r) => r.version).sort()).toEqual([1, 2, 2]);
    for (const r of fixture.results) {
      const record = Buffer.from(r.record, 'base64');
      expect(isCompact(record)).toBe(true);
      const { holes, members } = decodeCompact(record, template);
      const bytes = rebuildBody(template, holes, members);
      expect(bytes.equals(Buffer.from(r.body, 'base64'))).toBe(true);
      const body = JSON.parse(bytes.toString('utf8'));
      expect(body.value).toBe(0.5 * 7.25 * 9);
      expect(body.svcProof).toBe(JSON.parse(members.get('svcProof')!));
      expect(verifyBody(key, body)).toBe(true);
    }
    // The format-1 record holds the same result as the second format-2 one.
    expect(fixture.results[2]!.body).toBe(fixture.results[1]!.body);
  });

  it('refuse a record with an unknown version, extra text, a cut, or holes that do not match its template', () => {
    const record = Buffer.from(fixture.results.find((r) => r.version === 2)!.record, 'base64');
    const otherVersion = Buffer.from(record);
    otherVersion[1] = 3;
    expect(() => compactTemplateId(otherVersion)).toThrow(/not a compact result record/);
    expect(() => decodeCompact(otherVersion, template)).toThrow(/not a compact result record/);
    expect(() => decodeCompact(Buffer.concat([record, Buffer.from('x')]), template)).toThrow(/damaged/);
    expect(() => decodeCompact(record.subarray(0, record.length - 3), template)).toThrow(/damaged/);
    expect(() => decodeCompact(record.subarray(0, 20), template)).toThrow(/not a compact result record/);
    const fewerHoles = { ...template, pieces: template.pieces.slice(0, 2), holes: template.holes.slice(0, 1) };
    expect(() => decodeCompact(record, fewerHoles)).toThrow(/do not match its template/);
    expect(() => templateFromStored('{"pieces":["{}"],"holes":["x"],"slots":[]}')).toThrow(/damaged/);
    // A whole body is not a compact record.
    expect(isCompact(Buffer.from('{"a":1}'))).toBe(false);
  });
});
