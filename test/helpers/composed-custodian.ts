// A custodian on a node the test composes in-process (its own store and key), every identity homed at `home()`, the
// members every node: for tests that drive the custody protocol's requests by hand (given-up-slot, gapped-chain).
// And a composed node's replicator, and a custodian's failover whose requests go to the composed custodians.
import { join } from 'node:path';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { chainRequest, custodyRequest, promiseRequest, type SendBatch } from '../../src/custody/client.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import { Custodian, type CustodianDeps } from '../../src/custody/custodian.js';
import { DebitCertificates } from '../../src/custody/debit-certificate.js';
import { Failover, type FailoverDeps } from '../../src/custody/failover.js';
import { LedgerOpsReader } from '../../src/custody/ledger-ops.js';
import type { ChainAnswer, CustodyAnswer } from '../../src/custody/protocol.js';
import { replayOps } from '../../src/custody/replica.js';
import { Replicator } from '../../src/custody/replicator.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';

export interface ComposedNode {
  id: string;
  key: PrivateKey;
  store: Store;
}

export function composedCustodian(
  n: ComposedNode,
  o: {
    home: () => string;
    members: () => string[];
    secret: string;
    now: number;
    changesAfter?: CustodianDeps['changesAfter'];
    ownHead?: CustodianDeps['ownHead'];
    takingOver?: CustodianDeps['takingOver'];
    formerHome?: CustodianDeps['formerHome'];
    /** Where it catches up from (absent: it does not). */
    fetch?: CustodianDeps['fetch'];
    /** The latest home change it knows (absent: none). */
    homeChange?: CustodianDeps['homeChange'];
    /** How it checks and applies a change a candidate shows (absent: it does not read them). */
    learnChange?: CustodianDeps['learnChange'];
  },
): Custodian {
  const c: Custodian = new Custodian({
    store: n.store,
    nodeId: () => n.id,
    sign: (text) => signText(n.key, text),
    homeOf: () => Promise.resolve(o.home()),
    debitFault: () => Promise.resolve(null),
    homeChange: o.homeChange ?? (() => Promise.resolve(null)),
    fetch: o.fetch ?? null,
    verify: verifyText,
    custodiansOf: () => Promise.resolve(o.members()),
    chainAt: (z, from) => c.page(z, from),
    meshSecret: o.secret,
    nowSvcond: () => o.now,
    ...(o.changesAfter === undefined ? {} : { changesAfter: o.changesAfter }),
    ...(o.ownHead === undefined ? {} : { ownHead: o.ownHead }),
    ...(o.takingOver === undefined ? {} : { takingOver: o.takingOver }),
    ...(o.formerHome === undefined ? {} : { formerHome: o.formerHome }),
    ...(o.learnChange === undefined ? {} : { learnChange: o.learnChange }),
  });
  return c;
}

/** `count` nodes, each with a fresh Ed25519 key (its peer id) and its own store under `dir`. */
export function composedNodes(dir: string, count: number): Promise<ComposedNode[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
      return { id: peerIdFromPrivateKey(key as never).toString(), key, store: await Store.open(join(dir, `n${i}`), { sync: false }) };
    }),
  );
}

/**
 * Three composed nodes under `dir`, every one a member, and `zid`'s custody set among them homed at the first: the
 * nodes, and the set's nodes in its order (the home, then its custodians).
 */
export async function composedSet(dir: string, zid: string): Promise<{ nodes: ComposedNode[]; inSetOrder: [ComposedNode, ComposedNode, ComposedNode] }> {
  const nodes = await composedNodes(dir, 3);
  const set = custodySetOf(
    zid,
    nodes[0]!.id,
    nodes.map((n) => n.id),
    3,
  );
  const inSetOrder = set.custodians.map((id) => nodes.find((n) => n.id === id)!) as [ComposedNode, ComposedNode, ComposedNode];
  return { nodes, inSetOrder };
}

