// Three real nodes (HTTP + libp2p on 127.0.0.1), each with a bonded operator, so every identity's custody set is all
// three; and a home the test makes lie: entries (and a credit's debit certificates) the test composes, sent over
// /svc/custody/1 from a node's own libp2p host.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { bearer, call, operatorBond, startTestNode, zkIdentity, type TestNode } from './node.js';
import { waitFor } from '../mesh/helpers.js';
import { custodyClient } from '../../src/custody/client.js';
import type { DebitCertificate } from '../../src/custody/debit-certificate.js';
import type { CustodyEntry } from '../../src/custody/entry.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';

/** Envelopes each operator bonds. */
const BOND = 3;
export const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };

const config = (secret: string, bootstrap: string[]) => ({
  solverThreads: 0,
  sealWorker: false,
  receiptSecret: 'ef'.repeat(32),
  contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' },
  custody: { replicas: 3, certifyTimeoutMs: 1500 },
  mesh: { secret, p2pPort: 0, bootstrap, tickEvery: 1 },
});

/** Paid credits from the node's operator (a compute charged to them seals a movable, paid-funded envelope). */
export async function grant(n: TestNode, zid: string, credits: number): Promise<void> {
  const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
  const r = await call(n.url, 'POST', '/api/tally/grants', { zid, credits }, bearer(token));
  expect(r.status, r.text).toBe(201);
}

async function bond(n: TestNode, seed: string, initialCredits: number): Promise<void> {
  const id = await zkIdentity(n.url, seed);
  if (initialCredits < BOND) await grant(n, id.zid, BOND);
  for (let i = 0; i < BOND; i++) expect((await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
  const r = await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(n) });
  expect(r.status, r.text).toBe(201);
}

/** Three meshed nodes, every one's operator bonded, every custody set all three once the bonds are advertised. */
export async function startBondedTrio(secret: string, initialCredits: number): Promise<[TestNode, TestNode, TestNode]> {
  const opts = { initialCredits, bondReannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };
  const a = await startTestNode(config(secret, []), opts);
  const addr = (n: TestNode) => n.node.mesh.multiaddrs()[0]!;
  const b = await startTestNode(config(secret, [addr(a)]), opts);
  const c = await startTestNode(config(secret, [addr(a), addr(b)]), opts);
  const all = [a, b, c];
  await waitFor(() => all.every((n) => n.node.mesh.peers().filter((p) => p.url && p.connected).length >= 2), 30_000, 'a full mesh');
  await Promise.all([
    bond(a, 'custody-operator-a', initialCredits),
    bond(b, 'custody-operator-b', initialCredits),
    bond(c, 'custody-operator-c', initialCredits),
  ]);
  await waitFor(() => all.every((n) => n.node.bonds.active().length === 3), 30_000, 'every bond known everywhere');
  // A bonded node joins custody sets once its own tick events have advertised its bond (read once a tick).
  await waitFor(
    () => all.every((n) => n.node.custody.replicator.setOf(`zid_${'0'.repeat(32)}`).custodians.length === 3),
    30_000,
    'every bond advertised in tick events: custody sets of three',
  );
  return [a, b, c];
}

/** Send `entries` (with `certificates`, one per entry) to `to` over /svc/custody/1 from `from`'s libp2p host. */
export async function propose(
  secret: string,
  from: TestNode,
  to: TestNode,
  entries: CustodyEntry[],
  certificates?: (DebitCertificate | null)[],
): Promise<CustodyAnswer> {
  const send = custodyClient({
    openStream: (p, proto, signal) => from.node.mesh.openStream(p, proto, signal),
    selfId: () => from.node.nodeId,
    secret,
    nowSvcond: () => from.node.mesh.nowSvcond(),
  });
  return send(to.node.nodeId, entries, AbortSignal.timeout(5000), certificates);
}

/** The answer's outcome per entry: 'signed' or the refusal code. */
export const outcomes = (answer: CustodyAnswer): string[] => answer.results.map((r) => (r.ok ? 'signed' : r.code));
