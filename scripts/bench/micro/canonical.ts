// canonicalJson (the project's RFC 8785 serializer) against the `canonicalize` package (the plain path, and the
// test oracle) on a sealed compute's body: the serializer walks each body once per seal (on the seal worker).
// Usage: npx tsx scripts/bench/micro/canonical.ts [--fresh-rps N]
import canonicalizeImpl from 'canonicalize';
import { canonicalJson } from '../../../src/kernel/canonical.js';
import { buildBody } from '../../../src/compute/sealed-body.js';
import { compare, report } from './lib.js';
import { computeJob, receiptKey } from './fixture.js';

const canonicalize = canonicalizeImpl as unknown as (value: unknown) => string;
const body = buildBody(receiptKey, computeJob(2.5));
if (canonicalJson(body) !== canonicalize(body)) throw new Error('the two serialisations differ');
const r = compare(
  () => canonicalJson(body),
  () => canonicalize(body),
  { iterations: 5000 },
);
report('canonical-json', r, {
  optimised: 'canonicalJson',
  plain: 'canonicalize package',
  bodyBytes: Buffer.byteLength(canonicalJson(body)),
  perFreshSeal: 1,
  where: 'seal worker',
});
