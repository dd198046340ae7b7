// What a reader of an identity asks its home for beyond its wallet and envelopes rides with its entries
// (custody/ledger-ops.ts, docs/decisions.md "What a failover keeps"): the day's claim and computations (`claimed:`,
// `used:` + day + zid, stand-alone counters) and its tier (`tiers`, key the zid). The writes are made by a node's own
// services (a claim, a computation, an operator's grant of a tier alone), caught at the store's gate and read as
// custody reads them; then their records, replayed on another store as a new home replays a chain, are that store's
// counters and tier, in memory and after a load.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LedgerOpsReader, type LedgerChange } from '../../src/custody/ledger-ops.js';
import type { RecordOp } from '../../src/custody/protocol.js';
import { recordsFault, replayOps } from '../../src/custody/replica.js';
import { claimDayCounter, identityDayCounter } from '../../src/store/counter-keys.js';
import { Counters } from '../../src/store/counters.js';
import { Store, type Op } from '../../src/store/db.js';
import { solveChallenge } from '../../src/tally/claim-proof.js';
import { TierBook, tierPolicy } from '../../src/tally/tiers.js';
import { dayKey } from '../../src/util/utc-day.js';
import { COMPUTE } from '../helpers/custody.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let n: TestNode;
/** Every commit that reached the store's gate, in order. */
const commits: Op[][] = [];

beforeAll(async () => {
  n = await startTestNode({ limits: { claimDifficultyBits: 4 } }, { initialCredits: 0 });
  const inner = n.node.store.gate;
  n.node.store.gate = {
    hold: (ops) => {
      commits.push([...ops]);
      return inner?.hold(ops) ?? null;
    },
    refusalSettled: (ops) => inner?.refusalSettled?.(ops),
  };
}, 60_000);

afterAll(async () => {
  await n?.destroy();
});

const opsOf = (c: LedgerChange, sub: RecordOp[1]) => c.recordOps.ops.filter((op) => op[1] === sub);

