// A failover sooner than the count of a home's intervals (failover.ts, home-probes.ts): a home that ticks every 50
// ticks (a large mesh's interval) dies after two certified writes. Its first custodian X waits for its tick event to be
// overdue, probes it, and takes the identity over once it has answered no probe for failoverTicks ticks: 61 ticks after
// it was last heard, where counting 8 of its intervals waits 400. A home that answers its probes is not taken over
// before its intervals are counted. Composed in-process: the home's replicator and the custodians X and Y, each on its
// own store, X's failover asking Y for its promise; the probe is composed in the test.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { custodyRequest, type SendBatch } from '../../src/custody/client.js';
import type { Custodian } from '../../src/custody/custodian.js';
import type { Failover } from '../../src/custody/failover.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';
import { composedCustodian, composedSet, composedFailover, composedReplicator, type ComposedNode } from '../helpers/composed-custodian.js';
import { waitUntil } from '../helpers/wait.js';

const SECRET = 'failover-probe-secret-0123456789abcdef';
const zid = 'zid_fedcba9876543210fedcba9876543210';
const NOW = 1000;
const HOME_LAST_HEARD = 100;
const HOME_EVERY = 50;
const FAILOVER_TICKS = 8;

let dir: string;
let nodes: ComposedNode[];
let home: ComposedNode;
let x: ComposedNode;
let y: ComposedNode;
let custodians: Map<string, Custodian>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-failover-probe-'));
  ({
    nodes,
    inSetOrder: [home, x, y],
  } = await composedSet(dir, zid));
  const members = () => nodes.map((n) => n.id);
  custodians = new Map([x, y].map((n) => [n.id, composedCustodian(n, { home: () => home.id, members, secret: SECRET, now: NOW })]));
  // The home certifies two writes of the identity's wallet with X and Y.
  const send: SendBatch = async (node, entries, records, _signal, certificates) =>
    (await custodians.get(node)!.answer(custodyRequest(SECRET, home.id, NOW, entries, records, certificates), home.id)) as CustodyAnswer;
  home.store.gate = composedReplicator(home, members, send);
  for (const free of [10, 4])
    await home.store.commit([{ type: 'put', sub: home.store.sub('wallets', 'json', { rewritten: true }), key: zid, value: { free, paid: 0 } }]);
  // A write is acknowledged once one custodian holds it: the other's answer may still be on its way.
  for (const custodian of custodians.values()) await waitUntil(async () => (await custodian.head(zid))?.seq === 2, 'both custodians hold seq 2', 5_000, 10);
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

/** X's failover, the home down (every request to it fails) and last heard at HOME_LAST_HEARD; Y live. */
function failoverAtX(clock: { now: number }, probe: (node: string) => Promise<boolean>, probed: string[]): Failover {
  return composedFailover(x, {
    home,
    members: () => nodes.map((n) => n.id),
    custodians,
    secret: SECRET,
    now: NOW,
    clock: () => clock.now,
    failoverTicks: FAILOVER_TICKS,
    replaceTicks: 100_000,
    lastHeard: (node) => (node === home.id ? { tick: HOME_LAST_HEARD, every: HOME_EVERY } : node === y.id ? { tick: clock.now, every: HOME_EVERY } : null),
    probe: (node) => {
      probed.push(node);
      return probe(node);
    },
  });
}

/** One failover run at tick `now`, then the probe it started settles. */
async function runAt(failover: Failover, clock: { now: number }, now: number): Promise<void> {
  clock.now = now;
  await failover.run();
  await new Promise((r) => setImmediate(r));
}

describe('a failover by probing a home whose tick event is overdue', () => {
  it('takes a dead home over failoverTicks ticks after its first failed probe, long before 8 of its intervals', async () => {
    const clock = { now: HOME_LAST_HEARD };
    const probed: string[] = [];
    const failover = failoverAtX(clock, async () => false, probed);
    // Silent for its interval and the slack: alive as far as anyone can tell, and not probed.
    await runAt(failover, clock, HOME_LAST_HEARD + HOME_EVERY + 2);
    expect(probed).toEqual([]);
    // Overdue: probed; no answer from here on.
    await runAt(failover, clock, HOME_LAST_HEARD + HOME_EVERY + 3);
    expect(probed).toEqual([home.id]);
    await runAt(failover, clock, HOME_LAST_HEARD + HOME_EVERY + 3 + FAILOVER_TICKS - 1);
    expect(failover.stats.taken).toBe(0);
    await runAt(failover, clock, HOME_LAST_HEARD + HOME_EVERY + 3 + FAILOVER_TICKS);
    expect(failover.stats.taken).toBe(1);
    expect(HOME_EVERY + 3 + FAILOVER_TICKS).toBeLessThan(FAILOVER_TICKS * HOME_EVERY);
    // X holds the identity's wallet as the home certified it last.
    expect(await x.store.get(x.store.sub('wallets', 'json', { rewritten: true }), zid)).toEqual({ free: 4, paid: 0 });
    // One probe a run while overdue, every one failed.
    expect(failover.probes!.stats).toEqual({ probes: probed.length, failed: probed.length });
  });

  it('does not take a home over that answers its probes, until 8 of its intervals have passed unheard', async () => {
    const clock = { now: HOME_LAST_HEARD };
    const probed: string[] = [];
    const failover = failoverAtX(clock, async () => true, probed);
    for (let now = HOME_LAST_HEARD + HOME_EVERY + 3; now < HOME_LAST_HEARD + FAILOVER_TICKS * HOME_EVERY; now += 7) await runAt(failover, clock, now);
    expect(probed.length).toBeGreaterThan(10);
    expect(failover.stats.taken).toBe(0);
    // Answering a ping is not a tick event: silent for 8 of its intervals, it is taken over all the same.
    await runAt(failover, clock, HOME_LAST_HEARD + FAILOVER_TICKS * HOME_EVERY);
    expect(failover.stats.taken).toBe(1);
  });
});
