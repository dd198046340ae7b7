// kernel/bytes.ts against node:crypto's createHash.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/kernel/bytes.js';

describe('sha256Hex', () => {
  it('is SHA-256 of the UTF-8 bytes of a string, or of the bytes given', () => {
    for (const v of ['', 'abc', 'é·∘→π 😀', '{"a":1}'.repeat(500)]) {
      expect(sha256Hex(v)).toBe(createHash('sha256').update(v, 'utf8').digest('hex'));
      expect(sha256Hex(Buffer.from(v))).toBe(sha256Hex(v));
    }
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
