// The webhook registry over the store: records stored before the owner index get indexed at load; a
// read of an owner that a write of the same owner overtakes is read again, so no list misses an acknowledged write.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { WebhookRegistry, webhookView, type WebhookRecord } from '../../src/webhooks/registry.js';

const KEY = Buffer.alloc(32, 7);
const POLICY = { allowLoopback: true, allowHosts: [] };
let dir: string;
let store: Store;

async function openStore(): Promise<Store> {
  dir = await mkdtemp(join(tmpdir(), 'svc-wh-'));
  store = await Store.open(dir, { sync: false });
  return store;
}
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('WebhookRegistry', () => {
  it('indexes by owner the records stored before the index existed, once', async () => {
    await openStore();
    const old = (id: string, owner: string): WebhookRecord =>
      ({
        id,
        owner,
        url: 'http://127.0.0.1:9/x',
        events: ['computation.complete'],
        headers: {},
        metadata: {},
        status: 'enabled',
        last_delivery_at: null,
        failure_count: 0,
        secret: { iv: '', tag: '', data: '' },
        created_at: `2026-01-01T00:00:0${id.slice(-1)}.000Z`,
      }) as unknown as WebhookRecord;
    const sub = store.sub('webhooks');
    await store.commit([
      { type: 'put', sub, key: 'wh_1', value: old('wh_1', 'zid_a') },
      { type: 'put', sub, key: 'wh_2', value: old('wh_2', 'zid_b') },
      { type: 'put', sub, key: 'wh_3', value: old('wh_3', 'zid_a') },
    ]);
    const r = new WebhookRegistry(store, KEY, POLICY, () => Date.now(), 1);
    await r.load();
    expect((await r.list('zid_a')).map((w) => w.id)).toEqual(['wh_1', 'wh_3']);
    expect((await r.list('zid_b')).map((w) => w.id)).toEqual(['wh_2']);
    expect(await r.subscribers('zid_a', 'computation.complete')).toHaveLength(2);
    expect(r.cachedOwners).toBe(1);
    // A second start finds the index built.
    const again = new WebhookRegistry(store, KEY, POLICY, () => Date.now(), 1);
    await again.load();
    expect((await again.list('zid_a')).map((w) => w.id)).toEqual(['wh_1', 'wh_3']);
  });

  it('stores custom header values sealed, and seals those an earlier version stored in clear, once', async () => {
    await openStore();
    const sub = store.sub('webhooks');
    const raw = async (id: string) => JSON.stringify(await store.get(sub, id));
    const legacy = {
      id: 'wh_old',
      owner: 'zid_a',
      url: 'http://127.0.0.1:9/x',
      events: ['computation.complete'],
      headers: { Authorization: 'Bearer receiver-token-1' },
      metadata: {},
      status: 'enabled',
      last_delivery_at: null,
      failure_count: 0,
      secret: { iv: '', tag: '', ct: '' },
      created_at: '2026-01-01T00:00:00.000Z',
    };
    await store.commit([{ type: 'put', sub, key: 'wh_old', value: legacy }]);
    const r = new WebhookRegistry(store, KEY, POLICY, () => Date.now());
    await r.load();
    expect(await raw('wh_old')).not.toContain('receiver-token-1');
    const [old] = await r.list('zid_a');
    expect(r.headersOf(old!)).toEqual({ Authorization: 'Bearer receiver-token-1' });
    expect(webhookView(old!).headers).toEqual({ Authorization: '********' });

    const made = await r.register('zid_a', { url: 'http://127.0.0.1:9/y', events: ['computation.complete'], headers: { 'X-Token': 'receiver-token-2' } });
    expect(await raw(made.webhook.id)).not.toContain('receiver-token-2');
    expect(r.headersOf(made.webhook)).toEqual({ 'X-Token': 'receiver-token-2' });
    const patched = await r.update('zid_a', made.webhook.id, { headers: { 'X-Other': 'receiver-token-3' } });
    expect(await raw(made.webhook.id)).not.toContain('receiver-token-3');
    expect(r.headersOf(patched)).toEqual({ 'X-Other': 'receiver-token-3' });
    // Another node key cannot open them (AES-GCM's tag).
    expect(() => new WebhookRegistry(store, Buffer.alloc(32, 8), POLICY, () => Date.now()).headersOf(patched)).toThrow();
  });

  it('changes of one webhook at once each keep the others, and a change racing a delete does not write it back', async () => {
    await openStore();
    const r = new WebhookRegistry(store, KEY, POLICY, () => Date.now());
    await r.load();
    const { webhook } = await r.register('zid_r', { url: 'http://127.0.0.1:9/a', events: ['computation.complete'] });
    await Promise.all([
      r.update('zid_r', webhook.id, { metadata: { team: 'blue' } }),
      r.update('zid_r', webhook.id, { headers: { 'X-Team': 'blue' } }),
      r.update('zid_r', webhook.id, { url: 'http://127.0.0.1:9/b' }),
      r.recordAttempt(webhook.id, false, Date.now(), false),
    ]);
    const stored = (await r.get(webhook.id))!;
    expect(stored).toMatchObject({ url: 'http://127.0.0.1:9/b', metadata: { team: 'blue' }, failure_count: 1 });
    expect(r.headersOf(stored)).toEqual({ 'X-Team': 'blue' });

    const [patched, removed] = await Promise.allSettled([r.update('zid_r', webhook.id, { metadata: { late: true } }), r.remove('zid_r', webhook.id)]);
    expect(patched.status).toBe('fulfilled');
    expect(removed.status).toBe('fulfilled');
    // A delivery's attempt after the delete writes nothing either.
    await r.recordAttempt(webhook.id, false, Date.now(), false);
    expect(await r.get(webhook.id)).toBeUndefined();
    expect(await r.list('zid_r')).toEqual([]);
  });

  it('a read overtaken by a registration of the same owner is read again', async () => {
    await openStore();
    const r = new WebhookRegistry(store, KEY, POLICY, () => Date.now(), 1);
    await r.load();
    // Hold the first read of the owner index until a registration has been written.
    const range = store.range.bind(store);
    let gate: () => void = () => undefined;
    let hold: Promise<void> | null = new Promise<void>((res) => (gate = res));
    // The first call is held, whichever read completes first (under load the registration's may).
    store.range = (async (...args: Parameters<Store['range']>) => {
      const h = hold;
      hold = null;
      const out = await range(...args);
      if (h) await h;
      return out;
    }) as Store['range'];
    const reading = r.subscribers('zid_c', 'computation.complete');
    expect(reading).toBeInstanceOf(Promise);
    // The registration reads the owner too (it waits behind nothing: the held read is the first one only).
    const registered = await r.register('zid_c', { url: 'http://127.0.0.1:9/y', events: ['computation.complete'] });
    // Another owner pushes zid_c out of memory (bound 1): the held read cannot take memory's newer word.
    await r.list('zid_other');
    expect(r.inMemory('zid_c')).toBe(false);
    gate();
    const hooks = await reading;
    expect(hooks.map((w) => w.id)).toEqual([registered.webhook.id]);
    expect((await r.list('zid_c')).map((w) => w.id)).toEqual([registered.webhook.id]);
  });
});
