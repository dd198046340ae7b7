// A custodian's promise table and the check of a home change's promises (custody/promise.ts, custody/home-change.ts):
// real Ed25519 keys of peer ids, the set computed as every node computes it.
import { describe, expect, it } from 'vitest';
import { keyedNodes, signedPromise as signedPromiseOf, type Signer } from '../helpers/promise-signers.js';
import { custodySetOf, type CustodySet } from '../../src/custody/custody-set.js';
import { standingOf, type HomeChange } from '../../src/custody/home-change.js';
import {
  decidePromise,
  epochsToName,
  highestHead,
  homesToAsk,
  latestOf,
  MAX_NAMED_EPOCHS,
  PROMISE_ROWS,
  promisesFault,
  type EpochHome,
  type PromiseBody,
  type SignedPromise,
} from '../../src/custody/promise.js';
import { verifyText } from '../../src/mesh/wire.js';

const zid = 'zid_00112233445566778899aabbccddeeff';

const nodes = keyedNodes;
/** The promise `signer` signs: of `zid`, holding nothing, unless `body` says otherwise. */
const signedPromise = (signer: Signer, body: Partial<PromiseBody> & Pick<PromiseBody, 'epoch' | 'candidate'>) => signedPromiseOf(zid, signer, body);

/** Custody sets given per home (a home not given: itself alone), in place of the ranking, to make each case plain. */
function explicitSets(sets: [string, string[]][]): (at: EpochHome) => CustodySet {
  const byHome = new Map(sets);
  return ({ home }) => {
    const custodians = byHome.get(home) ?? [home];
    return { home, custodians, majority: Math.floor(custodians.length / 2) + 1 };
  };
}

describe('the promise table', () => {
  it('has its rows in order', () => {
    expect(PROMISE_ROWS.map((r) => r.refuse)).toEqual(['home', 'stale', 'again', 'home', 'promised']);
  });
  it('promises an epoch above every accepted one to one candidate only, the same one again', () => {
    expect(decidePromise(2, 'b', { accepted: 1, promised: null, selfHome: false })).toEqual({ promise: 'new' });
    expect(decidePromise(2, 'b', { accepted: 1, promised: { epoch: 2, candidate: 'b' }, selfHome: false })).toEqual({ promise: 'again' });
    expect(decidePromise(2, 'c', { accepted: 1, promised: { epoch: 2, candidate: 'b' }, selfHome: false })).toMatchObject({ refuse: 'promised', epoch: 2 });
    expect(decidePromise(2, 'c', { accepted: 1, promised: { epoch: 3, candidate: 'b' }, selfHome: false })).toMatchObject({ refuse: 'promised', epoch: 3 });
    // The loser may try the next epoch.
    expect(decidePromise(3, 'c', { accepted: 1, promised: { epoch: 2, candidate: 'b' }, selfHome: false })).toEqual({ promise: 'new' });
    expect(decidePromise(2, 'b', { accepted: 2, promised: null, selfHome: false })).toMatchObject({ refuse: 'stale', epoch: 2 });
    expect(decidePromise(2, 'b', { accepted: 2, promised: { epoch: 2, candidate: 'b' }, selfHome: false })).toMatchObject({ refuse: 'stale' });
    // A live home promises nobody its identity.
    expect(decidePromise(2, 'b', { accepted: 1, promised: null, selfHome: true })).toMatchObject({ refuse: 'home', epoch: 1 });
    // Nor does a custodian that hears the home (pre-vote), though it gives again a promise it gave.
    const heard = { accepted: 1, selfHome: false, heardHome: 'a' };
    expect(decidePromise(2, 'b', { ...heard, promised: null })).toMatchObject({ refuse: 'home', epoch: 1, reason: expect.stringContaining('a is heard') });
    expect(decidePromise(3, 'b', { ...heard, promised: { epoch: 2, candidate: 'c' } })).toMatchObject({ refuse: 'home', epoch: 2 });
    expect(decidePromise(2, 'b', { ...heard, promised: { epoch: 2, candidate: 'b' } })).toEqual({ promise: 'again' });
    expect(decidePromise(2, 'b', { ...heard, heardHome: null, promised: null })).toEqual({ promise: 'new' });
  });
});