/**
 * A composed node's replicator: a home's, sending with `send`; with `send` null, one that keeps a log (a new home's).
 * `store`: what it writes its own records to (a wrapper of the node's store that fails some), the node's by default.
 */
export function composedReplicator(n: ComposedNode, members: () => string[], send: SendBatch | null, store: Store = n.store): Replicator {
  return new Replicator({
    store,
    reader: new LedgerOpsReader(n.store),
    nodeId: () => n.id,
    replicas: 3,
    members,
    send,
    verify: verifyText,
    sign: (text) => signText(n.key, text),
    certificates: new DebitCertificates(n.store),
    timeoutMs: 5000,
  });
}

/**
 * Custodian `x`'s failover of identities homed at `home`, which is down (every request to it fails); its requests to the
 * others go to their composed custodians, and what it takes is written to its store (the chain replayed, its log).
 */
export function composedFailover(
  x: ComposedNode,
  o: {
    home: ComposedNode;
    members: () => string[];
    custodians: ReadonlyMap<string, Custodian>;
    secret: string;
    now: number;
    clock: () => number;
    failoverTicks: number;
    replaceTicks: number;
    lastHeard: FailoverDeps['lastHeard'];
    probe?: FailoverDeps['probe'];
    watchPerRun?: number;
  },
): Failover {
  const log = composedReplicator(x, o.members, null);
  const reach = (node: string): Custodian => {
    if (node === o.home.id) throw new Error('the home is down');
    return o.custodians.get(node)!;
  };
  return new Failover({
    nodeId: () => x.id,
    replicas: 3,
    failoverTicks: o.failoverTicks,
    replaceTicks: o.replaceTicks,
    members: o.members,
    nowSvcond: o.clock,
    lastHeard: o.lastHeard,
    tickEvery: () => 1,
    store: x.store,
    custodian: o.custodians.get(x.id)!,
    homeOf: () => Promise.resolve(o.home.id),
    homeChanges: { latest: () => Promise.resolve(null), configAt: () => Promise.resolve(null) },
    askPromise: async (node, z, epoch) => reach(node).answerPromise(promiseRequest(o.secret, x.id, o.now, z, epoch), x.id),
    send: async (node, entries, records, _signal, certificates) =>
      (await reach(node).answer(custodyRequest(o.secret, x.id, o.now, entries, records, certificates), x.id)) as CustodyAnswer,
    fetch: async (node, z, from) => (await reach(node).answer(chainRequest(o.secret, x.id, o.now, z, from), x.id)) as ChainAnswer,
    verify: verifyText,
    adopt: async (_change, chain, epochEntry) => {
      await x.store.commit([...replayOps(x.store, chain.entries), ...log.adoptOps(chain.entries, epochEntry)]);
    },
    homeLog: () => Promise.resolve(null),
    sign: (text) => signText(x.key, text),
    publish: () => Promise.resolve(),
    ...(o.probe === undefined ? {} : { probe: o.probe }),
    ...(o.watchPerRun === undefined ? {} : { watchPerRun: o.watchPerRun }),
    timeoutMs: 5000,
  });
}

/**
 * Custodian `x`'s failover of a home last heard at tick `homeHeard` and every other node heard at the clock's tick, each
 * ticking every tick (failoverTicks 8, no replacement of custodians gone).
 */
export function silentHomeFailover(
  x: ComposedNode,
  o: Pick<Parameters<typeof composedFailover>[1], 'home' | 'members' | 'custodians' | 'secret' | 'now' | 'watchPerRun'> & {
    clock: { now: number };
    homeHeard: number;
  },
): Failover {
  const { clock, homeHeard, ...rest } = o;
  return composedFailover(x, {
    ...rest,
    clock: () => clock.now,
    failoverTicks: 8,
    replaceTicks: 100_000,
    lastHeard: (node) => ({ tick: node === o.home.id ? homeHeard : clock.now, every: 1 }),
  });
}
