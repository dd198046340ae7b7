// fast-check generators for hostile requests: JSON of every kind (huge and subnormal numbers, -0, ±Infinity as the
// literal 1e999, deep nesting, unicode, wrong types, poisoning keys), written out as request text.
import fc from 'fast-check';

/** Numbers that break arithmetic: edges of the double range, -0, huge integers, non-finite (written as 1e999). */
export const edgeNumber: fc.Arbitrary<number> = fc.constantFrom(
  0,
  -0,
  5e-324,
  -5e-324,
  1e-310,
  1e-300,
  1e-30,
  0.5,
  1,
  -1,
  3,
  64,
  1e6,
  1e15,
  1e21,
  1e300,
  -1e300,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MAX_SAFE_INTEGER,
  2 ** 53 + 2,
  Infinity,
  -Infinity,
);

export const anyNumber: fc.Arbitrary<number> = fc.oneof(
  { weight: 5, arbitrary: edgeNumber },
  { weight: 1, arbitrary: fc.double({ noNaN: true }) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ min: -1e4, max: 1e4, noNaN: true }) },
);

export const anyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', 'é', '𝔘𝔫𝔦', '../..', '%', '%E0%A4%A', '1e999', 'NaN', 'null', 'true', '[]', '{}', 'x'.repeat(300)),
);

/** Names a route may or may not know, and the ones that attack objects. */
export const KEY_POOL = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'constants',
  'domain',
  'email',
  'equation_sha256',
  'folder',
  'from',
  'initialState',
  'inputs',
  'is_public',
  'key',
  'kind',
  'limit',
  'multiaddrs',
  'n',
  'offset',
  'operators',
  'password',
  'peerId',
  'phase',
  'points',
  'q',
  'query',
  'slug',
  'solver',
  'sweep',
  'to',
  'url',
  'variance',
  'zid',
  'name',
  'mode',
  'operator',
  'id',
  'result_id',
  'svcond',
  'value',
  'unit',
  'receipt',
  'signature',
  'svcProof',
  'svcond_receipt',
  'data',
  'type',
  'body',
];
export const anyKey: fc.Arbitrary<string> = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...KEY_POOL) }, { weight: 1, arbitrary: anyString });

/** Arrays nested `depth` deep around a value (past the body depth limit at times). */
const deepValue: fc.Arbitrary<unknown> = fc.tuple(fc.integer({ min: 1, max: 200 }), fc.boolean()).map(([depth, objects]) => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = objects ? { a: v } : [v];
  return v;
});

export const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    anyNumber,
    anyString,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(anyKey, tie('value'), { maxKeys: 4 }),
    deepValue,
  ),
})).value;

/** A value for a field that expects a number: mostly numbers, sometimes any other kind. */
export const numberish: fc.Arbitrary<unknown> = fc.oneof({ weight: 6, arbitrary: anyNumber }, { weight: 1, arbitrary: jsonValue });

/**
 * JSON text for a value: ±Infinity become the literals ±1e999 (JSON.parse reads them back as ±Infinity), -0 stays
 * -0, and an own __proto__ key is written as a key. Iterative callers never need more than the depth generated here.
 */
export function jsonText(value: unknown): string {
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'null';
    if (value === Infinity) return '1e999';
    if (value === -Infinity) return '-1e999';
    if (Object.is(value, -0)) return '-0';
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${jsonText((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Inputs for a solver: some of its own keys with hostile values, sometimes an unknown key or none at all. */
export function solverInputs(keys: string[]): fc.Arbitrary<Record<string, unknown>> {
  const own: fc.Arbitrary<Record<string, unknown>> =
    keys.length > 0 ? fc.dictionary(fc.constantFrom(...keys), numberish, { maxKeys: Math.min(3, keys.length) }) : fc.constant({});
  return fc.tuple(own, fc.option(fc.dictionary(anyKey, jsonValue, { maxKeys: 1 }), { freq: 6 })).map(([a, extra]) => {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(a)) out[k] = a[k];
    if (extra) for (const k of Object.keys(extra)) out[k] = extra[k];
    return out;
  });
}

/** encodeURIComponent for any string: a lone surrogate (which it refuses) is sent as U+FFFD. */
export function encode(s: string): string {
  return encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
}

/** A query string from hostile keys and values (repeated keys, broken percent-encoding, unicode). */
export const queryString: fc.Arbitrary<string> = fc.oneof(
  fc.constant(''),
  fc
    .array(fc.tuple(anyKey, fc.oneof(anyNumber.map(String), anyString)), { maxLength: 3 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&')}`),
  fc.constantFrom('?limit=1e999', '?n=-0', '?limit=5e-324', '?n=1&n=2', '?name=%', '?peerId=%E0%A4%A', '?offset=-1', '?limit=NaN', '?q=%00'),
);

/** A path parameter: plausible, hostile or broken. */
export const pathParam: fc.Arbitrary<string> = fc.oneof(
  anyString.map(encode),
  fc.constantFrom('%', '%E0%A4%A', '%00', 'zid_' + '0'.repeat(32), 'a'.repeat(64), 'm-0000', '..', '%2F', 'x'.repeat(2000)),
  fc.stringMatching(/^[0-9a-f]{64}$/),
);
