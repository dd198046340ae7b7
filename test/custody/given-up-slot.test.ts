// A write the home gave up at a slot, and the next write of the identity certified at that same slot: after the home
// dies and X takes the identity over, X serves the acknowledged write, not the given-up one. X signed the given-up
// proposal (its answer lost on the way back), Y never got it; the next write is refused by X (slot taken) and
// certified by the home and Y. Composed in-process: the home's replicator and the custodians X and Y, each on its own
// store, the home's link to them made in the test (an answer lost, a request dropped or held), X's failover asking Y.
// And the rule behind it: a write chained on a proposal the home then gives up is never acknowledged.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { custodyRequest, type SendBatch } from '../../src/custody/client.js';
import { Custodian } from '../../src/custody/custodian.js';
import type { CustodyEntry } from '../../src/custody/entry.js';
import { chainAnswerSchema, type CustodyAnswer } from '../../src/custody/protocol.js';
import type { Replicator } from '../../src/custody/replicator.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { composedCustodian, composedSet, composedFailover, composedReplicator, type ComposedNode } from '../helpers/composed-custodian.js';
import { Store } from '../../src/store/db.js';

const SECRET = 'given-up-slot-secret-0123456789abcdef';
const zid = 'zid_0123456789abcdef0123456789abcdef';
const NOW = 1000;

/**
 * What the home's link does to a request to a custodian: deliver it, lose the answer, drop the request, or hold it
 * until the test lets the held requests fail (`release`).
 */
type LinkRule = 'deliver' | 'lose-answer' | 'drop' | 'hold';

type Node = ComposedNode;

let dir: string;
let nodes: Node[];
let home: Node;
let x: Node;
let y: Node;
let custodians: Map<string, Custodian>;
let links: Map<string, LinkRule>;
/** Every entry the home sent, in order. */
let sent: CustodyEntry[];
let release: () => void;
let released: Promise<void>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-given-up-'));
  ({
    nodes,
    inSetOrder: [home, x, y],
  } = await composedSet(dir, zid));
  custodians = new Map([x, y].map((n) => [n.id, custodianAt(n)]));
  links = new Map([x, y].map((n) => [n.id, 'deliver']));
  sent = [];
  released = new Promise((resolve) => (release = resolve));
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

const members = () => nodes.map((n) => n.id);

function custodianAt(n: Node): Custodian {
  return composedCustodian(n, { home: () => home.id, members, secret: SECRET, now: NOW });
}

/** The home's link to its custodians, by the rule the test set for each. */
const homeSend: SendBatch = async (node, entries, records, _signal, certificates) => {
  sent.push(...entries);
  const rule = links.get(node)!;
  if (rule === 'drop') throw new Error('the request was dropped');
  if (rule === 'hold') {
    await released;
    throw new Error('the request was held, then dropped');
  }
  const answer = (await custodians.get(node)!.answer(custodyRequest(SECRET, home.id, NOW, entries, records, certificates), home.id)) as CustodyAnswer;
  if (rule === 'lose-answer') throw new Error('the answer was lost');
  return answer;
};

/** The home's replicator on its store (a restart: another one on the same store). */
function homeReplicator(store: Store = home.store): Replicator {
  const r = composedReplicator(home, members, homeSend, store);
  home.store.gate = r;
  return r;
}

/** A write of the identity's wallet at its home, through the replicator's gate. */
function write(free: number): Promise<void> {
  return home.store.commit([{ type: 'put', sub: home.store.sub('wallets', 'json', { rewritten: true }), key: zid, value: { free, paid: 0 } }]);
}

async function expectGivenUp(w: Promise<void>): Promise<void> {
  const err = await w.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).code).toBe('SVC_CUSTODY_UNAVAILABLE');
}

