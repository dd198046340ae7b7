// An identity's custody set after the members change (set-changes.ts, Replicator.handOver): the home certified three
// writes with the set of then, B and C. Two nodes heard later, D and E, outrank both for the identity: the set of now
// is the home, D and E, which hold none of the writes. The pass hands them the certified head; each catches up from
// the home's log and signs it, so a failover by the new set keeps the acknowledged writes. Without the pass the new
// set holds nothing, and its failover does not even watch the identity; a home that dies before its own view changes
// leaves its writes with B and C, outside the set of now, and B takes the identity over with the promises of D and E.
// Composed in-process: the home's replicator and the custodians, each on its own store; the custodians catch up from
// the home's certified log or from the candidate's chain.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { custodyRequest, type SendBatch } from '../../src/custody/client.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import type { Custodian } from '../../src/custody/custodian.js';
import type { Failover } from '../../src/custody/failover.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';
import type { Replicator } from '../../src/custody/replicator.js';
import { SetChanges } from '../../src/custody/set-changes.js';
import { rankWeight } from '../../src/consensus/committee.js';
import { signText } from '../../src/mesh/wire.js';
import { composedCustodian, composedNodes, composedReplicator, silentHomeFailover, type ComposedNode } from '../helpers/composed-custodian.js';
import { waitUntil } from '../helpers/wait.js';

const SECRET = 'set-changes-secret-0123456789abcdef';
const zid = 'zid_0123456789abcdef0123456789abcdef';
const NOW = 1000;

let dir: string;
let nodes: ComposedNode[];
let home: ComposedNode;
/** The set of then (B, C) and the two nodes heard later that outrank both (D, E). */
let b: ComposedNode, c: ComposedNode, d: ComposedNode, e: ComposedNode;
let custodians: Map<string, Custodian>;
let replicator: Replicator;
/** The members the home knows. */
let view: string[];
/** Nodes the home cannot reach, and nodes that answer with signatures of something else. */
let down: Set<string>;
let lying: Set<string>;
/** The failovers whose opening chains the custodians catch up from, by node. */
let opening: Map<string, Failover>;
/** The identity's home as the custodians read it (the home, until a test's failover moves it). */
let homeNow: string;

const wallets = (n: ComposedNode) => n.store.sub('wallets', 'json', { rewritten: true });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-set-changes-'));
  nodes = await composedNodes(dir, 5);
  home = nodes[0]!;
  const byWeight = nodes.slice(1).sort((m, n) => (rankWeight(zid, m.id) < rankWeight(zid, n.id) ? 1 : -1));
  [d, e, b, c] = byWeight as [ComposedNode, ComposedNode, ComposedNode, ComposedNode];
  view = [home.id, b.id, c.id];
  down = new Set();
  lying = new Set();
  // The custodians catch up from the home's certified log, or from a candidate's chain for the epoch it opens.
  const fetch = async (peer: string, z: string, from: number) => {
    if (peer === home.id) return { v: 1 as const, ...(await replicator.page(z, from)) };
    const page = opening.get(peer)?.openingPage(z, from);
    if (page === undefined || page === null) throw new Error(`${peer} serves no chain here`);
    return { v: 1 as const, ...page };
  };
  opening = new Map();
  homeNow = home.id;
  custodians = new Map(
    [b, c, d, e].map((n) => [n.id, composedCustodian(n, { home: () => homeNow, members: () => nodes.map((m) => m.id), secret: SECRET, now: NOW, fetch })]),
  );
  const send: SendBatch = async (node, entries, records, _signal, certificates) => {
    if (down.has(node)) throw new Error(`${node} is down`);
    const answer = (await custodians.get(node)!.answer(custodyRequest(SECRET, home.id, NOW, entries, records, certificates), home.id)) as CustodyAnswer;
    // A liar answers every entry signed, with a signature of another text.
    if (!lying.has(node)) return answer;
    const forged = signText(nodes.find((n) => n.id === node)!.key, 'svc/custody/1|not-this-entry');
    return { ...answer, results: entries.map(() => ({ ok: true as const, signature: forged })) };
  };
  replicator = composedReplicator(home, () => view, send);
  home.store.gate = replicator;
  for (const free of [10, 7, 4]) await home.store.commit([{ type: 'put', sub: wallets(home), key: zid, value: { free, paid: 0 } }]);
  for (const n of [b, c]) await waitUntil(async () => (await custodians.get(n.id)!.head(zid))?.seq === 3, `${n.id} holds seq 3`, 5_000, 10);
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