describe("an identity's day counters and tier ride with its entries", () => {
  it('a claim, a computation and a grant of a tier alone carry them; replayed elsewhere, they are that node’s', async () => {
    const id = await zkIdentity(n.url, 'identity-riders');
    const reader = new LedgerOpsReader(n.node.store);
    const entriesSince = (from: number) => commits.slice(from).flatMap((ops) => reader.changes(ops).filter((c) => c.zid === id.zid));
    const day = dayKey(Date.now());

    // The daily claim: its write is an entry of the identity, and carries the day's claim counter.
    const before = commits.length;
    const st = await call(n.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    expect(st.body.claimable, st.text).toBe(true);
    const claimed = await call(
      n.url,
      'POST',
      '/api/tally/claim',
      { challenge: st.body.challenge, nonce: solveChallenge(st.body.challenge, st.body.difficulty) },
      bearer(id.key),
    );
    expect(claimed.status, claimed.text).toBe(200);
    const claim = entriesSince(before);
    expect(claim.map((c) => c.kind)).toEqual(['wallet']);
    expect(opsOf(claim[0]!, 'counters')).toContainEqual(['put', 'counters', claimDayCounter(day, id.zid), '1']);

    // A computation: its seal carries the day's count of computations.
    const sealedFrom = commits.length;
    const run = await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    expect(run.status, run.text).toBe(200);
    const seal = entriesSince(sealedFrom);
    expect(seal.map((c) => c.kind)).toEqual(['seal']);
    expect(opsOf(seal[0]!, 'counters')).toContainEqual(['put', 'counters', identityDayCounter(day, id.zid), '1']);

    // An operator's grant of a tier and no credits: an entry of the identity, carrying the tier record.
    const grantedFrom = commits.length;
    const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
    const g = await call(n.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 0, tier: 'standard' }, bearer(token));
    expect(g.status, g.text).toBe(201);
    const grant = entriesSince(grantedFrom);
    expect(grant.map((c) => c.kind)).toEqual(['wallet']);
    const tierOps = opsOf(grant[0]!, 'tiers');
    expect(tierOps).toHaveLength(1);
    expect(tierOps[0]!.slice(0, 3)).toEqual(['put', 'tiers', id.zid]);
    expect(JSON.parse(tierOps[0]![3]!)).toMatchObject({ tier: 'standard' });
    // A write of the tier record alone is an entry too (a grant's kind), not a rider that waits for one.
    const tierAlone = reader.changes([{ type: 'put', sub: n.node.store.sub('tiers'), key: id.zid, value: { tier: 'starter' } }]);
    expect(tierAlone.map((c) => [c.zid, c.kind])).toEqual([[id.zid, 'wallet']]);
    // A day counter of another identity in the same write does not ride with this one.
    const other = `zid_${'e'.repeat(32)}`;
    const grantOps = commits.slice(grantedFrom).find((ops) => reader.changes(ops).some((c) => c.zid === id.zid))!;
    const mixed = reader.changes([...grantOps, { type: 'put', sub: n.node.store.sub('counters'), key: claimDayCounter(day, other), value: 1 }]);
    expect(mixed.map((c) => c.zid)).toEqual([id.zid]);
    expect(opsOf(mixed[0]!, 'counters').map((op) => op[2])).not.toContain(claimDayCounter(day, other));

    // The custodians' check: the identity's own day counters and tier, and no other's.
    const links = [...claim, ...seal, ...grant].map((c) => ({ records: c.recordOps }));
    for (const { records } of links) expect(recordsFault(id.zid, records)).toBeNull();
    expect(recordsFault(other, { v: 1, ops: [['put', 'counters', claimDayCounter(day, id.zid), '1']] })).toMatch(/another counter record/);
    expect(recordsFault(other, { v: 1, ops: [['put', 'tiers', id.zid, '{"tier":"standard"}']] })).toMatch(/another identity's tier/);

    // Replayed on another store, as a new home replays the chain it takes: its counters and tiers follow.
    const dir = await mkdtemp(join(tmpdir(), 'svc-identity-riders-'));
    const store = await Store.open(dir, { sync: false });
    try {
      const counters = new Counters(store);
      await counters.load();
      const tiers = new TierBook(store, tierPolicy());
      await tiers.load();
      expect(counters.get(claimDayCounter(day, id.zid))).toBe(0);
      expect(tiers.of(id.zid)).toBe('free');
      const replay = replayOps(store, links, { zid: id.zid, owners: new Map(), homedHere: new Set() });
      await store.commitAside(replay);
      counters.replayed(replay);
      tiers.replayed(replay);
      expect(counters.get(claimDayCounter(day, id.zid))).toBe(1);
      expect(counters.get(identityDayCounter(day, id.zid))).toBe(1);
      expect(tiers.of(id.zid)).toBe('standard');
      // And as a restart reads them.
      const again = new Counters(store);
      await again.load();
      const tiersAgain = new TierBook(store, tierPolicy());
      await tiersAgain.load();
      expect(again.get(claimDayCounter(day, id.zid))).toBe(1);
      expect(again.get(identityDayCounter(day, id.zid))).toBe(1);
      expect(tiersAgain.of(id.zid)).toBe('standard');
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('entries written without them (no day counters, no tier record) still check and replay: the counters count from zero, the tier is free', async () => {
    const id = await zkIdentity(n.url, 'identity-riders older entries');
    const reader = new LedgerOpsReader(n.node.store);
    const day = dayKey(Date.now());
    const from = commits.length;
    const st = await call(n.url, 'GET', '/api/tally/claim', undefined, bearer(id.key));
    const proof = { challenge: st.body.challenge, nonce: solveChallenge(st.body.challenge, st.body.difficulty) };
    expect((await call(n.url, 'POST', '/api/tally/claim', proof, bearer(id.key))).status).toBe(200);
    const run = await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key));
    expect(run.status, run.text).toBe(200);
    const token = (await readFile(join(n.dataDir, 'operator-token'), 'utf8')).trim();
    expect((await call(n.url, 'POST', '/api/tally/grants', { zid: id.zid, credits: 5, tier: 'standard' }, bearer(token))).status).toBe(201);
    const changes = commits.slice(from).flatMap((ops) => reader.changes(ops).filter((c) => c.zid === id.zid));
    expect(changes.map((c) => c.kind)).toEqual(['wallet', 'seal', 'wallet']);
    // The same writes as entries carried them before day counters and the tier rode: every other record kept.
    const rider = (op: RecordOp) => op[1] === 'tiers' || (op[1] === 'counters' && !op[2].startsWith('#'));
    const older = changes.map((c) => ({ records: { v: 1 as const, ops: c.recordOps.ops.filter((op) => !rider(op)) } }));
    expect(older.map((l) => l.records.ops.length)).toEqual(changes.map((c) => c.recordOps.ops.length - c.recordOps.ops.filter(rider).length));
    expect(older.flatMap((l) => l.records.ops).some((op) => op[1] === 'wallets')).toBe(true);
    for (const { records } of older) expect(recordsFault(id.zid, records)).toBeNull();

    const dir = await mkdtemp(join(tmpdir(), 'svc-identity-riders-older-'));
    const store = await Store.open(dir, { sync: false });
    try {
      const counters = new Counters(store);
      await counters.load();
      const tiers = new TierBook(store, tierPolicy());
      await tiers.load();
      const replay = replayOps(store, older, { zid: id.zid, owners: new Map(), homedHere: new Set() });
      await store.commitAside(replay);
      counters.replayed(replay);
      tiers.replayed(replay);
      // The ledger arrives; what no entry carried counts from nothing.
      const wallet = await store.get<{ free: number; paid: number }>(store.sub('wallets'), id.zid);
      expect(wallet).toEqual(await n.node.store.get(n.node.store.sub('wallets'), id.zid));
      expect(wallet!.paid).toBe(5);
      expect(counters.get(claimDayCounter(day, id.zid))).toBe(0);
      expect(counters.get(identityDayCounter(day, id.zid))).toBe(0);
      expect(tiers.of(id.zid)).toBe('free');
      // An entry that carries them after the older ones: its values are the node's from then on.
      const newer = changes.slice(1).map((c) => ({ records: c.recordOps }));
      const more = replayOps(store, newer, { zid: id.zid, owners: new Map(), homedHere: new Set() });
      await store.commitAside(more);
      counters.replayed(more);
      tiers.replayed(more);
      expect(counters.get(identityDayCounter(day, id.zid))).toBe(1);
      expect(counters.get(claimDayCounter(day, id.zid))).toBe(0);
      expect(tiers.of(id.zid)).toBe('standard');
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
