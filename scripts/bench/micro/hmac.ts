// hmacHex (the key's HMAC pads made once, two one-shot SHA-256s) against createHmac (an Hmac object per call) over
// a sealed body's canonical text. Each sealed compute takes two: the body's svcProof (main thread) and the tick
// receipt's HMAC (with the body, on the seal worker for a fresh request).
// Usage: npx tsx scripts/bench/micro/hmac.ts [--fresh-rps N]
import { createHmac } from 'node:crypto';
import { canonicalJson } from '../../../src/kernel/canonical.js';
import { hmacHex } from '../../../src/kernel/receipt.js';
import { buildBody } from '../../../src/compute/sealed-body.js';
import { compare, report } from './lib.js';
import { computeJob, receiptKey } from './fixture.js';

const text = canonicalJson(buildBody(receiptKey, computeJob(2.5)));
if (hmacHex(receiptKey, text) !== createHmac('sha256', receiptKey).update(text).digest('hex')) throw new Error('the two HMACs differ');
const r = compare(() => hmacHex(receiptKey, text), () => createHmac('sha256', receiptKey).update(text).digest('hex'), { iterations: 10_000 });
report('hmac', r, { optimised: 'hmacHex (pads kept, one-shot hashes)', plain: 'createHmac', textBytes: Buffer.byteLength(text), perFreshSeal: 2, where: 'main thread (svcProof) and seal worker (tick receipt)' });