function setChanges(isHome = true): SetChanges {
  return new SetChanges({
    members: () => view,
    homed: (limit, from) => replicator.homed(limit, false, from),
    isHome: async () => isHome,
    handOver: (z, skip) => replicator.handOver(z, skip),
    sameSetUnder: (z, lists) => replicator.sameSetUnder(z, lists),
  });
}

/**
 * `n`'s failover of the identity, started at tick 100 when the home was last heard, run once at tick 200 (the others
 * heard then). Its custody requests to the nodes in `unsigning` fail (their promises still come).
 */
async function failoverAt(n: ComposedNode, members: () => string[], unsigning: ReadonlySet<string> = new Set()) {
  const clock = { now: 100 };
  const reached = new Map(
    [...custodians].map(([id, real]): [string, Custodian] => {
      if (!unsigning.has(id)) return [id, real];
      const refusing = Object.create(real) as Custodian;
      refusing.answer = () => Promise.reject(new Error(`${id} is unreachable`));
      return [id, refusing];
    }),
  );
  const failover = silentHomeFailover(n, { home, members, custodians: reached, secret: SECRET, now: NOW, clock, homeHeard: 100 });
  opening.set(n.id, failover);
  clock.now = 200;
  await failover.run();
  return failover.stats;
}

/** D as the identity's home once it takes it over: its replicator (its requests to `unreachable` fail) and its set-change ticker. */
function homeAtD(members: string[], unreachable: ReadonlySet<string> = new Set()): { newHome: Replicator; owed: SetChanges } {
  const send: SendBatch = async (node, entries, records, _signal, certificates) => {
    if (unreachable.has(node)) throw new Error(`${node} is down`);
    return (await custodians.get(node)!.answer(custodyRequest(SECRET, d.id, NOW, entries, records, certificates), d.id)) as CustodyAnswer;
  };
  const newHome = composedReplicator(d, () => members, send);
  const owed = new SetChanges({
    members: () => members,
    homed: (limit, from) => newHome.homed(limit, false, from),
    isHome: async () => homeNow === d.id,
    handOver: (z, skip) => newHome.handOver(z, skip),
    sameSetUnder: (z, lists) => newHome.sameSetUnder(z, lists),
  });
  return { newHome, owed };
}

const headAt = async (n: ComposedNode) => (await custodians.get(n.id)!.head(zid))?.seq ?? 0;

