// Three real nodes (HTTP + libp2p on 127.0.0.1), each with a bonded operator, so every identity's custody set is all
// three; and a home the test makes lie: entries (and a credit's debit certificates) the test composes, sent over
// /svc/custody/1 from a node's own libp2p host.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { bearer, call, operatorBond, startTestNode, zkIdentity, type TestNode } from './node.js';
import { waitFor } from '../mesh/helpers.js';
import { chainFetcher, custodyClient, type FetchChain } from '../../src/custody/client.js';
import { LEDGER_SUBLEVELS } from '../../src/custody/ledger-ops.js';
import type { ChainLink } from '../../src/custody/protocol.js';
import type { Store } from '../../src/store/db.js';
import type { DebitCertificate } from '../../src/custody/debit-certificate.js';
import type { CustodyEntry } from '../../src/custody/entry.js';
import { recordsDigest, type CustodyAnswer, type EntryRecords } from '../../src/custody/protocol.js';

/** Envelopes each operator bonds. */
const BOND = 3;
export const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };

/** The config of a node of a bonded custody mesh, given the addresses it bootstraps from (and custody settings over the defaults). */
export const custodyConfig = (secret: string, bootstrap: string[], custody: Record<string, number> = {}) => ({
  solverThreads: 0,
  sealWorker: false,
  receiptSecret: 'ef'.repeat(32),
  contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' },
  custody: { replicas: 3, certifyTimeoutMs: 1500, ...custody },
  mesh: { secret, p2pPort: 0, bootstrap, tickEvery: 1 },
});

/** Paid credits from the node's operator (a compute charged to them seals a movable, paid-funded envelope). */
export async function grant(n: Pick<TestNode, 'url' | 'dataDir'>, zid: string, credits: number): Promise<void> {
  const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
  const r = await call(n.url, 'POST', '/api/tally/grants', { zid, credits }, bearer(token));
  expect(r.status, r.text).toBe(201);
}

/** Start options of a bonded custody mesh's nodes. */
export const custodyNodeOptions = (initialCredits: number) => ({ initialCredits, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } });

/** Bond the operator of `n` (an identity of `seed`, granted what it lacks to seal its bond's envelopes). */
export async function bond(n: Pick<TestNode, 'url' | 'dataDir'>, seed: string, initialCredits: number): Promise<void> {
  const id = await zkIdentity(n.url, seed);
  if (initialCredits < BOND) await grant(n, id.zid, BOND);
  for (let i = 0; i < BOND; i++) expect((await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
  const r = await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(n) });
  expect(r.status, r.text).toBe(201);
}

/** Three meshed nodes, every one's operator bonded, every custody set all three once the bonds are advertised. */
export async function startBondedTrio(secret: string, initialCredits: number): Promise<[TestNode, TestNode, TestNode]> {
  const [a, b, c] = await startBondedNodes(secret, 3, initialCredits);
  return [a!, b!, c!];
}

/**
 * `count` meshed nodes (each bootstrapped to every one before it), every one's operator bonded, every node a member
 * of every custody set once the bonds are advertised (sets of min(count, 3)).
 */
export async function startBondedNodes(secret: string, count: number, initialCredits: number, custody: Record<string, number> = {}): Promise<TestNode[]> {
  const opts = custodyNodeOptions(initialCredits);
  const addr = (n: TestNode) => n.node.mesh.multiaddrs()[0]!;
  const all: TestNode[] = [];
  for (let i = 0; i < count; i++) all.push(await startTestNode(custodyConfig(secret, all.map(addr), custody), opts));
  await waitFor(() => all.every((n) => n.node.mesh.peers().filter((p) => p.url && p.connected).length >= count - 1), 30_000, 'a full mesh');
  await Promise.all(all.map((n, i) => bond(n, `custody-operator-${String.fromCharCode(97 + i)}`, initialCredits)));
  await waitFor(() => all.every((n) => n.node.bonds.active().length === count), 30_000, 'every bond known everywhere');
  // A bonded node joins custody sets once its own tick events have advertised its bond (read once a tick).
  const advertised = (n: TestNode) => n.node.mesh.peers().filter((p) => p.bondId !== null && p.lastTick !== null).length === count - 1;
  const full = (n: TestNode) => n.node.custody.replicator.setOf(`zid_${'0'.repeat(32)}`).custodians.length === Math.min(count, 3);
  await waitFor(() => all.every((n) => advertised(n) && full(n)), 30_000, 'every bond advertised in tick events: full custody sets');
  return all;
}

