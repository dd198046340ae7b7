// A custodian keeps, with each entry it signs as proposed, the node that proposed it: the identity's home of that
// entry's epoch (custodian.ts configInEpoch). A new home whose changes never named an epoch of a pending debit, and a
// receiver checking that debit's certificate, read it there. Composed in-process: the home's replicator and its two
// custodians, each on its own store.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { custodyRequest, type SendBatch } from '../../src/custody/client.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import { slotKey, type Custodian } from '../../src/custody/custodian.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';
import { composedCustodian, composedNodes, composedReplicator, type ComposedNode } from '../helpers/composed-custodian.js';
import { waitFor } from '../mesh/helpers.js';

const SECRET = 'held-home-secret-0123456789abcdef';
const zid = 'zid_0123456789abcdef0123456789abcdef';
const NOW = 1000;

let dir: string;
let nodes: ComposedNode[];
let home: ComposedNode;
let custodians: Map<string, Custodian>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-held-home-'));
  nodes = await composedNodes(dir, 3);
  const members = () => nodes.map((n) => n.id);
  const set = custodySetOf(zid, nodes[0]!.id, members(), 3);
  home = nodes.find((n) => n.id === set.home)!;
  custodians = new Map(
    set.custodians.slice(1).map((id) => [
      id,
      composedCustodian(
        nodes.find((n) => n.id === id)!,
        { home: () => home.id, members, secret: SECRET, now: NOW },
      ),
    ]),
  );
  const send: SendBatch = async (node, entries, records, _signal, certificates) =>
    (await custodians.get(node)!.answer(custodyRequest(SECRET, home.id, NOW, entries, records, certificates), home.id)) as CustodyAnswer;
  home.store.gate = composedReplicator(home, members, send);
  const wallets = home.store.sub('wallets', 'json', { rewritten: true });
  for (const free of [10, 7]) await home.store.commit([{ type: 'put', sub: wallets, key: zid, value: { free, paid: 0 } }]);
  // A write is acknowledged once one custodian holds it: the other's answer may still be on its way.
  for (const custodian of custodians.values()) await waitFor(async () => (await custodian.head(zid))?.seq === 2, 5_000, 'both custodians hold seq 2');
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('the home of an epoch, as a custodian that signed its entries saw it', () => {
  it('is the node that proposed the entries of that epoch; none for an epoch it signed nothing of', async () => {
    for (const custodian of custodians.values()) {
      expect((await custodian.entries(zid, 1, 10)).map((h) => [h.entry.epoch, h.entry.seq, h.home])).toEqual([
        [1, 1, home.id],
        [1, 2, home.id],
      ]);
      expect((await custodian.configInEpoch(zid, 1))?.home ?? null).toBe(home.id);
      expect((await custodian.configInEpoch(zid, 2))?.home ?? null).toBeNull();
      expect((await custodian.configInEpoch('zid_ffffffffffffffffffffffffffffffff', 1))?.home ?? null).toBeNull();
    }
  });

  it('is found past entries kept by catching up, which name none', async () => {
    const [custodian] = [...custodians.values()] as [Custodian];
    const node = nodes.find((n) => n !== home && custodians.get(n.id) === custodian)!;
    const { home: _proposer, ...caughtUp } = (await custodian.entries(zid, 1, 1))[0]!;
    // Epoch 2 as a custodian that caught up on seqs 1–11 (no proposer kept) and then signed seq 12 as proposed.
    const ops = Array.from({ length: 12 }, (_, i) => {
      const entry = { ...caughtUp.entry, epoch: 2, seq: i + 1 };
      const value = i === 11 ? { ...caughtUp, entry, home: 'the-home-of-epoch-2' } : { ...caughtUp, entry };
      return { type: 'put' as const, sub: node.store.sub('custody_held'), key: slotKey(entry), value };
    });
    await node.store.commitAside(ops);
    expect((await custodian.configInEpoch(zid, 2))?.home ?? null).toBe('the-home-of-epoch-2');
  });
});
