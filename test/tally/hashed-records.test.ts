// The records every seal hashes or signs are canonicalJson of their objects (the one serializer, held to the
// canonicalize package in test/kernel/canonical.test.ts): an audit row read back with a member of another type is
// not hashed as the original, and a row hash is the SHA-256 of its canonical JSON.
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { sha256Hex } from '../../src/kernel/bytes.js';
import { rowHash, rowText, type AuditRow } from '../../src/chain/service.js';

describe('hashed records', () => {
  it('a row read back with a member of another type is not hashed as the original', () => {
    const row: Omit<AuditRow, 'hash'> = { seq: 5, svcond: 100, transitionType: 'compute_sealed', payload_sha256: 'ab'.repeat(32), prev_hash: '0'.repeat(64) };
    const tampered = { ...row, seq: '5' } as unknown as Omit<AuditRow, 'hash'>;
    expect(rowText(row)).toBe(
      '{"payload_sha256":"' + 'ab'.repeat(32) + '","prev_hash":"' + '0'.repeat(64) + '","seq":5,"svcond":100,"transitionType":"compute_sealed"}',
    );
    expect(rowText(tampered)).toBe(canonicalJson(tampered));
    expect(rowHash(tampered)).not.toBe(rowHash(row));
    expect(rowHash(row)).toBe(sha256Hex(rowText(row)));
  });

  it('a row text refuses what canonicalJson refuses', () => {
    expect(() => rowText({ seq: NaN, svcond: 1, transitionType: 't', payload_sha256: 'p', prev_hash: 'h' })).toThrow(/NaN/);
    expect(() => rowText({ seq: 1, svcond: 1, transitionType: '\ud800', payload_sha256: 'p', prev_hash: 'h' })).toThrow(/surrogate/i);
  });
});