describe('the promises of a home change', () => {
  it('hold with a majority of the set of the home the checker knows, and not otherwise', async () => {
    const all = await nodes(5);
    const members = all.map((n) => n.id);
    const oldHome = members[0]!;
    const set = custodySetOf(zid, oldHome, members, 3);
    const [, b, c] = set.custodians.map((id) => all.find((n) => n.id === id)!);
    const view = { epoch: 1, home: oldHome };
    const setOf = (at: EpochHome) => custodySetOf(zid, at.home, members, 3);
    const outsider = all.find((n) => !set.custodians.includes(n.id))!;
    const promise = (signer: Signer, head: PromiseBody['head'], more: Partial<PromiseBody> = {}) =>
      signedPromise(signer, { epoch: 2, candidate: b!.id, head, ...more });
    const hb = { epoch: 1, seq: 4, hash: 'aa'.repeat(32) };
    const hc = { epoch: 1, seq: 5, hash: 'bb'.repeat(32) };
    const good = [promise(b!, hb), promise(c!, hc)];
    expect(promisesFault(good, zid, 2, { home: b!.id }, view, setOf, verifyText)).toBeNull();
    expect(highestHead(good)).toEqual({ head: hc, node: c!.id });
    expect(highestHead([promise(b!, { epoch: 2, seq: 1, hash: 'cc'.repeat(32) }), promise(c!, hc)])?.node).toBe(b!.id);
    // Tied at a slot: the later attempt, the promiser's own first or not; a later attempt over a longer given-up chain.
    const retried = { epoch: 1, seq: 5, hash: 'dd'.repeat(32), attempt: 1 };
    expect(highestHead([promise(b!, hc), promise(c!, retried)])).toEqual({ head: retried, node: c!.id });
    expect(highestHead([promise(b!, retried), promise(c!, hc)])).toEqual({ head: retried, node: b!.id });
    expect(highestHead([promise(b!, { epoch: 1, seq: 6, hash: 'ee'.repeat(32) }), promise(c!, retried)])?.node).toBe(c!.id);
    expect(promisesFault([good[0]!], zid, 2, { home: b!.id }, view, setOf, verifyText)).toMatch(
      /1 distinct custodians of the set of epoch 1's home .*, 2 needed/,
    );
    expect(promisesFault([good[0]!, good[0]!], zid, 2, { home: b!.id }, view, setOf, verifyText)).toMatch(/1 distinct/);
    expect(promisesFault([good[0]!, promise(outsider, null)], zid, 2, { home: b!.id }, view, setOf, verifyText)).toMatch(/not in the identity's custody set/);
    expect(promisesFault([good[0]!, { ...good[1]!, signature: good[0]!.signature }], zid, 2, { home: b!.id }, view, setOf, verifyText)).toMatch(
      /does not verify/,
    );
    expect(promisesFault([good[0]!, promise(c!, hc, { candidate: c!.id })], zid, 2, { home: b!.id }, view, setOf, verifyText)).toMatch(
      /another identity, epoch or candidate/,
    );

    // A candidate outside the set (a holder its home's set no longer names): its own promise counts in no majority,
    // and the set's majority holds without it; it shows the highest head.
    const outside = (signer: Signer, head: PromiseBody['head']) => signedPromise(signer, { epoch: 2, candidate: outsider.id, head });
    const ho = { epoch: 1, seq: 7, hash: 'ff'.repeat(32) };
    const fromOutside = [outside(outsider, ho), outside(b!, null), outside(c!, null)];
    expect(promisesFault(fromOutside, zid, 2, { home: outsider.id }, view, setOf, verifyText)).toBeNull();
    expect(highestHead(fromOutside)).toEqual({ head: ho, node: outsider.id });
    expect(promisesFault(fromOutside.slice(0, 2), zid, 2, { home: outsider.id }, view, setOf, verifyText)).toMatch(/1 distinct/);
    expect(standingOf({ zid, epoch: 2, home: outsider.id, promises: fromOutside }, { home: oldHome, epoch: 1 }, members, 3, verifyText)).toEqual({
      apply: true,
    });

    const change: HomeChange = { zid, epoch: 2, home: b!.id, promises: good };
    expect(standingOf(change, { home: oldHome, epoch: 1 }, members, 3, verifyText)).toEqual({ apply: true });
    expect(standingOf(change, { home: b!.id, epoch: 2 }, members, 3, verifyText)).toMatchObject({ apply: false, why: 'known' });
    expect(standingOf({ ...change, epoch: 3 }, { home: oldHome, epoch: 1 }, members, 3, verifyText)).toMatchObject({ apply: false, why: 'gap' });
    // Checked against the set of the home the checker knows: another home's set makes other custodians.
    const forged: HomeChange = { ...change, promises: [good[0]!] };
    expect(standingOf(forged, { home: oldHome, epoch: 1 }, members, 3, verifyText)).toMatchObject({ apply: false, why: 'invalid' });
  });

  it('need a majority of the set of every later epoch’s home a promise names, as the candidate asked them', async () => {
    // Explicit sets: the first epoch's home h with {h, b, c}; c, the home of epoch 2 (promised or taken), with {c, d, e}.
    const [h, b, c, d, e] = await nodes(5);
    const setOf = explicitSets([
      [h!.id, [h!.id, b!.id, c!.id]],
      [c!.id, [c!.id, d!.id, e!.id]],
    ]);
    const promise = (signer: Signer, more: Partial<PromiseBody> = {}) => signedPromise(signer, { epoch: 3, candidate: b!.id, ...more });
    const view = { epoch: 1, home: h!.id };
    // b promised epoch 2 to c before: its promise of 3 names it, and c's set may hold entries of epoch 2 b never saw.
    const fromB = promise(b!, { latest: { epoch: 2, home: c!.id } });
    const fromC = promise(c!);
    expect(homesToAsk([fromB, fromC], view)).toEqual([view, { epoch: 2, home: c!.id }]);
    expect(promisesFault([fromB, fromC], zid, 3, { home: b!.id }, view, setOf, verifyText)).toMatch(/1 distinct custodians of the set of epoch 2's home/);
    const fromD = promise(d!);
    expect(promisesFault([fromB, fromC, fromD], zid, 3, { home: b!.id }, view, setOf, verifyText)).toBeNull();
    // A checker that knows epoch 2 checks from there: c's set alone.
    expect(promisesFault([fromC, fromD], zid, 3, { home: b!.id }, { epoch: 2, home: c!.id }, setOf, verifyText)).toBeNull();
    // The latest epoch named is the one asked, every home named at it: a later one named by d's promise too.
    const fromDLater = promise(d!, { latest: { epoch: 2, home: e!.id } });
    expect(homesToAsk([fromB, fromC, fromDLater], view)).toEqual([view, { epoch: 2, home: c!.id }, { epoch: 2, home: e!.id }]);
    expect(latestOf({ epoch: 1, home: h!.id }, null, { epoch: 3, home: c!.id }, { epoch: 2, home: d!.id })).toEqual({ epoch: 3, home: c!.id });
    expect(latestOf({ epoch: 1, home: h!.id }, undefined)).toBeNull();
  });

  it('need a majority of the set of every epoch a promise names since its promiser saw one completed, not only the latest', async () => {
    // The epoch 22 home h, set {h, p, q}. p promised 23 to x, which certified entries with y (x's set {x, y, q}), then
    // 24 to a and 25 to c, neither completed. Asked by b for 26 with the view of epoch 22, p names them all.
    const [h, p, q, x, y, a, c, b] = await nodes(8);
    const setOf = explicitSets([
      [h!.id, [h!.id, p!.id, q!.id]],
      [x!.id, [x!.id, y!.id, q!.id]],
      [a!.id, [a!.id, p!.id, q!.id]],
      [c!.id, [c!.id, p!.id, b!.id]],
    ]);
    const promise = (signer: Signer, more: Partial<PromiseBody> = {}) => signedPromise(signer, { epoch: 26, candidate: b!.id, ...more });
    const view = { epoch: 22, home: h!.id };
    const head22 = { epoch: 22, seq: 115, hash: 'aa'.repeat(32) };
    const fromP = promise(p!, {
      head: head22,
      latest: { epoch: 25, home: c!.id },
      named: [
        { epoch: 22, home: h!.id },
        { epoch: 23, home: x!.id },
        { epoch: 24, home: a!.id },
      ],
    });
    const fromQ = promise(q!, { head: head22, latest: { epoch: 22, home: h!.id } });
    const fromB = promise(b!);
    expect(homesToAsk([fromP, fromQ, fromB], view)).toEqual([view, { epoch: 23, home: x!.id }, { epoch: 24, home: a!.id }, { epoch: 25, home: c!.id }]);
    // Without epoch 23's set (only q of it), the entries x certified with y could be left off the chain taken.
    expect(promisesFault([fromP, fromQ, fromB], zid, 26, { home: b!.id }, view, setOf, verifyText)).toMatch(
      /1 distinct custodians of the set of epoch 23's home/,
    );
    const head23 = { epoch: 23, seq: 154, hash: 'bb'.repeat(32) };
    const fromY = promise(y!, { head: head23, latest: { epoch: 23, home: x!.id } });
    const all = [fromP, fromQ, fromB, fromY];
    // y's head is of epoch 23: the epochs below it are on its chain, 23 and above are still asked.
    expect(homesToAsk(all, view)).toEqual([view, { epoch: 23, home: x!.id }, { epoch: 24, home: a!.id }, { epoch: 25, home: c!.id }]);
    expect(promisesFault(all, zid, 26, { home: b!.id }, view, setOf, verifyText)).toBeNull();
    expect(highestHead(all)).toEqual({ head: head23, node: y!.id });
    // A head of epoch 24 (a certified with p and q) covers 23: its home took x's entries as this candidate would.
    const fromQ24 = promise(q!, { head: { epoch: 24, seq: 160, hash: 'cc'.repeat(32) }, latest: { epoch: 24, home: a!.id } });
    expect(homesToAsk([fromP, fromQ24, fromB], view)).toEqual([view, { epoch: 24, home: a!.id }, { epoch: 25, home: c!.id }]);
    expect(promisesFault([fromP, fromQ24, fromB], zid, 26, { home: b!.id }, view, setOf, verifyText)).toBeNull();
  });

  it('are named by a custodian from the latest epoch it saw completed up, the newest when it promised more than a promise names', () => {
    const e = (epoch: number, home: string) => ({ epoch, home });
    const before = { epoch: 26, candidate: 'c', latest: e(25, 'b'), named: [e(22, 'h'), e(23, 'x'), e(24, 'a')] };
    expect(epochsToName(e(22, 'h'), before)).toEqual({ latest: e(26, 'c'), named: [e(22, 'h'), e(23, 'x'), e(24, 'a'), e(25, 'b')] });
    // A change of epoch 24 applied since: the epochs below it are on its chain.
    expect(epochsToName(e(24, 'a'), before)).toEqual({ latest: e(26, 'c'), named: [e(24, 'a'), e(25, 'b')] });
    expect(epochsToName(e(27, 'd'), before)).toEqual({ latest: e(27, 'd') });
    expect(epochsToName(null, null)).toEqual({});
    expect(epochsToName(null, { epoch: 2, candidate: 'x' })).toEqual({ latest: e(2, 'x') });
    const many = { epoch: 60, candidate: 'c', named: Array.from({ length: 40 }, (_, i) => e(i + 2, 'n')).slice(0, 40) };
    const named = epochsToName(null, many);
    expect(named.latest).toEqual(e(60, 'c'));
    expect(named.named).toHaveLength(MAX_NAMED_EPOCHS);
    expect(named.named![0]!.epoch).toBe(41 - MAX_NAMED_EPOCHS + 1);
  });

  it('of a change made from an epoch below the one a checker knows hold when they name that epoch or show a head past it', async () => {
    const all = await nodes(5);
    const members = all.map((n) => n.id);
    const setOf = (home: string) => custodySetOf(zid, home, members, 3).custodians;
    // Epoch 9's home b9; the checker knows epoch 10, homed on k; epoch 13's candidate knew only epoch 9 and had the
    // promises of two of b9's set that are not a majority of k's, the one not the candidate outside k's set (the
    // candidate's own promise may be: promisesFault).
    const found = members.flatMap((b9) =>
      members.flatMap((k) =>
        setOf(b9)
          .flatMap((m1, i) =>
            setOf(b9)
              .slice(i + 1)
              .map((m2) => ({ b9, k, m: [m1, m2] })),
          )
          .filter(({ k, m }) => !setOf(k).includes(m[1]!)),
      ),
    );
    const { b9, k, m } = found[0]!;
    const key = (id: string) => all.find((n) => n.id === id)!.key;
    const candidate = m[0]!;
    const promise = (node: string, more: Partial<PromiseBody> = {}) => signedPromise({ id: node, key: key(node) }, { epoch: 13, candidate, ...more });
    const known = { epoch: 10, home: k };
    const change = (promises: SignedPromise[], epoch = 13): HomeChange => ({ zid, epoch, home: candidate, after: 9, promises });
    // Neither naming epoch 10 nor past it: a gap here (a fork of the epoch known, or a history this node cannot check).
    const blind = change(m.map((n) => promise(n, { latest: { epoch: 9, home: b9 } })));
    expect(standingOf(blind, { ...known, base: { home: b9 } }, members, 3, verifyText)).toMatchObject({
      apply: false,
      why: 'gap',
      reason: /do not name the known 10/,
    });
    // A head of epoch 11 (whose home took epoch 10's entries): checked from epoch 9, whose home the checker knows.
    const past = change([
      promise(m[0]!, { latest: { epoch: 9, home: b9 } }),
      promise(m[1]!, { head: { epoch: 11, seq: 3, hash: 'ab'.repeat(32) }, latest: { epoch: 11, home: b9 } }),
    ]);
    expect(standingOf(past, { ...known, base: { home: b9 } }, members, 3, verifyText)).toEqual({ apply: true });
    expect(standingOf(past, known, members, 3, verifyText)).toMatchObject({ apply: false, why: 'gap' });
    // Naming epoch 10 with its home, with a majority of that home's set among the promises.
    const others = setOf(k).filter((n) => !m.includes(n));
    const naming = change([...m, ...others].map((n) => promise(n, { latest: { epoch: 10, home: k } })));
    expect(standingOf(naming, { ...known, base: { home: b9 } }, members, 3, verifyText)).toEqual({ apply: true });
    // Not knowing epoch 9's home, the checker cannot count epoch 9's promisers: a gap.
    expect(standingOf(naming, known, members, 3, verifyText)).toMatchObject({ apply: false, why: 'gap' });
    // The epoch right after the one known: its promises must hold as they always did.
    const next = change(
      m.map((n) => promise(n, { epoch: 11, latest: { epoch: 9, home: b9 } })),
      11,
    );
    expect(standingOf(next, { ...known, base: { home: b9 } }, members, 3, verifyText)).toMatchObject({
      apply: false,
      why: 'invalid',
      reason: /custodians of the set of epoch 10's home/,
    });
  });
});
