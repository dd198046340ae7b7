// A custodian's promises name what it knew before each (custodian.ts, promise.ts `latest`): an earlier promise to
// another candidate, kept on disk, so a candidate behind learns of an epoch whose entries another set may certify.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promiseSigningText, type PromiseBody } from '../../src/custody/promise.js';
import { verifyText } from '../../src/mesh/wire.js';
import { composedCustodian, composedNodes, type ComposedNode } from '../helpers/composed-custodian.js';

const ZID = 'zid_0123456789abcdef0123456789abcdef';
let dir = '';
let nodes: ComposedNode[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-custodian-promise-'));
  nodes = await composedNodes(dir, 3);
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

describe("a custodian's promise", () => {
  it('names the epoch it promised before and to whom, the same again when asked again, and after a restart', async () => {
    const [custodianNode, x, y] = nodes as [ComposedNode, ComposedNode, ComposedNode];
    const members = () => nodes.map((n) => n.id);
    const custodian = composedCustodian(custodianNode, { home: () => 'the-old-home', members, secret: 's', now: 100 });
    const first = await custodian.promiseTo(ZID, 2, x.id);
    expect('promise' in first && first.promise.promise.latest).toBeUndefined();
    const second = await custodian.promiseTo(ZID, 3, y.id);
    if (!('promise' in second)) throw new Error(JSON.stringify(second));
    expect(second.promise.promise).toMatchObject({ epoch: 3, candidate: y.id, latest: { epoch: 2, home: x.id } });
    expect(verifyText(custodianNode.id, promiseSigningText(second.promise.promise), second.promise.signature)).toBe(true);
    // Asked again, the same promise; x, behind, is refused at 3.
    const again = await custodian.promiseTo(ZID, 3, y.id);
    expect('promise' in again && again.promise.promise).toEqual(second.promise.promise);
    expect(await custodian.promiseTo(ZID, 3, x.id)).toMatchObject({ refused: { code: 'promised', epoch: 3 } });
    // A custodian started again on its store says the same.
    const restarted = composedCustodian(custodianNode, { home: () => 'the-old-home', members, secret: 's', now: 100 });
    const afterRestart = await restarted.promiseTo(ZID, 3, y.id);
    expect('promise' in afterRestart && afterRestart.promise.promise).toEqual(second.promise.promise);
    const fourth = await restarted.promiseTo(ZID, 4, x.id);
    expect('promise' in fourth && fourth.promise.promise.latest).toEqual({ epoch: 3, home: y.id });
  });

  it('names every epoch it promised since the latest it saw completed, oldest first, and no earlier one', async () => {
    const [custodianNode, x, y] = nodes as [ComposedNode, ComposedNode, ComposedNode];
    const members = () => nodes.map((n) => n.id);
    const zid = 'zid_0123456789abcdef0123456789abcde0';
    // The certified log this node keeps as a former home (absent: none): the latest epoch it saw completed.
    let own: { epoch: number; seq: number; hash: string } | null = null;
    const custodian = composedCustodian(custodianNode, { home: () => 'the-old-home', members, secret: 's', now: 100, ownHead: () => Promise.resolve(own) });
    const body = async (epoch: number, candidate: string) => {
      const answer = await custodian.promiseTo(zid, epoch, candidate);
      if (!('promise' in answer)) throw new Error(JSON.stringify(answer));
      expect(verifyText(custodianNode.id, promiseSigningText(answer.promise.promise), answer.promise.signature)).toBe(true);
      return answer.promise.promise;
    };
    /** What a promise names, oldest first (its `named`, then its `latest`), as epoch/home with the test's names. */
    const names = (p: PromiseBody) =>
      [...(p.named ?? []), ...(p.latest === undefined ? [] : [p.latest])].map((n) => `${n.epoch}/${n.home === x.id ? 'x' : n.home === y.id ? 'y' : 'self'}`);
    expect(names(await body(2, x.id))).toEqual([]);
    expect(names(await body(3, y.id))).toEqual(['2/x']);
    // Epochs 2 and 3 were promised and never seen completed: either candidate may have certified entries with its set.
    const fourth = await body(4, x.id);
    expect(names(fourth)).toEqual(['2/x', '3/y']);
    expect(await body(4, x.id)).toEqual(fourth);
    expect(names(await body(5, y.id))).toEqual(['2/x', '3/y', '4/x']);
    // Epoch 3 seen completed (its certified log here): the epochs below it are no longer named.
    own = { epoch: 3, seq: 9, hash: 'c'.repeat(64) };
    expect(names(await body(6, x.id))).toEqual(['3/self', '4/x', '5/y']);
    own = { epoch: 6, seq: 10, hash: 'd'.repeat(64) };
    const seventh = await body(7, y.id);
    expect(names(seventh)).toEqual(['6/self']);
    expect(seventh.named).toBeUndefined();
  });

  it('shows the certified head this node holds as a former home when it is above what its custodian side holds', async () => {
    const [custodianNode, x] = nodes as [ComposedNode, ComposedNode];
    const members = () => nodes.map((n) => n.id);
    const zid = 'zid_fedcba9876543210fedcba9876543210';
    // This node was the identity's home in epoch 5 and certified up to seq 221 there; its custodian side holds nothing.
    let own: { epoch: number; seq: number; hash: string; attempt?: number } | null = { epoch: 5, seq: 221, hash: 'a'.repeat(64), attempt: 16 };
    const custodian = composedCustodian(custodianNode, { home: () => x.id, members, secret: 's', now: 100, ownHead: () => Promise.resolve(own) });
    const first = await custodian.promiseTo(zid, 7, x.id);
    if (!('promise' in first)) throw new Error(JSON.stringify(first));
    expect(first.promise.promise).toMatchObject({
      head: { epoch: 5, seq: 221, hash: 'a'.repeat(64), attempt: 16 },
      latest: { epoch: 5, home: custodianNode.id },
    });
    expect(verifyText(custodianNode.id, promiseSigningText(first.promise.promise), first.promise.signature)).toBe(true);
    // None kept as a home: the promise shows the custodian side's head (none here).
    own = null;
    const other = await custodian.promiseTo('zid_fedcba9876543210fedcba9876543211', 7, x.id);
    expect('promise' in other && other.promise.promise.head).toBeNull();
  });
});
