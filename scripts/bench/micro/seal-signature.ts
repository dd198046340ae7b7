// The seal signature's cost on the main thread (finishSeal: one Ed25519 signature of the ~3 KB body a seal). Line 1:
// finishSeal with the node's signer (its KeyObject made once) against the same step with the key made from its
// encoding on every seal, what making it once saves. Line 2: finishSeal with the signer against finishSeal with a
// signer that does nothing: the signature's own cost per seal (plainUs − optimisedUs), what every fresh sealed
// compute pays for seal_signature.
// Usage: npx tsx scripts/bench/micro/seal-signature.ts [--fresh-cpu-us N]
import { createPrivateKey, sign as edSign } from 'node:crypto';
import { finishSeal } from '../../../src/kernel/receipt.js';
import { prepareBody } from '../../../src/compute/sealed-body.js';
import { auditMember, envelopeView } from '../../../src/compute/service.js';
import { bytesSigner } from '../../../src/mesh/wire.js';
import { compare, report } from './lib.js';
import { audit, charge, computeJob, envelope, nodeKey, receiptKey } from './fixture.js';

const prepared = prepareBody(receiptKey, computeJob(2.5));
const later = () => ({ tally_charge: charge, envelope: envelopeView(envelope), audit: auditMember(audit.slug, audit.seq, audit.hash) });
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const seed = Buffer.from(nodeKey.raw.subarray(0, 32));
const once = bytesSigner(nodeKey);
const everyTime = (data: Uint8Array | string) =>
  edSign(null, Buffer.from(data), createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' })).toString('base64');
const withOnce = () => finishSeal(receiptKey, once, prepared, later()).bytes;
const withEveryTime = () => finishSeal(receiptKey, everyTime, prepared, later()).bytes;
const unsigned = () => finishSeal(receiptKey, () => '', prepared, later()).bytes;
if (!withOnce().equals(withEveryTime())) throw new Error('the two signers differ');
const bodyBytes = withOnce().length;
report('seal-signature-key-once', compare(withOnce, withEveryTime, { iterations: 2000 }), {
  optimised: 'finishSeal, the KeyObject made once',
  plain: 'finishSeal, the KeyObject made from the seed every seal',
  bodyBytes,
  perFreshSeal: 1,
  where: 'main thread',
});
report('seal-signature-cost', compare(unsigned, withOnce, { iterations: 2000 }), {
  optimised: 'finishSeal without a signature',
  plain: 'finishSeal with seal_signature (what the node does): savedUsPerFreshSeal is its cost',
  bodyBytes,
  perFreshSeal: 1,
  where: 'main thread',
});
