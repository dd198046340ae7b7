// A custodian's promise table and the check of a home change's promises (custody/promise.ts, custody/home-change.ts):
// real Ed25519 keys of peer ids, the set computed as every node computes it.
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { describe, expect, it } from 'vitest';
import { custodySetOf } from '../../src/custody/custody-set.js';
import { standingOf, type HomeChange } from '../../src/custody/home-change.js';
import {
  decidePromise,
  highestHead,
  homesToAsk,
  latestOf,
  PROMISE_ROWS,
  promiseSigningText,
  promisesFault,
  type PromiseBody,
  type SignedPromise,
} from '../../src/custody/promise.js';
import { signText, verifyText } from '../../src/mesh/wire.js';

const zid = 'zid_00112233445566778899aabbccddeeff';

async function nodes(n: number) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
      return { id: peerIdFromPrivateKey(key as never).toString(), key };
    }),
  );
}

describe('the promise table', () => {
  it('has its rows in order', () => {
    expect(PROMISE_ROWS.map((r) => r.refuse)).toEqual(['home', 'stale', 'again', 'promised']);
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
    const setOf = (home: string) => custodySetOf(zid, home, members, 3);
    const outsider = all.find((n) => !set.custodians.includes(n.id))!;
    const promise = (
      signer: { id: string; key: Parameters<typeof signText>[0] },
      head: PromiseBody['head'],
      more: Partial<PromiseBody> = {},
    ): SignedPromise => {
      const body: PromiseBody = { zid, epoch: 2, candidate: b!.id, head, ...more };
      return { promise: body, node: signer.id, signature: signText(signer.key, promiseSigningText(body)) };
    };
    const hb = { epoch: 1, seq: 4, hash: 'aa'.repeat(32) };
    const hc = { epoch: 1, seq: 5, hash: 'bb'.repeat(32) };
    const good = [promise(b!, hb), promise(c!, hc)];
    expect(promisesFault(good, zid, 2, b!.id, view, setOf, verifyText)).toBeNull();
    expect(highestHead(good)).toEqual({ head: hc, node: c!.id });
    expect(highestHead([promise(b!, { epoch: 2, seq: 1, hash: 'cc'.repeat(32) }), promise(c!, hc)])?.node).toBe(b!.id);
    // Tied at a slot: the later attempt, the promiser's own first or not; a later attempt over a longer given-up chain.
    const retried = { epoch: 1, seq: 5, hash: 'dd'.repeat(32), attempt: 1 };
    expect(highestHead([promise(b!, hc), promise(c!, retried)])).toEqual({ head: retried, node: c!.id });
    expect(highestHead([promise(b!, retried), promise(c!, hc)])).toEqual({ head: retried, node: b!.id });
    expect(highestHead([promise(b!, { epoch: 1, seq: 6, hash: 'ee'.repeat(32) }), promise(c!, retried)])?.node).toBe(c!.id);
    expect(promisesFault([good[0]!], zid, 2, b!.id, view, setOf, verifyText)).toMatch(/1 distinct custodians of the set of epoch 1's home .*, 2 needed/);
    expect(promisesFault([good[0]!, good[0]!], zid, 2, b!.id, view, setOf, verifyText)).toMatch(/1 distinct/);
    expect(promisesFault([good[0]!, promise(outsider, null)], zid, 2, b!.id, view, setOf, verifyText)).toMatch(/not in the identity's custody set/);
    expect(promisesFault([good[0]!, { ...good[1]!, signature: good[0]!.signature }], zid, 2, b!.id, view, setOf, verifyText)).toMatch(/does not verify/);
    expect(promisesFault([good[0]!, promise(c!, hc, { candidate: c!.id })], zid, 2, b!.id, view, setOf, verifyText)).toMatch(
      /another identity, epoch or candidate/,
    );

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
    const sets = new Map([
      [h!.id, [h!.id, b!.id, c!.id]],
      [c!.id, [c!.id, d!.id, e!.id]],
    ]);
    const setOf = (home: string) => {
      const custodians = sets.get(home) ?? [home];
      return { home, custodians, majority: Math.floor(custodians.length / 2) + 1 };
    };
    const promise = (signer: { id: string; key: Parameters<typeof signText>[0] }, more: Partial<PromiseBody> = {}): SignedPromise => {
      const body: PromiseBody = { zid, epoch: 3, candidate: b!.id, head: null, ...more };
      return { promise: body, node: signer.id, signature: signText(signer.key, promiseSigningText(body)) };
    };
    const view = { epoch: 1, home: h!.id };
    // b promised epoch 2 to c before: its promise of 3 names it, and c's set may hold entries of epoch 2 b never saw.
    const fromB = promise(b!, { latest: { epoch: 2, home: c!.id } });
    const fromC = promise(c!);
    expect(homesToAsk([fromB, fromC], view)).toEqual([view, { epoch: 2, home: c!.id }]);
    expect(promisesFault([fromB, fromC], zid, 3, b!.id, view, setOf, verifyText)).toMatch(/1 distinct custodians of the set of epoch 2's home/);
    const fromD = promise(d!);
    expect(promisesFault([fromB, fromC, fromD], zid, 3, b!.id, view, setOf, verifyText)).toBeNull();
    // A checker that knows epoch 2 checks from there: c's set alone.
    expect(promisesFault([fromC, fromD], zid, 3, b!.id, { epoch: 2, home: c!.id }, setOf, verifyText)).toBeNull();
    // The latest epoch named is the one asked, every home named at it: a later one named by d's promise too.
    const fromDLater = promise(d!, { latest: { epoch: 2, home: e!.id } });
    expect(homesToAsk([fromB, fromC, fromDLater], view)).toEqual([view, { epoch: 2, home: c!.id }, { epoch: 2, home: e!.id }]);
    expect(latestOf({ epoch: 1, home: h!.id }, null, { epoch: 3, home: c!.id }, { epoch: 2, home: d!.id })).toEqual({ epoch: 3, home: c!.id });
    expect(latestOf({ epoch: 1, home: h!.id }, undefined)).toBeNull();
  });
});
