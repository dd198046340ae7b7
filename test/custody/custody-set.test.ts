// An epoch's custody set and the members it passes over (custody/custody-set.ts), the reconfiguration's reading of
// them in promises and home changes (custody/promise.ts, custody/home-change.ts), entries (custody/entry.ts) and a
// debit certificate's check (custody/debit-certificate.ts): real Ed25519 keys of peer ids.
import { describe, expect, it } from 'vitest';
import { keyedNodes, signedPromise as signedPromiseOf, type Signer } from '../helpers/promise-signers.js';
import { rankWeight } from '../../src/consensus/committee.js';
import {
  custodySetOf,
  excludedFor,
  excludedSchema,
  MAX_EXCLUDED,
  membersChange,
  rankedSetOf,
  sameMembers,
  setOfConfig,
  shiftedSet,
} from '../../src/custody/custody-set.js';
import { debitCertificateFault } from '../../src/custody/debit-certificate.js';
import { entryHash, entrySchema, GENESIS_ENTRY_HASH, signingTextOf, type CustodyEntry } from '../../src/custody/entry.js';
import { standingOf, type HomeChange } from '../../src/custody/home-change.js';
import { decidePromise, epochsToName, homesToAsk, promisesFault, type PromiseBody } from '../../src/custody/promise.js';
import { signText, verifyText } from '../../src/mesh/wire.js';

const zid = 'zid_00112233445566778899aabbccddeeff';
const receiver = 'zid_ffeeddccbbaa99887766554433221100';

const nodes = keyedNodes;
/** The promise `signer` signs: of `zid`, holding nothing, unless `body` says otherwise. */
const signedPromise = (signer: Signer, body: Partial<PromiseBody> & Pick<PromiseBody, 'epoch' | 'candidate'>) => signedPromiseOf(zid, signer, body);

/** The members but `home` by weight for zid, highest first (the ranking the set takes its custodians from). */
const ranking = (home: string, members: string[]) =>
  members.filter((m) => m !== home).sort((a, b) => (rankWeight(zid, a) < rankWeight(zid, b) ? 1 : rankWeight(zid, a) > rankWeight(zid, b) ? -1 : 0));

