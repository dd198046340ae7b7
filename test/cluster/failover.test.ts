// Fenced failover (docs/protocol.md §19 "Failover"): five node processes on 127.0.0.1, every operator bonded so an
// identity's custody set is three. An identity homed on node 0 spends; node 0 is SIGKILLed; one of its custodians
// takes it over with the promises of a majority, serves its balance, envelopes and chain with every acknowledged
// write, and certifies a spend in the new epoch; node 0 restarts on its data, its write for the old epoch is refused
// (or forwarded, once it has learnt), it learns the new home, and no node holds two entries for one slot.
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { identityKey } from '../../scripts/bench/lib.js';
import type { FaultCluster } from '../helpers/fault/cluster.js';
import { custodyAt, startBondedCluster } from '../helpers/failover.js';
import { oneCertifiedEntryPerSlot } from '../helpers/fault/checker.js';
import { custodyEntries } from '../helpers/fault/final-state.js';
import { SPEND_BODY } from '../helpers/fault/workload.js';
import { grant } from '../helpers/custody.js';
import { bearer, call } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const SPENDS = 4;
let cluster: FaultCluster | null = null;
afterAll(async () => {
  await cluster?.destroy();
});

describe('failover of an identity whose home is killed', () => {
  it('another custodian serves it with every acknowledged write and spends in a new epoch; the old home comes back fenced and does not fork', async () => {
    cluster = await startBondedCluster('failover');
    const c = cluster;
    const nodes = c.specs.map((s) => ({ url: c.url(s.index), dataDir: s.dataDir }));
    // Sets of three once every bond is advertised in tick events (read at node 0, for a probe identity of its own).
    const probe = await call(c.url(0), 'POST', '/api/svc-auth/register-v3', { equation_sha256: createHash('sha256').update('failover probe').digest('hex') });
    expect(probe.status, probe.text).toBe(201);
    await waitUntil(async () => (await custodyAt(c.url(0), probe.body.zid))?.custodians.length === 3, 'custody sets of three at node 0', 60_000, 250);

    // The identity, homed on node 0, funded and spending there: each write acknowledged, so certified.
    const equation = createHash('sha256').update('failover identity').digest('hex');
    const reg = await call(c.url(0), 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation });
    expect(reg.status, reg.text).toBe(201);
    const zid = reg.body.zid as string;
    const key = await identityKey(c.url(0), equation);
    await grant(nodes[0]!, zid, 40);
    const sealed: { token: string; seq: number }[] = [];
    for (let i = 0; i < SPENDS; i++) {
      const r = await call(c.url(0), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
      expect(r.status, r.text).toBe(200);
      sealed.push({ token: r.body.envelope.token_id, seq: r.body.audit.seq });
    }
    const before = await call(c.url(0), 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(before.status).toBe(200);
    const set = (await custodyAt(c.url(0), zid))!;
    expect(set.custodians.length).toBe(3);
    expect(set.custodians[0]).toBe(c.nodeIds[0]);
    const custodians = set.custodians.slice(1).map((id) => c.nodeIds.indexOf(id));
    // Every node knows the identity (its assertion) before the home goes.
    await waitUntil(
      async () => (await Promise.all([1, 2, 3, 4].map((i) => custodyAt(c.url(i), zid)))).every((s) => s !== null),
      'the identity known everywhere',
      30_000,
      250,
    );

    await c.kill(0);
    // A custodian takes it over: the waits are on state, bounded by the 20 s.
    const moved = await waitUntil(
      async () => {
        for (const i of custodians) {
          const s = await custodyAt(c.url(i), zid);
          if (s !== null && s.home !== c.nodeIds[0] && s.home === c.nodeIds[i]) return { index: i, status: s };
        }
        return null;
      },
      'a custodian serving the identity as its home',
      20_000,
      200,
    );
    const home = moved.index;
    expect(moved.status).toMatchObject({ epoch: 2, finality: 'certified' });
    expect(moved.status.certified_seq).toBeGreaterThan(SPENDS);

    // The new home serves the ledger as it stood: balance, every envelope sealed, the chain continued.
    const balance = await call(c.url(home), 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(balance.status, balance.text).toBe(200);
    expect(balance.body).toEqual(before.body);
    const envelopes = await call(c.url(home), 'GET', `/api/tally/envelopes/${zid}?limit=100`, undefined, bearer(key));
    expect(envelopes.status, envelopes.text).toBe(200);
    const held = new Set((envelopes.body.items as { token_id: string }[]).map((e) => e.token_id));
    for (const s of sealed) expect(held.has(s.token)).toBe(true);
    // A spend there is certified in the new epoch, its audit row next on the identity's chain.
    const spent = await call(c.url(home), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
    expect(spent.status, spent.text).toBe(200);
    expect(spent.headers.get('x-svc-served-by') ?? c.nodeIds[home]).toBe(c.nodeIds[home]);
    expect(spent.body.audit.seq).toBe(sealed.at(-1)!.seq + 1);
    const after = (await custodyAt(c.url(home), zid))!;
    expect(after.epoch).toBe(2);
    expect(after.certified_seq).toBe(moved.status.certified_seq + 1);
    // Any other live node forwards the identity's requests to the new home.
    const other = [1, 2, 3, 4].find((i) => i !== home)!;
    await waitUntil(async () => (await custodyAt(c.url(other), zid))?.home === c.nodeIds[home], 'the home change heard by another node', 15_000, 200);
    expect((await custodyAt(c.url(other), zid))?.epoch).toBe(2);
    const forwarded = await call(c.url(other), 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(forwarded.status, forwarded.text).toBe(200);
    expect(forwarded.headers.get('x-svc-served-by')).toBe(c.nodeIds[home]);
    expect(forwarded.body.free + forwarded.body.paid).toBe(before.body.free + before.body.paid - spent.body.tally_charge.cost);

    // Node 0 comes back on its data: a write there is either refused as fenced (nothing written) or, once it has
    // learnt the change, forwarded to the new home; it ends up naming the new home and reading from it.
    await c.startNode(0);
    const write = await call(c.url(0), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
    if (write.status === 503) {
      expect(write.body.error.code).toBe('SVC_CUSTODY_UNAVAILABLE');
      expect(JSON.stringify(write.body.error.refusals)).toMatch(/fenced/);
    } else {
      expect(write.status, write.text).toBe(200);
      expect(write.headers.get('x-svc-served-by')).toBe(c.nodeIds[home]);
    }
    await waitUntil(async () => (await custodyAt(c.url(0), zid))?.home === c.nodeIds[home], 'node 0 naming the new home', 20_000, 200);
    expect((await custodyAt(c.url(0), zid))?.epoch).toBe(2);
    const atOld = await call(c.url(0), 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(atOld.status, atOld.text).toBe(200);
    expect(atOld.headers.get('x-svc-served-by')).toBe(c.nodeIds[home]);
    const atNew = await call(c.url(home), 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(atOld.body).toEqual(atNew.body);

    // No fork: every node's custody entries hold one entry per (zid, epoch, seq), and epoch 1 ends where epoch 2 opens.
    const entries = await custodyEntries(c, [{ zid, key, slug: '', home: 0 }]);
    expect(oneCertifiedEntryPerSlot(entries)).toMatchObject({ ok: true });
    expect(entries.some((e) => e.epoch === 2)).toBe(true);
    const lastOfEpoch1 = Math.max(...entries.filter((e) => e.epoch === 1).map((e) => e.seq));
    const firstOfEpoch2 = Math.min(...entries.filter((e) => e.epoch === 2).map((e) => e.seq));
    expect(firstOfEpoch2).toBe(lastOfEpoch1 + 1);
  }, 180_000);
});