/** The records of the entries forge() made, by their digest. */
const forgedRecords = new Map<string, EntryRecords>();

/**
 * An entry the test composes, its `records` the digest of records made for it: the put of its wallet (its balance,
 * and `note`, which tells apart two entries of one slot).
 */
export function forge(e: CustodyEntry, note = ''): CustodyEntry {
  const records: EntryRecords = { v: 1, ops: [['put', 'wallets', e.zid, JSON.stringify({ ...(e.balance ?? { free: 0, paid: 0 }), note })]] };
  const digest = recordsDigest(records);
  forgedRecords.set(digest, records);
  return { ...e, records: digest };
}

/** The records forge() made for an entry; none for any other. */
export const recordsOf = (e: CustodyEntry): EntryRecords => forgedRecords.get(e.records) ?? { v: 1, ops: [] };

/**
 * Send `entries` (with `certificates`, one per entry; the records forge() made, unless `records` are given) to `to`
 * over /svc/custody/1 from `from`'s libp2p host.
 */
export async function propose(
  secret: string,
  from: TestNode,
  to: TestNode,
  entries: CustodyEntry[],
  certificates?: (DebitCertificate | null)[],
  records: EntryRecords[] = entries.map(recordsOf),
): Promise<CustodyAnswer> {
  const send = custodyClient({
    openStream: (p, proto, signal) => from.node.mesh.openStream(p, proto, signal),
    selfId: () => from.node.nodeId,
    secret,
    nowSvcond: () => from.node.mesh.nowSvcond(),
  });
  return send(to.node.nodeId, entries, records, AbortSignal.timeout(5000), certificates);
}

/** The answer's outcome per entry: 'signed' or the refusal code. */
export const outcomes = (answer: CustodyAnswer): string[] => answer.results.map((r) => (r.ok ? 'signed' : r.code));

/** Fetch chains over /svc/custody/1 from `from`'s libp2p host. */
export function fetcherFrom(secret: string, from: TestNode): FetchChain {
  return chainFetcher({
    openStream: (p, proto, signal) => from.node.mesh.openStream(p, proto, signal),
    selfId: () => from.node.nodeId,
    secret,
    nowSvcond: () => from.node.mesh.nowSvcond(),
  });
}

/**
 * An identity's ledger as `store` holds it, record by record: its wallet, its owner and folder index rows, the
 * envelope records those name, and the audit rows at `rowKeys` (with the records of `absentTokens`, which must be gone).
 */
export async function ledgerIn(store: Store, zid: string, rowKeys: readonly string[], absentTokens: readonly string[] = []) {
  const sub = (name: string) => store.sub(name);
  const owner = await store.range<string>(sub(LEDGER_SUBLEVELS.byOwner), { gte: `${zid}!`, lt: `${zid}!~` });
  const folder = await store.range<string>(sub(LEDGER_SUBLEVELS.byFolder), { gte: `${zid}!`, lt: `${zid}!~` });
  const tokens = [...owner.map((r) => r.value), ...absentTokens];
  return {
    wallet: await store.get(sub(LEDGER_SUBLEVELS.wallets), zid),
    owner,
    folder,
    envelopes: await store.getMany(sub(LEDGER_SUBLEVELS.envelopes), tokens),
    rows: await store.getMany(sub(LEDGER_SUBLEVELS.chainRows), [...rowKeys]),
  };
}

/** The audit-row keys a run of entries writes. */
export const rowKeysOf = (links: readonly ChainLink[]): string[] => [
  ...new Set(links.flatMap((l) => l.records.ops.filter((op) => op[1] === 'chain_rows').map((op) => op[2]))),
];