describe('an epoch’s custody set', () => {
  it('passes over the excluded members: the next ones by weight take their places', () => {
    const members = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
    const [r1, r2, r3, r4] = ranking('n1', members);
    expect(custodySetOf(zid, 'n1', members, 3).custodians).toEqual(['n1', r1, r2]);
    expect(custodySetOf(zid, 'n1', members, 3, [r1!]).custodians).toEqual(['n1', r2, r3]);
    expect(custodySetOf(zid, 'n1', members, 3, [r2!, r1!].sort())).toMatchObject({ custodians: ['n1', r3, r4], majority: 2 });
    expect(setOfConfig(zid, { home: 'n1', excluded: [r2!] }, members, 3).custodians).toEqual(['n1', r1, r3]);
    // The home is never passed over; too few members left make a smaller set.
    expect(custodySetOf(zid, 'n1', ['n1', r1!, r2!], 3, ['n1', r1!].sort())).toMatchObject({ custodians: ['n1', r2], majority: 2 });
  });

  it('of a new epoch passes over the members gone too long among the first R - 1, and no one behind them', () => {
    const members = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
    const [r1, r2, r3, r4, r5] = ranking('n1', members);
    expect(excludedFor(zid, 'n1', members, 3, () => false)).toEqual([]);
    expect(excludedFor(zid, 'n1', members, 3, (n) => n === r2)).toEqual([r2]);
    // r4 is gone too, but behind the set (r1, r3): not named.
    expect(excludedFor(zid, 'n1', members, 3, (n) => n === r2 || n === r4)).toEqual([r2]);
    expect(excludedFor(zid, 'n1', members, 3, (n) => n !== r5)).toEqual([r1, r2, r3, r4].sort());
    // Every other member gone: all passed over, the home alone.
    expect(
      custodySetOf(
        zid,
        'n1',
        members,
        3,
        excludedFor(zid, 'n1', members, 3, () => true),
      ).custodians,
    ).toEqual(['n1']);
    const many = Array.from({ length: 40 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    expect(excludedFor(zid, 'm00', many, 3, () => true)).toHaveLength(MAX_EXCLUDED);
    expect(sameMembers(['a', 'b'], ['b', 'a'])).toBe(true);
    expect(sameMembers(['a', 'b'], ['a', 'c'])).toBe(false);
  });

  it('shifted by a change of the members is the set ranked from the members after it, and null only when a custodian left', () => {
    // A xorshift stream: the same draws every run.
    let x = 0x9e3779b9;
    const next = (n: number) => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % n;
    };
    const pool = Array.from({ length: 60 }, (_, i) => `12D3KooW${String(i).padStart(4, '0')}`);
    const draw = (k: number) => pool.filter(() => next(pool.length) < k);
    let shifted = 0;
    let ranked = 0;
    let same = 0;
    for (let round = 0; round < 400; round++) {
      const z = `zid_${round.toString(16).padStart(32, '0')}`;
      const replicas = [1, 2, 3, 3, 5][round % 5]!;
      const home = pool[next(pool.length)]!;
      const before = draw(1 + next(pool.length));
      const excluded = next(3) === 0 ? [...new Set(draw(4))].sort() : [];
      // Some leave, some join (a few at a time, as members are heard, or none: the same members in a new list).
      const after = [...before.filter(() => next(10) !== 0), ...draw(next(4))];
      const kept = rankedSetOf(z, home, before, replicas, excluded);
      const change = membersChange(before, after);
      const fromAll = rankedSetOf(z, home, after, replicas, excluded);
      const custodianLeft = kept.set.custodians.slice(1).some((n) => change.left.has(n));
      const result = shiftedSet(z, kept, change, replicas, excluded);
      if (result === null) {
        expect(custodianLeft).toBe(true);
        ranked++;
        continue;
      }
      expect(custodianLeft).toBe(false);
      expect(result).toEqual(fromAll);
      if (result === kept) same++;
      else shifted++;
      expect(result.set.custodians.length).toBeLessThanOrEqual(replicas);
    }
    // Every path was taken, often.
    expect(Math.min(shifted, ranked, same)).toBeGreaterThan(20);
    expect(membersChange(['a', 'b', 'c'], ['c', 'd', 'b', 'd'])).toEqual({ joined: ['d'], left: new Set(['a']) });
  });

  it('travels sorted and distinct, on an epoch entry only', () => {
    expect(excludedSchema.safeParse(['a', 'b']).success).toBe(true);
    expect(excludedSchema.safeParse(['b', 'a']).success).toBe(false);
    expect(excludedSchema.safeParse(['a', 'a']).success).toBe(false);
    expect(excludedSchema.safeParse([]).success).toBe(false);
    const epoch: CustodyEntry = {
      v: 1,
      zid,
      epoch: 2,
      seq: 5,
      prev_hash: 'ab'.repeat(32),
      kind: 'epoch',
      records: 'cd'.repeat(32),
      balance: null,
      transfer: null,
      excluded: ['node-q'],
    };
    expect(entrySchema.safeParse(epoch).success).toBe(true);
    expect(entrySchema.safeParse({ ...epoch, kind: 'seal' }).success).toBe(false);
    // The set is part of what the custodians sign.
    expect(entryHash(epoch)).not.toBe(entryHash({ ...epoch, excluded: ['node-r'] }));
  });
});

describe('a reconfiguration', () => {
  it('is promised for one set per epoch and candidate', () => {
    const promised = { epoch: 2, candidate: 'a', excluded: ['q'] };
    expect(decidePromise(2, 'a', { accepted: 1, promised, selfHome: false, excluded: ['q'] })).toEqual({ promise: 'again' });
    expect(decidePromise(2, 'a', { accepted: 1, promised, selfHome: false })).toMatchObject({ refuse: 'promised', reason: /with its custody set/ });
    expect(decidePromise(2, 'a', { accepted: 1, promised, selfHome: false, excluded: ['r'] })).toMatchObject({ refuse: 'promised' });
    expect(decidePromise(3, 'a', { accepted: 1, promised, selfHome: false, excluded: ['r'] })).toEqual({ promise: 'new' });
    // A later promise names the epoch promised with its set: a candidate asks that set.
    expect(epochsToName(null, promised)).toEqual({ latest: { epoch: 2, home: 'a', excluded: ['q'] } });
  });

  it('holds with a majority of the set before, every promise naming the new set; a checker counts each epoch with its own set', async () => {
    const all = await nodes(5);
    const members = all.map((n) => n.id);
    const home = all[0]!;
    const [p, q, r] = ranking(home.id, members).map((id) => all.find((n) => n.id === id)!);
    const excluded = [q!.id];
    const promise = (s: Signer, more: Partial<PromiseBody> = {}) => signedPromise(s, { epoch: 2, candidate: home.id, excluded, ...more });
    const change: HomeChange = { zid, epoch: 2, home: home.id, promises: [promise(home), promise(p!)], excluded };
    expect(standingOf(change, { home: home.id, epoch: 1 }, members, 3, verifyText)).toEqual({ apply: true });
    // A promise for another set, or a change naming another set than its promises: invalid.
    const mixed: HomeChange = { ...change, promises: [promise(home), promise(p!, { excluded: [r!.id] })] };
    expect(standingOf(mixed, { home: home.id, epoch: 1 }, members, 3, verifyText)).toMatchObject({
      apply: false,
      why: 'invalid',
      reason: /another custody set/,
    });
    expect(standingOf({ ...change, excluded: undefined }, { home: home.id, epoch: 1 }, members, 3, verifyText)).toMatchObject({
      apply: false,
      why: 'invalid',
    });
    // The new custodian's promise does not count towards the set before (it is not in it).
    const byNew: HomeChange = { ...change, promises: [promise(home), promise(r!)] };
    expect(standingOf(byNew, { home: home.id, epoch: 1 }, members, 3, verifyText)).toMatchObject({
      apply: false,
      why: 'invalid',
      reason: /not in the identity's custody set/,
    });

    // The next epoch (a failover to p) is counted from epoch 2's set: promises of p and r hold there, not of p and q.
    const next = (s: Signer) => signedPromise(s, { epoch: 3, candidate: p!.id });
    const known = { home: home.id, epoch: 2, excluded };
    expect(standingOf({ zid, epoch: 3, home: p!.id, promises: [next(p!), next(r!)] }, known, members, 3, verifyText)).toEqual({ apply: true });
    expect(standingOf({ zid, epoch: 3, home: p!.id, promises: [next(p!), next(q!)] }, known, members, 3, verifyText)).toMatchObject({
      apply: false,
      why: 'invalid',
    });
    // A candidate that knew only epoch 1 is shown epoch 2 with its set by a promise, and must ask that set too.
    const naming = signedPromise(p!, { epoch: 3, candidate: q!.id, latest: { epoch: 2, home: home.id, excluded } });
    expect(homesToAsk([naming], { epoch: 1, home: home.id })).toEqual([
      { epoch: 1, home: home.id },
      { epoch: 2, home: home.id, excluded },
    ]);
    const setOf = (at: { home: string; excluded?: string[] }) => setOfConfig(zid, at, members, 3);
    const fromOld = [naming, signedPromise(q!, { epoch: 3, candidate: q!.id })];
    expect(promisesFault(fromOld, zid, 3, { home: q!.id }, { epoch: 1, home: home.id }, setOf, verifyText)).toMatch(/set of epoch 2's home/);
  });

  it('makes a debit certificate of the new epoch hold with the replacement’s signature, not the excluded member’s', async () => {
    const all = await nodes(4);
    const members = all.map((n) => n.id);
    const home = all[0]!;
    const [p, q, r] = ranking(home.id, members).map((id) => all.find((n) => n.id === id)!);
    const entry: CustodyEntry = {
      v: 1,
      zid,
      epoch: 2,
      seq: 9,
      prev_hash: GENESIS_ENTRY_HASH,
      kind: 'transfer',
      records: 'ee'.repeat(32),
      balance: { free: 0, paid: 3 },
      transfer: { id: 'xfer_reconfigured', side: 'debit', party: receiver, amount: 2, tokens: 'ff'.repeat(32) },
    };
    const sign = (s: Signer) => ({ node: s.id, signature: signText(s.key, signingTextOf(entryHash(entry))) });
    const credit = { zid: receiver, transfer: { ...entry.transfer!, side: 'credit' as const, party: zid } };
    const deps = (excluded?: string[]) => ({
      members: () => members,
      replicas: 3,
      configAt: async () => ({ home: home.id, ...(excluded === undefined ? {} : { excluded }) }),
      verify: verifyText,
    });
    expect(await debitCertificateFault({ entry, signatures: [sign(home), sign(r!)] }, credit, deps([q!.id]))).toBeNull();
    expect(await debitCertificateFault({ entry, signatures: [sign(home), sign(q!)] }, credit, deps([q!.id]))).toMatch(/is not a custodian/);
    // Without the reconfiguration known, the replacement is no custodian of the epoch.
    expect(await debitCertificateFault({ entry, signatures: [sign(home), sign(r!)] }, credit, deps())).toMatch(/is not a custodian/);
    expect(await debitCertificateFault({ entry, signatures: [sign(home), sign(p!)] }, credit, deps([q!.id]))).toBeNull();
  });
});
