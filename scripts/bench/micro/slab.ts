// Slab (sealed bodies' bytes cut from 256-KiB slabs) against Buffer.allocUnsafe (a new ArrayBuffer for every body
// over the 4-KiB pool limit) for a sealed body's bytes, copy included. Each seal takes one such buffer (two for a
// body from a kept template: the body and its compact record).
// Usage: npx tsx scripts/bench/micro/slab.ts [--fresh-rps N]
import { canonicalJson, Slab } from '../../../src/kernel/canonical.js';
import { buildBody } from '../../../src/compute/sealed-body.js';
import { compare, report } from './lib.js';
import { computeJob, receiptKey } from './fixture.js';

const source = Buffer.from(canonicalJson(buildBody(receiptKey, computeJob(2.5))), 'utf8');
const slab = new Slab();
const r = compare(
  () => {
    const b = slab.take(source.length);
    b.set(source);
    return b;
  },
  () => {
    const b = Buffer.allocUnsafe(source.length);
    b.set(source);
    return b;
  },
  { iterations: 50_000 },
);
report('slab', r, { optimised: 'Slab.take', plain: 'Buffer.allocUnsafe', bytes: source.length, perFreshSeal: 1, where: 'main thread' });
