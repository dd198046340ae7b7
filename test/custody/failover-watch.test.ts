// A custodian's failover looks at a bounded page of the identities it holds a run (failover.ts watchPerRun): the next
// run goes on from where the last one stopped, so every identity held is watched in turn, however many there are. A
// composed home certifies a write of each of three identities with custodians X and Y, then dies; X's failover, one
// identity a run, takes all three over in three runs (reading from the first each run, it would take only the first).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { custodyRequest, type SendBatch } from '../../src/custody/client.js';
import type { Custodian } from '../../src/custody/custodian.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';
import { composedCustodian, composedNodes, composedReplicator, silentHomeFailover, type ComposedNode } from '../helpers/composed-custodian.js';
import { waitUntil } from '../helpers/wait.js';

const SECRET = 'failover-watch-secret-0123456789abcdef';
const NOW = 1000;
const zids = ['zid_00000000000000000000000000000001', 'zid_00000000000000000000000000000002', 'zid_00000000000000000000000000000003'];

let dir: string;
let nodes: ComposedNode[];
let home: ComposedNode, x: ComposedNode, y: ComposedNode;
let custodians: Map<string, Custodian>;

const wallets = (n: ComposedNode) => n.store.sub('wallets', 'json', { rewritten: true });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-failover-watch-'));
  nodes = await composedNodes(dir, 3);
  [home, x, y] = nodes as [ComposedNode, ComposedNode, ComposedNode];
  const members = () => nodes.map((n) => n.id);
  custodians = new Map([x, y].map((n) => [n.id, composedCustodian(n, { home: () => home.id, members, secret: SECRET, now: NOW })]));
  const send: SendBatch = async (node, entries, records, _signal, certificates) =>
    (await custodians.get(node)!.answer(custodyRequest(SECRET, home.id, NOW, entries, records, certificates), home.id)) as CustodyAnswer;
  home.store.gate = composedReplicator(home, members, send);
  for (const [i, zid] of zids.entries()) await home.store.commit([{ type: 'put', sub: wallets(home), key: zid, value: { free: 10 + i, paid: 0 } }]);
  for (const c of custodians.values()) for (const zid of zids) await waitUntil(async () => (await c.head(zid))?.seq === 1, `${zid} held`, 5_000, 10);
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('a failover that looks at one identity a run', () => {
  it('goes on from the last identity it looked at, and takes every one over in turn', async () => {
    const clock = { now: 100 };
    const failover = silentHomeFailover(x, {
      home,
      members: () => nodes.map((n) => n.id),
      custodians,
      secret: SECRET,
      now: NOW,
      clock,
      homeHeard: 100,
      watchPerRun: 1,
    });
    // Long past every rank's wait: each identity is taken at the first run that looks at it.
    clock.now = 400;
    const taken: number[] = [];
    for (let run = 0; run < 3; run++) {
      await failover.run();
      taken.push(failover.stats.taken);
    }
    expect(taken).toEqual([1, 2, 3]);
    // Each identity's chain is X's now, its wallet as the home certified it.
    for (const [i, zid] of zids.entries()) expect(await x.store.get(wallets(x), zid)).toEqual({ free: 10 + i, paid: 0 });
  });
});
