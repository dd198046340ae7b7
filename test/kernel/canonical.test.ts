// The RFC 8785 serializer of src/kernel/canonical.ts against the `canonicalize` package (dev dependency, the
// oracle): same text on many generated JSON values (unicode keys and strings, astral characters, escapes, -0,
// exponents, extreme doubles, nested arrays and objects), the same refusals (lone surrogates, NaN, Infinity,
// cycles), plus the RFC 8785 appendix examples; and canonical text with member slots (member-slots.ts: how a sealed
// body gets its ledger members and proofs) against the oracle of the object with the members.
import { describe, expect, it } from 'vitest';
import canonicalizeImpl from 'canonicalize';
import { NoCanonicalForm, canonicalJson } from '../../src/kernel/canonical.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { canonicalJsonWithSlots, insertMembers } from '../../src/kernel/member-slots.js';

const oracle = canonicalizeImpl as unknown as (value: unknown) => string | undefined;

/** mulberry32: a small seeded PRNG so failures reproduce. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPECIAL_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  0.5,
  1e21,
  1e-7,
  1e-6,
  123456789012345680000,
  9007199254740991,
  -9007199254740992,
  5e-324,
  -5e-324,
  1.7976931348623157e308,
  -1.7976931348623157e308,
  2.2250738585072014e-308,
  333333333.3333333,
  1e300 * 10,
  4.35,
  0.002,
  1e23,
  295147905179352830000,
  0.9997184238014513,
  3.168821468741362e-7,
];
const CHAR_POOL = [
  'a',
  'Z',
  '0',
  ' ',
  '"',
  '\\',
  '/',
  '\b',
  '\f',
  '\n',
  '\r',
  '\t',
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  'é',
  'ß',
  '€',
  '·',
  '∘',
  '→',
  'π',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\uffff',
  '日本',
  '😀',
  '\ud834\udd1e',
  '\u{10ffff}',
  'e\u0301',
  'ﬀ',
];

function generate(rand: () => number) {
  const int = (n: number) => Math.floor(rand() * n);
  const string = (): string => {
    let s = '';
    const len = int(8);
    for (let i = 0; i < len; i++) s += CHAR_POOL[int(CHAR_POOL.length)];
    return s;
  };
  const number = (): number => {
    switch (int(6)) {
      case 0:
        return SPECIAL_NUMBERS[int(SPECIAL_NUMBERS.length)]!;
      case 1:
        return int(2000) - 1000;
      case 2:
        return (rand() - 0.5) * 10 ** (int(60) - 30);
      case 3: {
        // Any finite double from random bits.
        const buf = new DataView(new ArrayBuffer(8));
        do {
          buf.setUint32(0, Math.floor(rand() * 2 ** 32));
          buf.setUint32(4, Math.floor(rand() * 2 ** 32));
        } while (!Number.isFinite(buf.getFloat64(0)));
        return buf.getFloat64(0);
      }
      case 4:
        return Number((rand() * 1000).toFixed(int(6)));
      default:
        return rand() * 2 ** (int(140) - 70);
    }
  };
  const value = (depth: number): unknown => {
    const r = int(depth > 4 ? 5 : 8);
    switch (r) {
      case 0:
        return null;
      case 1:
        return rand() < 0.5;
      case 2:
        return number();
      case 3:
      case 4:
        return string();
      case 5: {
        const arr: unknown[] = [];
        const n = int(6);
        for (let i = 0; i < n; i++) arr.push(int(12) === 0 ? undefined : value(depth + 1));
        return arr;
      }
      default: {
        const obj: Record<string, unknown> = {};
        const n = int(7);
        for (let i = 0; i < n; i++) obj[int(4) === 0 ? String(int(30)) : string()] = int(12) === 0 ? undefined : value(depth + 1);
        return obj;
      }
    }
  };
  return value(0);
}

describe('canonicalJson (RFC 8785) against the canonicalize oracle', () => {
  it('matches on 20 000 generated values', () => {
    const rand = prng(8785);
    for (let i = 0; i < 20_000; i++) {
      const v = generate(rand);
      if (v === undefined) continue;
      const expected = oracle(v);
      expect(canonicalJson(v), JSON.stringify(v)).toBe(expected);
    }
  });

  it('matches on the special numbers one by one and inside arrays', () => {
    for (const n of SPECIAL_NUMBERS) expect(canonicalJson(n)).toBe(oracle(n));
    expect(canonicalJson(SPECIAL_NUMBERS)).toBe(oracle(SPECIAL_NUMBERS));
    expect(canonicalJson(-0)).toBe('0');
    expect(canonicalJson([1e21, 1e-7, 1e20, 1e-6])).toBe('[1e+21,1e-7,100000000000000000000,0.000001]');
  });

  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3 example)', () => {
    const v = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const text = canonicalJson(v);
    expect(text).toBe(oracle(v));
    // The order the RFC lists: \r, 1, U+0080, ö, €, 😀 (surrogate pair D83D…), U+FB33.
    const order = ['Carriage', 'One', 'Control', 'Latin', 'Euro', 'Emoji', 'Hebrew'].map((w) => text.indexOf(w));
    expect(order.every((p, i) => p > 0 && (i === 0 || p > order[i - 1]!))).toBe(true);
  });

  it('RFC 8785 §3.2.2 sample', () => {
    const v = {
      numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000000000000000000000000001],
      string: '\u20ac$\u000f\u000aA\'\u0042\u0022\u005c\\"/',
      literals: [null, true, false],
    };
    expect(canonicalJson(v)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
    expect(canonicalJson(v)).toBe(oracle(v));
  });

  it('skips undefined members, makes undefined array items null, calls toJSON', () => {
    const v = { a: undefined, b: [undefined, 1], c: new Date(0), d: { toJSON: () => ({ z: 1, y: [2] }) } };
    expect(canonicalJson(v)).toBe(oracle(v));
    expect(canonicalJson(v)).toBe('{"b":[null,1],"c":"1970-01-01T00:00:00.000Z","d":{"y":[2],"z":1}}');
  });

  it('refuses what the oracle refuses', () => {
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    const bad: unknown[] = [NaN, Infinity, -Infinity, '\ud800', 'x\udc00y', 'end\ud83d', { '\udfff': 1 }, [1, [2, NaN]], circular];
    for (const v of bad) {
      expect(() => oracle(v)).toThrow();
      expect(() => canonicalJson(v)).toThrow(NoCanonicalForm);
    }
    expect(() => canonicalJson(undefined)).toThrow(NoCanonicalForm);
  });

  it("refuses with a part-7 error: a lone surrogate (only a caller's JSON text holds one) 400, the node's own NaN, Infinity or cycle 500", () => {
    const refusal = (v: unknown): NoCanonicalForm => {
      try {
        canonicalJson(v);
      } catch (err) {
        expect(err).toBeInstanceOf(ServiceError);
        return err as NoCanonicalForm;
      }
      throw new Error('not refused');
    };
    for (const v of ['\ud800', { a: ['x\udc00y'] }, { '\udfff': 1 }]) {
      expect(refusal(v)).toMatchObject({ status: 400, code: 'SVC_INVALID_INPUT', reason: 'lone_surrogate', extra: { field: null, allowed: null } });
      expect(refusal(v).message).toMatch(/lone UTF-16 surrogate/);
    }
    expect(refusal({ v: [NaN] })).toMatchObject({ status: 500, code: 'SVC_INTERNAL_ERROR', reason: 'not_finite' });
    expect(refusal({ v: [NaN] }).message).toMatch(/NaN has no canonical JSON form/);
    expect(refusal(-Infinity).message).toMatch(/-Infinity/);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(refusal(circular)).toMatchObject({ status: 500, code: 'SVC_INTERNAL_ERROR', reason: 'circular' });
    expect(refusal({ n: 1n })).toMatchObject({ status: 500, reason: 'not_json' });
  });

  it('same keys in other insertion orders, repeated shapes and many shapes (sorted-key cache)', () => {
    const shapes = [
      { a: 1, b: 2, c: 3 },
      { a: 1, c: 3, b: 2 },
      { b: 2, a: 1, c: 3 },
      { a: 1, b: 2 },
      { a: 1, b: 2, c: 3, d: 4 },
      { a: 1, b: 2, c: 3 },
    ];
    for (let r = 0; r < 3; r++) for (const o of shapes) expect(canonicalJson(o)).toBe(oracle(o));
    for (let i = 0; i < 5000; i++) {
      const o: Record<string, number> = { [`k${i % 7}`]: 1, [`z${i}`]: 2, [`a${i % 13}`]: 3 };
      expect(canonicalJson(o)).toBe(oracle(o));
    }
  });

  it('a shared (non-circular) sub-object is not a cycle', () => {
    const shared = { k: 1 };
    const v = { a: shared, b: shared, c: [shared, shared] };
    expect(canonicalJson(v)).toBe(oracle(v));
  });
});

describe('canonicalJsonWithSlots', () => {
  const names = ['audit', 'envelope', 'tally_charge', 'svcProof'];
  const nestedNames = ['svcProof'];
  /** The UTF-8 canonical JSON of obj with the members of `add` inserted through the slots. */
  function joined(obj: Record<string, unknown>, add: Record<string, unknown>): string {
    const m = canonicalJsonWithSlots(obj, names, 'cko', nestedNames);
    expect(Buffer.from(m.bytes).toString('utf8')).toBe(oracle(obj));
    // One slot per name at the top level, and one in the cko object when it is a plain object.
    const cko = obj.cko;
    const nested = cko !== null && typeof cko === 'object' && !Array.isArray(cko) ? 1 : 0;
    expect(m.slots.length).toBe(names.length + nested);
    const values = new Map(Object.entries(add).map(([k, v]) => [k, canonicalJson(v)] as [string, string]));
    return insertMembers(m, values).toString('utf8');
  }

  it('inserting members at the slots equals serialising the object with the members (top level and nested)', () => {
    const rand = prng(4242);
    let checked = 0;
    for (let i = 0; i < 5000; i++) {
      const v = generate(rand);
      if (!v || typeof v !== 'object' || Array.isArray(v)) continue;
      const obj = v as Record<string, unknown>;
      for (const n of names) delete obj[n];
      const withNested = i % 3 !== 0;
      if (withNested) {
        const inner = generate(rand);
        obj.cko = inner && typeof inner === 'object' && !Array.isArray(inner) ? inner : {};
        delete (obj.cko as Record<string, unknown>).svcProof;
      }
      // Any subset of the names, including none and all.
      const add: Record<string, unknown> = {};
      names.forEach((n, k) => {
        if ((i >> k) & 1) add[n] = k === 0 ? null : { n: i, s: `é${k}` };
      });
      const expected = JSON.parse(JSON.stringify(obj)) as Record<string, unknown>;
      Object.assign(expected, add);
      const text = joined(obj, add);
      if (withNested && 'svcProof' in add) (expected.cko as Record<string, unknown>).svcProof = add.svcProof;
      expect(text).toBe(oracle(expected));
      checked++;
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it('handles empty objects, adjacent names, first and last positions, and refuses an existing member', () => {
    const all = { audit: 1, envelope: 'e', tally_charge: [2], svcProof: 'x' };
    for (const obj of [{}, { a: 1 }, { z: 1 }, { a: 1, z: 2 }, { cko: {} }, { cko: { a: 1 }, zz: [] }, { cko: { zz: 1 } }, { b: 1, f: 2, t: 3 }]) {
      const expected = JSON.parse(JSON.stringify(obj)) as Record<string, unknown>;
      Object.assign(expected, all);
      if (expected.cko) (expected.cko as Record<string, unknown>).svcProof = 'x';
      expect(joined(obj, all)).toBe(oracle(expected));
      expect(joined(obj, {})).toBe(oracle(obj));
    }
    expect(() => canonicalJsonWithSlots({ svcProof: 'x' }, names, 'cko', nestedNames)).toThrow();
    expect(() => canonicalJsonWithSlots({ envelope: 1 }, names, 'cko', nestedNames)).toThrow();
    expect(() => canonicalJsonWithSlots({ cko: { svcProof: 'x' } }, names, 'cko', nestedNames)).toThrow();
  });
});

describe('insertMembers', () => {
  it('puts members after multi-byte text at their byte offsets, and several members at one place in name order', () => {
    const m = canonicalJsonWithSlots({ a: 'π·∘😀', cko: { y: [1, 'é'] }, zz: 'é' }, ['b', 'c', 'svcProof'], 'cko', ['svcProof', 'z']);
    const values = new Map([
      ['b', '"B"'],
      ['c', 'null'],
      ['svcProof', '"P"'],
      ['z', '0'],
    ]);
    expect(insertMembers(m, values).toString('utf8')).toBe(
      oracle({ a: 'π·∘😀', b: 'B', c: null, cko: { svcProof: 'P', y: [1, 'é'], z: 0 }, svcProof: 'P', zz: 'é' }),
    );
    expect(insertMembers(m, new Map()).toString('utf8')).toBe(oracle({ a: 'π·∘😀', cko: { y: [1, 'é'] }, zz: 'é' }));
  });
});