describe('the custodians new to a set after the members change', () => {
  it('are handed the certified head, catch up from the home and keep the writes through a failover', async () => {
    view = nodes.map((n) => n.id);
    expect(replicator.setOf(zid).custodians).toEqual(custodySetOf(zid, home.id, view, 3).custodians);
    expect([...replicator.setOf(zid).custodians].sort()).toEqual([home.id, d.id, e.id].sort());
    expect([await headAt(d), await headAt(e)]).toEqual([0, 0]);

    const pass = setChanges();
    await pass.run();
    expect(pass.stats).toEqual({ passes: 1, handedOver: 2, missed: 0, owedHandedOver: 0, skipped: 0 });
    expect([await headAt(d), await headAt(e)]).toEqual([3, 3]);
    // Their copies are the home's chain, entry for entry; the head's signatures name them now.
    const chain = (await replicator.entries(zid, 1, 10)).map((x) => x.hash);
    for (const n of [d, e]) expect((await custodians.get(n.id)!.entries(zid, 1, 10)).map((x) => x.hash)).toEqual(chain);
    const [head] = await replicator.entries(zid, 3, 1);
    expect(head!.signatures.map((s) => s.node)).toEqual(expect.arrayContaining([d.id, e.id]));
    // The members unchanged: no pass.
    await pass.run();
    expect(pass.stats.passes).toBe(1);

    // The home dies: D, first of the new set, takes the identity over with the promises of D and E.
    expect((await failoverAt(d, () => view)).taken).toBe(1);
    expect(await d.store.get(wallets(d), zid)).toEqual({ free: 4, paid: 0 });
  });

  it('are not looked for in an identity whose set a later change of the members leaves as it was', async () => {
    view = nodes.map((n) => n.id);
    const asked: string[] = [];
    const pass = new SetChanges({
      members: () => view,
      homed: (limit, from) => replicator.homed(limit, false, from),
      isHome: async (z) => {
        asked.push(`isHome ${z}`);
        return true;
      },
      handOver: (z, skip) => {
        asked.push(`handOver ${z}`);
        return replicator.handOver(z, skip);
      },
      sameSetUnder: (z, lists) => replicator.sameSetUnder(z, lists),
    });
    await pass.run();
    expect(asked).toEqual([`isHome ${zid}`, `handOver ${zid}`]);
    // C leaves: it ranks behind the set (the home, D and E), which stays as it was.
    view = view.filter((n) => n !== c.id);
    await pass.run();
    expect(pass.stats).toEqual({ passes: 2, handedOver: 2, missed: 0, owedHandedOver: 0, skipped: 1 });
    expect(asked).toHaveLength(2);
    // D leaves: a custodian of the set, which changes (B takes its place); the identity is read, and its head is signed
    // by the set of now.
    view = view.filter((n) => n !== d.id);
    await pass.run();
    expect(pass.stats).toMatchObject({ passes: 3, skipped: 1 });
    expect(asked).toHaveLength(4);
    const [head] = await replicator.entries(zid, 3, 1);
    expect(head!.signatures.map((s) => s.node)).toEqual(expect.arrayContaining([b.id, e.id]));
  });

  it('are handed the head when a list heard between the passes made another set, though the members are back as they were', async () => {
    const all = nodes.map((n) => n.id);
    view = all;
    const pass = setChanges();
    await pass.run();
    expect([await headAt(d), await headAt(e)]).toEqual([3, 3]);
    // E is unheard for a while: the set is the home, D and B or C, which certify a write E never sees.
    const withoutE = all.filter((n) => n !== e.id);
    view = withoutE;
    pass.heard(withoutE);
    // B and C do not answer, so D's signature is the one that certifies the write and is in the home's log (one that
    // came after the majority's would not be, and the next pass would hand the head to D as well).
    down = new Set([b.id, c.id]);
    await home.store.commit([{ type: 'put', sub: wallets(home), key: zid, value: { free: 2, paid: 0 } }]);
    down = new Set();
    await waitUntil(async () => (await headAt(d)) === 4, 'D holds seq 4', 5_000, 10);
    expect(await headAt(e)).toBe(3);
    // E is heard again before the next run: the members are as at the last pass, yet E is behind the set it is in.
    view = all;
    await pass.run();
    expect(pass.stats).toEqual({ passes: 2, handedOver: 3, missed: 0, owedHandedOver: 0, skipped: 0 });
    expect(await headAt(e)).toBe(4);
    // Settled: the next run makes no pass.
    await pass.run();
    expect(pass.stats.passes).toBe(2);
  });

  it('leave the new set holding nothing without the pass: its failover does not take the identity', async () => {
    view = nodes.map((n) => n.id);
    expect(await failoverAt(d, () => view)).toMatchObject({ attempts: 0, taken: 0 });
    expect(await d.store.get(wallets(d), zid)).toBeUndefined();
  });

  it('leave, when the home died before its own view changed, its holders outside the set: one of them takes it over', async () => {
    // The others' view: all five, the set of now the home, D and E, which hold nothing and do not watch the identity.
    view = nodes.map((n) => n.id);
    expect(await failoverAt(d, () => view)).toMatchObject({ attempts: 0 });
    // B holds the writes and is in no set of now: it goes after the set's live custodians, with their promises (a
    // majority of the set) and its own chain.
    expect(await failoverAt(b, () => view)).toMatchObject({ attempts: 1, taken: 1 });
    expect(await b.store.get(wallets(b), zid)).toEqual({ free: 4, paid: 0 });
    // D and E promised the epoch; the epoch entry is certified once one of them holds it, having caught up from B's
    // chain (the other may still be behind: it catches up at the next entry it is sent).
    for (const n of [d, e]) expect(await custodians.get(n.id)!.promised(zid)).toMatchObject({ epoch: 2, candidate: b.id });
    const holder = (await headAt(d)) === 4 ? d : e;
    expect(await headAt(holder)).toBe(4);
    expect((await custodians.get(holder.id)!.entries(zid, 1, 10)).map((x) => x.entry.seq)).toEqual([1, 2, 3, 4]);
  });

  it('asks a custodian that did not answer again in a later pass', async () => {
    view = nodes.map((n) => n.id);
    down.add(e.id);
    const pass = setChanges();
    await pass.run();
    expect(pass.stats).toEqual({ passes: 1, handedOver: 1, missed: 1, owedHandedOver: 0, skipped: 0 });
    expect([await headAt(d), await headAt(e)]).toEqual([3, 0]);
    down.clear();
    // Not before the retry's runs; then once, and D (which holds the head) is not asked again.
    for (let i = 0; i < 15; i++) await pass.run();
    expect(pass.stats.passes).toBe(1);
    await pass.run();
    expect(pass.stats).toEqual({ passes: 2, handedOver: 2, missed: 1, owedHandedOver: 0, skipped: 0 });
    expect(await headAt(e)).toBe(3);
    await pass.run();
    expect(pass.stats.passes).toBe(2);
  });

  it('counts a custodian whose signature does not verify as one that did not sign, and records none of it', async () => {
    view = nodes.map((n) => n.id);
    lying.add(e.id);
    const pass = setChanges();
    await pass.run();
    expect(pass.stats).toEqual({ passes: 1, handedOver: 1, missed: 1, owedHandedOver: 0, skipped: 0 });
    const [head] = await replicator.entries(zid, 3, 1);
    expect(head!.signatures.map((s) => s.node)).toContain(d.id);
    expect(head!.signatures.map((s) => s.node)).not.toContain(e.id);
  });

  it('after a takeover, hands the epoch entry to a custodian of the new set that did not sign it', async () => {
    view = nodes.map((n) => n.id);
    await setChanges().run();
    // The old home is gone from the members D knows: D's set of the new epoch is D, E and B, and E cannot be reached
    // while D certifies the epoch entry, which D and B hold then.
    const after = [b.id, c.id, d.id, e.id];
    expect([...custodySetOf(zid, d.id, after, 3).custodians].sort()).toEqual([b.id, d.id, e.id].sort());
    // D's own pass of its (still empty) homed identities runs first: the members unchanged, a later run makes none.
    const { newHome, owed } = homeAtD(after);
    await owed.run();
    expect(owed.stats.passes).toBe(1);

    expect(await failoverAt(d, () => after, new Set([e.id]))).toMatchObject({ taken: 1 });
    homeNow = d.id;
    const [epochEntry] = await newHome.entries(zid, 4, 1);
    expect(epochEntry!.entry.kind).toBe('epoch');
    expect(epochEntry!.signatures.map((s) => s.node).sort()).toEqual([b.id]);
    expect(await headAt(e)).toBe(3);

    // Nothing changed in the members: without the debt, a run hands nothing over.
    await owed.run();
    expect(owed.stats).toEqual({ passes: 1, handedOver: 0, missed: 0, owedHandedOver: 0, skipped: 0 });
    expect(await headAt(e)).toBe(3);

    owed.owe(zid);
    await owed.run();
    expect(owed.stats).toEqual({ passes: 1, handedOver: 0, missed: 0, owedHandedOver: 1, skipped: 0 });
    expect(await headAt(e)).toBe(4);
    const [handed] = await newHome.entries(zid, 4, 1);
    expect(handed!.signatures.map((s) => s.node).sort()).toEqual([b.id, e.id].sort());
    expect((await custodians.get(e.id)!.entries(zid, 1, 10)).map((x) => x.hash)).toEqual((await newHome.entries(zid, 1, 10)).map((x) => x.hash));
    // Paid: a later run asks nobody again.
    await owed.run();
    expect(owed.stats.owedHandedOver).toBe(1);
  });

  it('keeps a takeover’s hand-over owed while a custodian of the set does not sign, and asks it again later', async () => {
    view = nodes.map((n) => n.id);
    await setChanges().run();
    const after = [b.id, c.id, d.id, e.id];
    const unreachable = new Set([e.id]);
    const { owed } = homeAtD(after, unreachable);
    await owed.run();
    expect(await failoverAt(d, () => after, new Set([e.id]))).toMatchObject({ taken: 1 });
    homeNow = d.id;

    owed.owe(zid);
    await owed.run();
    expect(owed.stats.owedHandedOver).toBe(0);
    unreachable.clear();
    // Not before the retry's runs.
    for (let i = 0; i < 15; i++) await owed.run();
    expect(await headAt(e)).toBe(3);
    await owed.run();
    expect(owed.stats.owedHandedOver).toBe(1);
    expect(await headAt(e)).toBe(4);
  });

  it('drops a takeover’s hand-over once the identity is homed elsewhere', async () => {
    const asked: string[] = [];
    const owed = new SetChanges({
      members: () => [],
      homed: async () => [],
      isHome: async () => false,
      handOver: async (z) => {
        asked.push(z);
        return { reached: [], missed: [] };
      },
      sameSetUnder: async () => false,
    });
    owed.owe(zid);
    await owed.run();
    await owed.run();
    expect(asked).toEqual([]);
  });

  it('hands over nothing of an identity homed elsewhere now', async () => {
    view = nodes.map((n) => n.id);
    const pass = setChanges(false);
    await pass.run();
    expect(pass.stats).toEqual({ passes: 1, handedOver: 0, missed: 0, owedHandedOver: 0, skipped: 0 });
    expect([await headAt(d), await headAt(e)]).toEqual([0, 0]);
  });
});
