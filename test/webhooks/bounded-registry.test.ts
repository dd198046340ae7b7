// Webhook registrations and publish settings in bounded memory: LevelDB is the
// truth, memory an LRU of the identities seen lately (limits.identityCacheMax). An identity pushed out of both caches
// by many others still gets its computation.complete delivery and its published record entry at its next seal, and
// its settings read back from the store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { startReceiver, until, type Receiver } from './receiver.js';

const CACHE = 4;
let t: TestNode;
let rx: Receiver;
const chain = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestNode(
    { solverThreads: 0, sealWorker: false, webhooks: { allowLoopback: true }, limits: { identityCacheMax: CACHE } },
    { initialCredits: 10_000, webhookManualDispatch: true },
  );
});
afterAll(async () => {
  await t.destroy();
  await rx.close();
});

describe('webhook registry and publish settings, bounded', () => {
  it('an identity evicted from the caches still gets its deliveries, its record entry and its settings', async () => {
    const me = await zkIdentity(t.url, 'bounded-me');
    const hook = await call(t.url, 'POST', '/api/webhooks', { url: rx.url, events: ['computation.complete'] }, bearer(me.key));
    expect(hook.status, hook.text).toBe(201);
    const set = await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(me.key));
    expect(set.status, set.text).toBe(200);

    // Many other identities seal, register and read settings: each passes through both caches.
    for (let i = 0; i < CACHE * 3; i++) {
      const other = await zkIdentity(t.url, `bounded-other-${i}`);
      expect((await call(t.url, 'POST', '/api/svc/compute', chain, bearer(other.key))).status).toBe(200);
      if (i % 3 === 0) expect((await call(t.url, 'POST', '/api/webhooks', { url: rx.url, events: ['batch.complete'] }, bearer(other.key))).status).toBe(201);
      expect((await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(other.key))).body.publish_default).toBe(false);
    }
    const registry = t.node.webhooks.registry;
    expect(registry.cachedOwners).toBeLessThanOrEqual(CACHE);
    expect(t.node.publish.cached).toBeLessThanOrEqual(CACHE);
    expect(registry.inMemory(me.zid)).toBe(false);
    expect(t.node.publish.inMemory(me.zid)).toBe(false);

    // Its next seal still owes its webhook a delivery and is listed in the record (published by its setting).
    const start = rx.received.length;
    const sealed = await call(t.url, 'POST', '/api/svc/compute', chain, bearer(me.key));
    expect(sealed.status, sealed.text).toBe(200);
    await until(() => rx.received.some((r, i) => i >= start && r.json?.computation_id === sealed.body.result_id));
    const record = await call(t.url, 'GET', `/api/tally/record?owner=${me.zid}`, undefined, bearer(me.key));
    expect(record.status, record.text).toBe(200);
    expect(JSON.stringify(record.body)).toContain(sealed.body.result_id);

    // Evicted again, its management reads come from the store.
    for (let i = 0; i < CACHE * 2; i++) {
      const other = await zkIdentity(t.url, `bounded-again-${i}`);
      await call(t.url, 'GET', '/api/webhooks', undefined, bearer(other.key));
      await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(other.key));
    }
    expect(registry.inMemory(me.zid)).toBe(false);
    expect(t.node.publish.inMemory(me.zid)).toBe(false);
    const listed = await call(t.url, 'GET', '/api/webhooks', undefined, bearer(me.key));
    expect(listed.body.webhooks.map((w: { id: string }) => w.id)).toEqual([hook.body.id]);
    const setting = await call(t.url, 'GET', '/api/tally/settings/publish-default', undefined, bearer(me.key));
    expect(setting.body).toMatchObject({ publish_default: true, source: 'set' });
    expect(registry.cachedOwners).toBeLessThanOrEqual(CACHE);
  });

  it('parallel registrations of an owner out of memory still stop at the cap', async () => {
    const me = await zkIdentity(t.url, 'bounded-cap');
    const tries = await Promise.all(
      Array.from({ length: 24 }, () => call(t.url, 'POST', '/api/webhooks', { url: rx.url, events: ['batch.error'] }, bearer(me.key))),
    );
    expect(tries.filter((r) => r.status === 201)).toHaveLength(16);
    expect(tries.filter((r) => r.status === 409)).toHaveLength(8);
    expect((await call(t.url, 'GET', '/api/webhooks', undefined, bearer(me.key))).body.webhooks).toHaveLength(16);
  });
});
