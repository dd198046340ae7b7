// A home cut off from its custodians (docs/protocol.md §19 "Failover", docs/decisions.md "Custody"): five node
// processes on 127.0.0.1, every operator bonded so an identity's custody set is three. The identity's home, node 0,
// is partitioned from every other node (a connection gater composed in the test: test/helpers/fault-node.mjs). On its
// side, alone, it cannot acknowledge a write: 503 with the reason, nothing written. On the majority's side a custodian
// takes the identity over and spends for it. Healed, node 0 names the new home and reads its ledger, every node
// holds one entry per slot, and the balance is the one before less the majority's acknowledged spends only.
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

let cluster: FaultCluster | null = null;
afterAll(async () => {
  await cluster?.destroy();
});

const total = (b: { free: number; paid: number }) => b.free + b.paid;

describe('a home partitioned from its custodians', () => {
  it('acknowledges nothing on its side; the majority takes the identity over; healed, nothing was spent twice', async () => {
    cluster = await startBondedCluster('partition');
    const c = cluster;
    const nodes = c.specs.map((s) => ({ url: c.url(s.index), dataDir: s.dataDir }));
    const probe = await call(c.url(0), 'POST', '/api/svc-auth/register-v3', { equation_sha256: createHash('sha256').update('partition probe').digest('hex') });
    expect(probe.status, probe.text).toBe(201);
    await waitUntil(async () => (await custodyAt(c.url(0), probe.body.zid))?.custodians.length === 3, 'custody sets of three at node 0', 60_000, 250);

    const equation = createHash('sha256').update('partitioned identity').digest('hex');
    const reg = await call(c.url(0), 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation });
    expect(reg.status, reg.text).toBe(201);
    const zid = reg.body.zid as string;
    const key = await identityKey(c.url(0), equation);
    await grant(nodes[0]!, zid, 40);
    for (let i = 0; i < 3; i++) {
      const r = await call(c.url(0), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
      expect(r.status, r.text).toBe(200);
    }
    const before = await call(c.url(0), 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(before.status).toBe(200);
    const custodians = (await custodyAt(c.url(0), zid))!.custodians.slice(1).map((id) => c.nodeIds.indexOf(id));
    expect(custodians).toHaveLength(2);
    await waitUntil(
      async () => (await Promise.all([1, 2, 3, 4].map((i) => custodyAt(c.url(i), zid)))).every((s) => s !== null),
      'the identity known everywhere',
      30_000,
      250,
    );

    await c.partition([[0], [1, 2, 3, 4]]);
    // Node 0, alone: a write waits for custodians it cannot reach and is refused whole (503, why, nothing written).
    const cutOff = await call(c.url(0), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
    expect(cutOff.status, cutOff.text).toBe(503);
    expect(cutOff.body.error.code).toBe('SVC_CUSTODY_UNAVAILABLE');
    expect(cutOff.body.error.message.length).toBeGreaterThan(0);
    expect(cutOff.headers.get('retry-after')).not.toBeNull();
    expect((await call(c.url(0), 'GET', '/api/tally/balance', undefined, bearer(key))).body).toEqual(before.body);

    // The majority's side: a custodian takes it over, and a spend sent to any node there is acknowledged.
    const moved = await waitUntil(
      async () => {
        for (const i of custodians) {
          const s = await custodyAt(c.url(i), zid);
          if (s !== null && s.home === c.nodeIds[i]) return i;
        }
        return null;
      },
      'a custodian serving the identity as its home',
      20_000,
      200,
    );
    // Right after the takeover the new set may still be catching up (503, nothing written: a client retries).
    const spent = await waitUntil(
      async () => {
        const r = await call(c.url(moved), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
        if (r.status === 503) return null;
        return r;
      },
      'a spend acknowledged at the new home',
      30_000,
      500,
    );
    expect(spent.status, spent.text).toBe(200);
    // Node 0 still cannot acknowledge anything while it is cut off: fenced at the custodians it cannot reach anyway.
    const stillCut = await call(c.url(0), 'POST', '/api/svc/compute', SPEND_BODY, bearer(key));
    expect(stillCut.status, stillCut.text).toBe(503);

    await c.heal();
    await waitUntil(async () => (await custodyAt(c.url(0), zid))?.home === c.nodeIds[moved], 'node 0 naming the new home', 30_000, 200);
    const expected = total(before.body) - spent.body.tally_charge.cost;
    for (const i of [0, 1, 2, 3, 4]) {
      const b = await call(c.url(i), 'GET', '/api/tally/balance', undefined, bearer(key));
      expect(b.status, b.text).toBe(200);
      expect(total(b.body)).toBe(expected);
    }
    const entries = await custodyEntries(c, [{ zid, key, slug: '', home: 0 }]);
    expect(oneCertifiedEntryPerSlot(entries)).toMatchObject({ ok: true });
    expect(Math.max(...entries.map((e) => e.epoch))).toBe(2);
  }, 180_000);
});
