// A custodian that holds an identity's head without every entry below it: it signed a write the home then gave up
// (seq 2, its answer lost), the home certified the next write at that slot with the other custodian, and an epoch
// entry opened epoch 2 on that chain (custodian-rules.ts opensEpoch: signed on any seq). Its chain breaks below the
// epoch entry. A node that takes the identity over with its promise takes the entries below from the others: the
// custodian itself as a candidate, and the home taking its identity again (failover.ts retake) when that custodian is
// the only other promiser, its head equal to the home's log. A node taking the identity over promises no other
// candidate from its majority on, and gives its epoch up when it promised one a later epoch while it gathered.
// Composed in-process: three custodians on their own
// stores, the test as the home proposing the entries, each node's failover asking the others directly.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chainAnswerOf, chainRequest, custodyRequest, promiseRequest } from '../../src/custody/client.js';
import { Custodian } from '../../src/custody/custodian.js';
import { entryHash, GENESIS_ENTRY_HASH, signingTextOf, type CustodyEntry } from '../../src/custody/entry.js';
import { EPOCH_RECORDS, Failover, NO_RECORDS, type TakenChain } from '../../src/custody/failover.js';
import type { HomeChange } from '../../src/custody/home-change.js';
import type { ChainLink, CustodyAnswer, EntryRecords } from '../../src/custody/protocol.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { composedCustodian, composedSet, type ComposedNode } from '../helpers/composed-custodian.js';
import { forge, recordsOf } from '../helpers/custody.js';

const SECRET = 'gapped-chain-secret-0123456789abcdef';
const zid = 'zid_89abcdef0123456789abcdef01234567';
const NOW = 1000;

type Node = ComposedNode;

