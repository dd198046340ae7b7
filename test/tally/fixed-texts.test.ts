// Records written on every seal have fixed-shape writers (members in sorted order, values through canonical.ts's
// jsonString / jsonNumber). Each is held here to canonicalJson of the same object (itself held to the canonicalize
// package in test/kernel/canonical.test.ts), over values that need escaping or special number forms.
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { rowHash, rowText, type AuditRow } from '../../src/chain/service.js';
import { envelopeCoreText, tallyChargeText, type TallyCharge } from '../../src/tally/ledger.js';
import { auditText, envelopeViewText } from '../../src/compute/service.js';

const strings = ['zid_0123abcd', '', 'a"b\\c', 'tab\there\nnew', '\u0001\u001f', 'π · ∘ → 😀', '</script>', 'm-2d711642b726b044'];
const numbers = [0, -0, 1, 7, 123456789, 2310884911, 0.1, 1e21, 1e-7, -3.5, Number.MAX_SAFE_INTEGER];
const pick = <T>(xs: T[], i: number): T => xs[i % xs.length]!;

describe('fixed-shape writers give canonicalJson of the same object', () => {
  it('the audit row text (what its hash is taken over)', () => {
    for (let i = 0; i < 40; i++) {
      const row = { seq: pick(numbers, i), svcond: pick(numbers, i + 3), transitionType: pick(strings, i), payload_sha256: pick(strings, i + 1), prev_hash: pick(strings, i + 2) };
      expect(rowText(row)).toBe(canonicalJson(row));
    }
  });

  it('a row read back with a member of another type is not hashed as the original', () => {
    const row: Omit<AuditRow, 'hash'> = { seq: 5, svcond: 100, transitionType: 'compute_sealed', payload_sha256: 'ab'.repeat(32), prev_hash: '0'.repeat(64) };
    const tampered = { ...row, seq: '5' } as unknown as Omit<AuditRow, 'hash'>;
    expect(rowText(tampered)).toBe(canonicalJson(tampered));
    expect(rowHash(tampered)).not.toBe(rowHash(row));
  });

  it("the envelope's core", () => {
    for (let i = 0; i < 40; i++) {
      const core = { token_id: pick(strings, i), owner: pick(strings, i + 1), face_value: pick(numbers, i), result_id: pick(strings, i + 2), result_digest: pick(strings, i + 3), svcond: pick(numbers, i + 5) };
      expect(envelopeCoreText(core)).toBe(canonicalJson(core));
    }
  });

  it('the tally_charge member, with and without a balance', () => {
    for (let i = 0; i < 40; i++) {
      const charge: TallyCharge = {
        action: pick(strings, i),
        cost: pick(numbers, i),
        charged: pick(numbers, i + 1),
        burned: pick(numbers, i + 2),
        foundation: pick(numbers, i + 3),
        funded_by: pick(['free', 'paid', 'demo', 'anonymous'] as const, i),
        balance_after: i % 3 === 0 ? null : { free: pick(numbers, i + 4), paid: pick(numbers, i + 5) },
      };
      expect(tallyChargeText(charge)).toBe(canonicalJson(charge));
    }
  });

  it('the envelope member (svcond shown as tick)', () => {
    for (let i = 0; i < 40; i++) {
      const e = { token_id: pick(strings, i), face_value: pick(numbers, i), folder: pick(strings, i + 1), funding: pick(strings, i + 2), soulbound: i % 2 === 0, svcond: pick(numbers, i + 3), hash: pick(strings, i + 4) };
      const view = { token_id: e.token_id, face_value: e.face_value, folder: e.folder, funding: e.funding, soulbound: e.soulbound, tick: e.svcond, hash: e.hash };
      expect(envelopeViewText(e)).toBe(canonicalJson(view));
    }
  });

  it('the audit member, with and without a slug', () => {
    for (let i = 0; i < 40; i++) {
      const slug = i % 4 === 0 ? null : pick(strings, i);
      expect(auditText(slug, pick(numbers, i), pick(strings, i + 1))).toBe(canonicalJson({ slug, seq: pick(numbers, i), hash: pick(strings, i + 1) }));
    }
  });

  it('refuses what canonicalJson refuses', () => {
    const row = { seq: NaN, svcond: 1, transitionType: 't', payload_sha256: 'p', prev_hash: 'h' };
    expect(() => rowText(row)).toThrow(/NaN/);
    expect(() => envelopeCoreText({ token_id: 'a', owner: 'b', face_value: Infinity, result_id: 'c', result_digest: 'd', svcond: 1 })).toThrow(/Infinity/);
    expect(() => auditText('\ud800', 1, 'h')).toThrow(/surrogate/i);
  });
});
