// A body filled from its request's kept template (the holes serialised, the pieces copied; then finished and its
// compact record made) against the body built and serialised whole (what the seal worker does for a fresh request),
// then finished. Only a repeated request can take the template: a fresh request never does, so its saving on the
// fresh figure is nil by construction; savedUsPerRepeatedSeal says what it saves a repeated one.
// Usage: npx tsx scripts/bench/micro/template.ts [--fresh-cpu-us N]
import { finishSeal } from '../../../src/kernel/receipt.js';
import { CanonicalText } from '../../../src/kernel/canonical.js';
import { fillKept, keptTemplate, prepareBody } from '../../../src/compute/sealed-body.js';
import { encodeCompact } from '../../../src/tally/stored-result.js';
import { tallyChargeText } from '../../../src/tally/ledger.js';
import { auditText, envelopeViewText } from '../../../src/compute/service.js';
import { compare, report } from './lib.js';
import { audit, charge, computeJob, envelope, receiptKey } from './fixture.js';

const job = computeJob(2.5);
const kept = keptTemplate(job);
const later = () => ({ tally_charge: new CanonicalText(tallyChargeText(charge)), envelope: new CanonicalText(envelopeViewText(envelope)), audit: new CanonicalText(auditText(audit.slug, audit.seq, audit.hash)) });
const fromTemplate = () => {
  const prepared = fillKept(receiptKey, kept, job);
  const sealed = finishSeal(receiptKey, prepared.texts, later());
  return encodeCompact(prepared.fromTemplate!, sealed.layout);
};
const whole = () => finishSeal(receiptKey, prepareBody(receiptKey, job), later()).bytes;
const a = finishSeal(receiptKey, fillKept(receiptKey, kept, job).texts, later()).bytes;
if (!a.equals(whole())) throw new Error('the two bodies differ');
const r = compare(fromTemplate, whole, { iterations: 3000 });
report('kept-template', r, { optimised: 'fillKept + finishSeal + encodeCompact', plain: 'prepareBody (whole) + finishSeal', perFreshSeal: 0, savedUsPerRepeatedSeal: Math.round((r.plainUs - r.optimisedUs) * 1000) / 1000, where: 'main thread (template); seal worker (whole)' });