let dir: string;
let home: Node;
let x: Node;
let y: Node;
let nodes: Node[];
let custodians: Map<string, Custodian>;
/** Nodes that are down: every request to them fails. */
let down: Set<string>;
/** The home's certified log (the entries it proposed that a majority holds), with their signatures. */
let homeLog: ChainLink[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-gapped-chain-'));
  ({
    nodes,
    inSetOrder: [home, x, y],
  } = await composedSet(dir, zid));
  custodians = new Map(nodes.map((n) => [n.id, custodianAt(n)]));
  down = new Set();
  homeLog = [];
  failovers.clear();
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

const members = () => nodes.map((n) => n.id);

/** Each node's failover, once made (failoverAt): its custodian promises no other candidate while it takes over. */
const failovers = new Map<string, Failover>();

function custodianAt(n: Node): Custodian {
  return composedCustodian(n, { home: () => home.id, members, secret: SECRET, now: NOW, takingOver: (z) => failovers.get(n.id)?.isTaking(z) ?? false });
}

/** `from` proposes `entries` to the custodian of `to`; the outcome per entry ('signed' or the refusal code). */
async function propose(from: Node, to: Node, entries: CustodyEntry[], records: EntryRecords[] = entries.map(recordsOf)): Promise<CustodyAnswer> {
  if (down.has(to.id)) throw new Error(`${to.id} is down`);
  return (await custodians.get(to.id)!.answer(custodyRequest(SECRET, from.id, NOW, entries, records), from.id)) as CustodyAnswer;
}

/** The home proposes `entry` to `to` (the others do not get it); certified ones join the home's log. */
async function homeProposes(entry: CustodyEntry, to: Node[], records: EntryRecords = recordsOf(entry)): Promise<CustodyEntry> {
  const hash = entryHash(entry);
  const signatures = [{ node: home.id, signature: signText(home.key, signingTextOf(hash)) }];
  for (const node of to) {
    const r = (await propose(home, node, [entry], [records])).results[0]!;
    expect(r.ok, JSON.stringify(r)).toBe(true);
    if (r.ok) signatures.push({ node: node.id, signature: r.signature });
  }
  if (signatures.length >= 2) homeLog.push({ entry, signatures, records, certificate: null });
  return entry;
}

const wallet = (free: number) => ({ free, paid: 0 });

/**
 * The identity's chain: seq 1 held by all; seq 2 given up (held by X alone, its answer lost) and certified again in
 * the next attempt with Y; the epoch entry of epoch 2 on that chain, signed by both. X's chain breaks below it.
 */
async function gappedChain(): Promise<{ head: CustodyEntry; certified: CustodyEntry[] }> {
  const first = await homeProposes(
    forge({ v: 1, zid, epoch: 1, seq: 1, prev_hash: GENESIS_ENTRY_HASH, kind: 'wallet', records: '', balance: wallet(10), transfer: null }),
    [x, y],
  );
  const second = { v: 1 as const, zid, epoch: 1, seq: 2, prev_hash: entryHash(first), kind: 'wallet' as const, records: '', transfer: null };
  const givenUp = forge({ ...second, balance: wallet(7) }, 'given up');
  expect((await propose(home, x, [givenUp])).results[0]!.ok).toBe(true);
  const certified = await homeProposes(forge({ ...second, balance: wallet(4), attempt: 1 }), [y]);
  expect(outcome(await propose(home, x, [certified]))).toBe('slot-taken');
  const epochEntry: CustodyEntry = {
    v: 1,
    zid,
    epoch: 2,
    seq: 3,
    prev_hash: entryHash(certified),
    kind: 'epoch',
    records: EPOCH_RECORDS,
    balance: wallet(4),
    transfer: null,
  };
  const head = await homeProposes(epochEntry, [x, y], NO_RECORDS);
  expect((await custodians.get(x.id)!.head(zid))?.hash).toBe(entryHash(head));
  expect((await custodians.get(x.id)!.entries(zid, 1, 10)).map((h) => h.entry.balance?.free)).toEqual([10, 7, 4]);
  return { head, certified: [first, certified, head] };
}

const outcome = (answer: CustodyAnswer): string => {
  const r = answer.results[0]!;
  return r.ok ? 'signed' : r.code;
};

/**
 * The failover of `n`, its clock at `now()`; what it adopted. `onAsk`: run as it asks a node for a promise; `onSend`:
 * as it proposes entries to a node (its epoch entry).
 */
function failoverAt(
  n: Node,
  now: () => number,
  isHome: boolean,
  hooks: { onAsk?: (node: string) => Promise<void>; onSend?: (node: string) => Promise<void>; onHead?: () => Promise<void> } = {},
) {
  const adopted: { change: HomeChange; chain: TakenChain }[] = [];
  /** The node's own fence and promises, in order. */
  const steps: string[] = [];
  const custodian = custodians.get(n.id)!;
  const failover = new Failover({
    nodeId: () => n.id,
    replicas: 3,
    failoverTicks: 2,
    replaceTicks: 1000,
    members,
    nowSvcond: now,
    lastHeard: (node) => (down.has(node) ? null : { tick: now(), every: 1 }),
    tickEvery: () => 1,
    store: n.store,
    custodian: {
      heldZids: (limit) => custodian.heldZids(limit),
      head: async (z) => {
        await hooks.onHead?.();
        return custodian.head(z);
      },
      promised: (z) => custodian.promised(z),
      promiseTo: (z, epoch, candidate) => {
        steps.push(`promise ${epoch}`);
        return custodian.promiseTo(z, epoch, candidate);
      },
      entries: (z, from, limit) => custodian.entries(z, from, limit),
      configInEpoch: (z, epoch) => custodian.configInEpoch(z, epoch),
    },
    fenceOwn: (_z, epoch) => steps.push(`fence ${epoch}`),
    homeOf: () => Promise.resolve(home.id),
    // The change of epoch 2, the home's: only its epoch is read here.
    homeChanges: { latest: () => Promise.resolve({ zid, epoch: 2, home: home.id } as HomeChange), configAt: () => Promise.resolve(null) },
    askPromise: async (node, z, epoch) => {
      await hooks.onAsk?.(node);
      if (down.has(node)) throw new Error(`${node} is down`);
      return custodians.get(node)!.answerPromise(promiseRequest(SECRET, n.id, NOW, z, epoch), n.id);
    },
    send: async (node, entries, records) => {
      await hooks.onSend?.(node);
      return propose(
        n,
        nodes.find((m) => m.id === node)!,
        entries,
        records,
      );
    },
    // The answer as the node's fetcher takes it (client.ts chainAnswerOf): a page with a gap below the head is one.
    fetch: async (node, z, from) => {
      if (down.has(node)) throw new Error(`${node} is down`);
      return chainAnswerOf(await custodians.get(node)!.answer(chainRequest(SECRET, n.id, NOW, z, from), n.id), z, from);
    },
    verify: verifyText,
    adopt: (change, chain) => {
      adopted.push({ change, chain });
      return Promise.resolve();
    },
    homeLog: () =>
      Promise.resolve(
        isHome && homeLog.length > 0
          ? { head: { epoch: homeLog.at(-1)!.entry.epoch, seq: homeLog.at(-1)!.entry.seq, hash: entryHash(homeLog.at(-1)!.entry) }, links: homeLog }
          : null,
      ),
    sign: (text) => signText(n.key, text),
    publish: () => Promise.resolve(),
    timeoutMs: 5000,
  });
  failovers.set(n.id, failover);
  return { failover, adopted, steps };
}

/**
 * Y promises epoch 3 to itself and never goes on, then is down: the home's entries are fenced at Y. The home's
 * failover after the first refusal, its clock 2 × failoverTicks later: the next refusal takes the identity again.
 */
async function fencedHome(hooks: Parameters<typeof failoverAt>[3] = {}): Promise<ReturnType<typeof failoverAt>> {
  expect(await custodians.get(y.id)!.promiseTo(zid, 3, y.id)).toHaveProperty('promise');
  down.add(y.id);
  let now = NOW;
  const taking = failoverAt(home, () => now, true, hooks);
  await taking.failover.retake(zid); // the first refusal as fenced
  now += 2 * 2;
  return taking;
}

describe('a custodian whose chain breaks below its head', () => {
  it('takes the identity over with the entries below from the other promiser', async () => {
    const { certified } = await gappedChain();
    down.add(home.id);
    let now = NOW;
    const { failover, adopted } = failoverAt(x, () => now, false);
    now = NOW + 20; // the home unheard for longer than (rank + 1) × failoverTicks
    await failover.run();
    expect(failover.stats.taken).toBe(1);
    expect(adopted).toHaveLength(1);
    expect(adopted[0]!.change).toMatchObject({ zid, epoch: 3, home: x.id });
    expect(adopted[0]!.chain.entries.map((c) => c.hash)).toEqual(certified.map(entryHash));
    expect(adopted[0]!.chain.balance).toEqual(wallet(4));
    // Y holds the epoch entry of epoch 3 on that chain.
    expect(await custodians.get(y.id)!.head(zid)).toMatchObject({ epoch: 3, seq: 4, home: x.id });
  });

  it('is no obstacle to the home taking its identity again on its own log', async () => {
    const { certified } = await gappedChain();
    const { failover, adopted, steps } = await fencedHome();
    await failover.retake(zid);
    expect(failover.stats.taken).toBe(1);
    expect(adopted).toHaveLength(1);
    expect(adopted[0]!.change).toMatchObject({ zid, epoch: 3, home: home.id });
    expect(adopted[0]!.chain.entries.map((c) => c.hash)).toEqual(certified.map(entryHash));
    expect(await custodians.get(x.id)!.head(zid)).toMatchObject({ epoch: 3, seq: 4, home: home.id });
    // The home stopped certifying its own entries of earlier epochs before it promised epoch 3 to itself.
    expect(steps).toEqual(['fence 3', 'promise 3']);
  });

  it('is no obstacle to the home taking its identity again when only that custodian holds the head', async () => {
    const { certified } = await gappedChain();
    // The epoch entry is not in the home's log (as after a takeover of its own it began and never finished): X, whose
    // chain breaks below it, holds the head alone, and its answer to a fetch has the gap.
    homeLog.pop();
    const { failover, adopted } = await fencedHome();
    await failover.retake(zid);
    expect(failover.stats.taken).toBe(1);
    expect(adopted[0]!.change).toMatchObject({ zid, epoch: 3, home: home.id });
    expect(adopted[0]!.chain.entries.map((c) => c.hash)).toEqual(certified.map(entryHash));
    expect(await custodians.get(x.id)!.head(zid)).toMatchObject({ epoch: 3, seq: 4, home: home.id });
  });

  it('is taken again once when two fenced refusals ask at the same time', async () => {
    await gappedChain();
    const { failover, adopted } = await fencedHome();
    // Two writes refused as fenced, each asking (the replicator asks on every such refusal).
    await Promise.all([failover.retake(zid), failover.retake(zid)]);
    expect(failover.stats).toMatchObject({ attempts: 1, taken: 1 });
    expect(adopted).toHaveLength(1);
  });

  it('is taken again once when the second refusal’s reads come back after the first takeover ended', async () => {
    await gappedChain();
    // As the first refusal's retake reads what the custodian holds, before its takeover starts, a second refusal asks;
    // a read it makes then comes back only after the first takeover ended.
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    let holding = false;
    let second: Promise<void> | null = null;
    const onHead = async () => {
      if (holding) {
        holding = false;
        return held;
      }
      if (second !== null) return;
      holding = true;
      second = failover.retake(zid);
      await new Promise((r) => setTimeout(r, 50));
      holding = false;
    };
    const { failover, adopted } = await fencedHome({ onHead });
    await failover.retake(zid);
    release();
    await second;
    expect(second).not.toBeNull();
    expect(failover.stats).toMatchObject({ attempts: 1, taken: 1 });
    expect(adopted).toHaveLength(1);
  });
});

/**
 * The home down, X takes the identity over (epoch 3), Y's custodian asking X for a promise of epoch 4 once: as X asks
 * Y for its promise (`when` 'ask'), or as X proposes its epoch entry to Y ('send'). X's failover, what it adopted, and
 * X's answer to Y.
 */
async function takenOverWhileAsked(when: 'ask' | 'send') {
  await gappedChain();
  down.add(home.id);
  let now = NOW;
  let answer: unknown = null;
  const askX = async (node: string) => {
    if (node === y.id && answer === null) answer = await custodians.get(x.id)!.promiseTo(zid, 4, y.id);
  };
  const taking = failoverAt(x, () => now, false, when === 'ask' ? { onAsk: askX } : { onSend: askX });
  now = NOW + 20;
  await taking.failover.run();
  return { ...taking, answer };
}

describe('a node taking an identity over', () => {
  it('does not become the home when its custodian promised a later epoch to another candidate while it gathered', async () => {
    // X is not taking over yet when Y asks: it promises epoch 4.
    const { failover, adopted, answer } = await takenOverWhileAsked('ask');
    expect(answer).toHaveProperty('promise');
    // Y may take a chain without what X would certify as the home: X gives the epoch up.
    expect(adopted).toHaveLength(0);
    expect(failover.stats.taken).toBe(0);
  });

  it('promises no later epoch to another candidate once a majority promised it, until it is the home', async () => {
    const { failover, adopted, answer } = await takenOverWhileAsked('send');
    expect(answer).toMatchObject({ refused: { code: 'home' } });
    expect(adopted).toHaveLength(1);
    expect(adopted[0]!.change).toMatchObject({ epoch: 3, home: x.id });
    // Done taking: the failover no longer counts it as taking.
    expect(failover.isTaking(zid)).toBe(false);
  });
});
