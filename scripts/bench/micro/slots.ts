// The sealed body's last step on the main thread. Optimised (what the node does): the seal worker serialised the
// body once with slots (member-slots.ts), and the main thread inserts the ledger's members, signs, and inserts the
// seal signature and the proofs (finishSeal). Plain: the main thread serialises the whole body with the ledger's
// members to sign it, then again with the seal signature to prove it, then again with the proofs. Every sealed compute, fresh or repeated, takes this step once.
// Usage: npx tsx scripts/bench/micro/slots.ts [--fresh-cpu-us N]
import { canonicalJson } from '../../../src/kernel/canonical.js';
import { finishSeal, hmacHex } from '../../../src/kernel/receipt.js';
import { bytesSigner } from '../../../src/mesh/wire.js';
import { buildBody, prepareBody } from '../../../src/compute/sealed-body.js';
import { auditMember, envelopeView } from '../../../src/compute/service.js';
import { compare, report } from './lib.js';
import { audit, charge, computeJob, envelope, nodeKey, receiptKey } from './fixture.js';

const job = computeJob(2.5);
const prepared = prepareBody(receiptKey, job);
const body = buildBody(receiptKey, job);
const later = () => ({ tally_charge: charge, envelope: envelopeView(envelope), audit: auditMember(audit.slug, audit.seq, audit.hash) });
const sign = bytesSigner(nodeKey);
const slotted = () => finishSeal(receiptKey, sign, prepared, later()).bytes;
const whole = () => {
  const unsigned: Record<string, unknown> = { ...body, ...later() };
  const signed: Record<string, unknown> = { ...unsigned, seal_signature: sign(canonicalJson(unsigned)) };
  const proof = hmacHex(receiptKey, canonicalJson(signed));
  return Buffer.from(canonicalJson({ ...signed, cko: { ...(signed.cko as object), svcProof: proof }, svcProof: proof }), 'utf8');
};
if (!slotted().equals(whole())) throw new Error('the two bodies differ');
const r = compare(slotted, whole, { iterations: 5000 });
report('member-slots', r, {
  optimised: 'finishSeal on the worker-serialised body',
  plain: 'serialise the whole body twice on the main thread',
  bodyBytes: slotted().length,
  perFreshSeal: 1,
  where: 'main thread',
});