/** X takes the identity over, the home unheard; what X then serves: the wallet, and the hashes of its log. */
async function failoverAtX(): Promise<{ taken: number; wallet: unknown; log: string[] }> {
  let now = NOW;
  const failover = composedFailover(x, {
    home,
    members,
    custodians,
    secret: SECRET,
    now: NOW,
    clock: () => now,
    failoverTicks: 2,
    replaceTicks: 1000,
    lastHeard: (node) => (node === y.id ? { tick: now, every: 1 } : null),
  });
  now = NOW + 10; // the home unheard for longer than failoverTicks
  await failover.run();
  return {
    taken: failover.stats.taken,
    wallet: await x.store.get(x.store.sub('wallets', 'json', { rewritten: true }), zid),
    log: (await composedReplicator(x, members, null).entries(zid, 1, 100)).map((c) => c.hash),
  };
}

describe('a write given up at a slot, then the next write certified at that slot', () => {
  it('survives a failover to the custodian that holds the given-up one', async () => {
    homeReplicator();
    await write(10);
    links.set(x.id, 'lose-answer');
    links.set(y.id, 'drop');
    await expectGivenUp(write(7));
    links.set(x.id, 'deliver');
    links.set(y.id, 'deliver');
    await write(4);
    const acknowledged = sent.at(-1)!;
    expect(acknowledged.seq).toBe(2);
    // A fresh identity's first attempt is 0 (absent); the write after the given-up one starts the next.
    expect(sent[0]!.attempt).toBeUndefined();
    expect(acknowledged.attempt).toBe(1);
    expect(sent.filter((e) => e.seq === 2 && e.balance?.free === 7)).toHaveLength(2); // given up: held by X only
    // The home answers a fetch of the chain with its head's attempt, and a fetcher (an old home taking it) reads it.
    const page = await homeReplicator().page(zid, 1);
    expect(page.head).toMatchObject({ seq: 2, attempt: 1 });
    expect(chainAnswerSchema.safeParse({ v: 1, ...page }).success).toBe(true);

    const served = await failoverAtX();
    expect(served.taken).toBe(1);
    expect(served.wallet).toEqual({ free: 4, paid: 0 });
    const certified = (await homeReplicator().entries(zid, 1, 100)).map((c) => c.hash);
    expect(certified).toHaveLength(2);
    expect(served.log.slice(0, 2)).toEqual(certified);
  });

  it('survives it when the given-up writes ran past the slot (a longer chain behind the lower attempt)', async () => {
    homeReplicator();
    await write(10);
    links.set(x.id, 'lose-answer');
    links.set(y.id, 'drop');
    // Two writes in flight: X signs seq 2 and seq 3, both given up.
    await Promise.all([expectGivenUp(write(7)), expectGivenUp(write(5))]);
    expect(sent.filter((e) => e.seq === 3)).not.toHaveLength(0);
    links.set(x.id, 'deliver');
    links.set(y.id, 'deliver');
    await write(4);
    expect(sent.at(-1)!.seq).toBe(2);

    const served = await failoverAtX();
    expect(served.taken).toBe(1);
    expect(served.wallet).toEqual({ free: 4, paid: 0 });
  });

  it('survives it when the home restarted between the two writes (it never proposes an attempt twice)', async () => {
    homeReplicator();
    await write(10);
    links.set(x.id, 'lose-answer');
    links.set(y.id, 'drop');
    await expectGivenUp(write(7));
    links.set(x.id, 'deliver');
    links.set(y.id, 'deliver');
    homeReplicator();
    await write(4);
    const givenUp = sent.find((e) => e.seq === 2 && e.balance?.free === 7)!;
    const acknowledged = sent.at(-1)!;
    expect(acknowledged.seq).toBe(2);
    expect(acknowledged.attempt ?? 0).toBeGreaterThan(givenUp.attempt ?? 0);

    const served = await failoverAtX();
    expect(served.taken).toBe(1);
    expect(served.wallet).toEqual({ free: 4, paid: 0 });
  });

  it('acknowledges no write chained on an entry the home then gives up', async () => {
    homeReplicator();
    await write(10);
    // seq 2: Y signs it and its answer is lost, X holds the request; seq 3, in Y's next batch, is signed and answered.
    links.set(x.id, 'hold');
    links.set(y.id, 'lose-answer');
    const second = write(7);
    await until(() => sent.filter((e) => e.seq === 2).length === 2);
    links.set(y.id, 'deliver');
    const third = write(5);
    await until(() => sent.some((e) => e.seq === 3));
    const outcome = (w: Promise<void>) =>
      w.then(
        () => 'acknowledged',
        (e: unknown) => (e as ServiceError).code,
      );
    const settled = Promise.all([outcome(second), outcome(third)]);
    release(); // X's requests fail: seq 2 has no majority, and seq 3 goes with it
    expect(await settled).toEqual(['SVC_CUSTODY_UNAVAILABLE', 'SVC_CUSTODY_UNAVAILABLE']);
    links.set(x.id, 'deliver');
    await write(4);
    expect(await home.store.get(home.store.sub('wallets', 'json', { rewritten: true }), zid)).toEqual({ free: 4, paid: 0 });
    expect((await homeReplicator().entries(zid, 1, 100)).map((c) => c.entry.balance?.free)).toEqual([10, 4]);
  });

  it('refuses a write of the identity made before a given-up write settled with its caller, and not after', async () => {
    const r = homeReplicator();
    await write(10);
    // Through the gate directly: the store settles a refusal with its caller in its turn (the writes before it first),
    // and until then the caller's memory still holds what the given-up write changed (a chain row never written).
    const wallet = (free: number) => [
      { type: 'put' as const, sub: home.store.sub('wallets', 'json', { rewritten: true }), key: zid, value: { free, paid: 0 } },
    ];
    links.set(x.id, 'drop');
    links.set(y.id, 'drop');
    const givenUp = wallet(7);
    await expectGivenUp(r.hold(givenUp)!.then(() => undefined));
    links.set(x.id, 'deliver');
    links.set(y.id, 'deliver');
    const built = wallet(5);
    const refused = await r.hold(built)!.then(
      () => null,
      (e: unknown) => e as ServiceError,
    );
    expect(refused?.code).toBe('SVC_CUSTODY_UNAVAILABLE');
    expect(refused?.extra).toMatchObject({ reason: 'an earlier write of the identity was not certified' });
    expect(sent.some((e) => e.balance?.free === 5)).toBe(false);
    // Settled with their callers, the identity writes again, chained on what was written.
    r.refusalSettled(givenUp);
    r.refusalSettled(built);
    await write(4);
    expect((await homeReplicator().entries(zid, 1, 100)).map((c) => c.entry.balance?.free)).toEqual([10, 4]);
  });

  it('sends no entry of an attempt it could not keep on disk: the write answers 503, the next one keeps it first', async () => {
    // The home's store refuses its next two writes beside the queue (commitAside): the attempts it keeps.
    let refusals = 2;
    const failing = Object.create(home.store) as Store;
    failing.commitAside = (ops) => (refusals-- > 0 ? Promise.reject(new Error('disk full')) : home.store.commitAside(ops));
    homeReplicator(failing);
    refusals = 0;
    await write(10);
    links.set(x.id, 'lose-answer');
    links.set(y.id, 'drop');
    refusals = 2;
    await expectGivenUp(write(7)); // its next attempt is not kept (one refusal)
    links.set(x.id, 'deliver');
    links.set(y.id, 'deliver');
    const sentBefore = sent.length;
    const err = await write(5).then(
      () => null,
      (e: unknown) => e as ServiceError,
    ); // kept again first: refused again
    expect(err?.code).toBe('SVC_CUSTODY_UNAVAILABLE');
    expect(err?.extra).toMatchObject({ reason: 'attempt not kept' });
    expect(sent.length).toBe(sentBefore);
    await write(4);
    expect(sent.at(-1)).toMatchObject({ seq: 2, attempt: 1, balance: { free: 4, paid: 0 } });
    expect(await home.store.get(home.store.sub('custody_attempts', 'json', { rewritten: true }), zid)).toEqual({ epoch: 1, attempt: 1 });
  });
});

async function until(test: () => boolean): Promise<void> {
  for (let i = 0; !test(); i++) {
    if (i > 500) throw new Error('the condition did not hold within 5 s');
    await new Promise((r) => setTimeout(r, 10));
  }
}
