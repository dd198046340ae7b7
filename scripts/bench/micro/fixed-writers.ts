// The fixed-shape writers (records written member by member in sorted order through jsonString / jsonNumber)
// against canonicalJson of the same objects. Every identity's seal writes all five on the main thread: the audit
// row's hashed text, the envelope's core, and the body's tally_charge, envelope and audit members.
// Usage: npx tsx scripts/bench/micro/fixed-writers.ts [--fresh-rps N]
import { canonicalJson } from '../../../src/kernel/canonical.js';
import { rowText } from '../../../src/chain/service.js';
import { envelopeCoreText, tallyChargeText } from '../../../src/tally/ledger.js';
import { auditText, envelopeViewText } from '../../../src/compute/service.js';
import { compare, report } from './lib.js';
import { audit, charge, envelope } from './fixture.js';

const row = { seq: 42, svcond: 2310884911, transitionType: 'compute_sealed', payload_sha256: 'ab'.repeat(32), prev_hash: 'cd'.repeat(32) };
const core = { token_id: envelope.token_id, owner: envelope.owner, face_value: envelope.face_value, result_id: envelope.result_id, result_digest: 'cd'.repeat(32), svcond: envelope.svcond };
const written = (): string => rowText(row) + envelopeCoreText(core) + tallyChargeText(charge) + envelopeViewText(envelope) + auditText(audit.slug, audit.seq, audit.hash);
// The plain path builds each record as an object (as the code would without the writers) and walks it.
const walked = (): string =>
  canonicalJson({ seq: row.seq, svcond: row.svcond, transitionType: row.transitionType, payload_sha256: row.payload_sha256, prev_hash: row.prev_hash }) +
  canonicalJson(core) +
  canonicalJson(charge) +
  canonicalJson({ token_id: envelope.token_id, face_value: envelope.face_value, folder: envelope.folder, funding: envelope.funding, soulbound: envelope.soulbound, tick: envelope.svcond, hash: envelope.hash }) +
  canonicalJson({ slug: audit.slug, seq: audit.seq, hash: audit.hash });
if (written() !== walked()) throw new Error('the writers and canonicalJson differ');
const r = compare(written, walked, { iterations: 50_000 });
report('fixed-shape-writers', r, { optimised: 'five fixed-shape writers', plain: 'canonicalJson of the five objects', perFreshSeal: 1, where: 'main thread' });
