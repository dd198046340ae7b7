import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { BatchService, BATCHES_OPEN_PER_IDENTITY } from '../../src/compute/batches.js';
import type { ComputeService } from '../../src/compute/service.js';
import { ManualClock } from '../../src/kernel/clock.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { Store } from '../../src/store/db.js';

let t: TestNode;
let owner: { zid: string; key: string };
beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 10_000 });
  owner = await zkIdentity(t.url, 'batch-owner');
});
afterAll(() => t.destroy());

const chain = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
/** 50 items: every 5th has a bad input, every 7th names no solver, the rest seal (chains cost 1, lorenz runs 10). */
function items50(): unknown[] {
  return Array.from({ length: 50 }, (_, i) =>
    i % 5 === 0
      ? { solver: 'lorenz', inputs: { t_end: -1 } }
      : i % 7 === 0
        ? { solver: 'no_such_solver' }
        : i % 2
          ? chain
          : { solver: 'lorenz', inputs: { t_end: 0.01 } },
  );
}
const expectedCost = (items: any[]) => items.reduce((sum, it, i) => sum + (i % 5 === 0 || i % 7 === 0 ? 0 : it.domain ? 1 : 10), 0);

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out: ${JSON.stringify(v).slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('batch computations', () => {
  it('a batch of 50 with failures inside: each item sealed and charged on its own, failures isolated', async () => {
    const before = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total;
    const items = items50();
    const r = await call(t.url, 'POST', '/api/svc/batch', { items }, bearer(owner.key));
    expect(r.status, r.text).toBe(202);
    expect(r.body).toMatchObject({ status: 'accepted', total: 50 });
    const v = await until(
      async () => (await call(t.url, 'GET', `/api/svc/batch/${r.body.id}`, undefined, bearer(owner.key))).body,
      (b) => b.status === 'complete',
    );
    const failing = items.map((_, i) => i).filter((i) => i % 5 === 0 || i % 7 === 0);
    expect(v).toMatchObject({ completed: 50, total: 50, percentage: 100, failed: failing.length });
    expect(v.results.map((x: any) => x.index)).toEqual(items.map((_, i) => i));
    for (const x of v.results) {
      if (failing.includes(x.index)) {
        expect(x.status).toBe('failed');
        expect(x.error).toMatchObject({ status: 400, code: 'SVC_INVALID_INPUT' });
      } else {
        expect(x.status).toBe('sealed');
        expect(x.result_id).toMatch(/^res_/);
        expect(x.svcProof).toMatch(/^[0-9a-f]{64}$/);
      }
    }
    expect(new Set(v.results.filter((x: any) => x.result_id).map((x: any) => x.result_id)).size).toBe(50 - failing.length);
    const after = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total;
    expect(before - after).toBe(expectedCost(items));
  });

  it('an item of more than 10 operators fails alone with SVC_TOO_MANY_OPERATORS; the batch is accepted whole', async () => {
    const chain = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };
    const items = [chain, { ...chain, operators: ['KO42', ...Array(10).fill('MECH_KINETIC_ENERGY')] }];
    const r = await call(t.url, 'POST', '/api/svc/batch', { items }, bearer(owner.key));
    expect(r.status, r.text).toBe(202);
    const v = await until(
      async () => (await call(t.url, 'GET', `/api/svc/batch/${r.body.id}`, undefined, bearer(owner.key))).body,
      (b) => b.status === 'complete',
    );
    expect(v.results[0]).toMatchObject({ index: 0, status: 'sealed' });
    expect(v.results[1]).toMatchObject({ index: 1, status: 'failed', error: { status: 400, code: 'SVC_TOO_MANY_OPERATORS' } });
    expect(v.results[1].error.message).toContain('11 operators');
  });

  it('a stop midway leaves the rest to the restart, which runs only the items without an outcome', async () => {
    const items = Array.from({ length: 12 }, () => ({ solver: 'lorenz', inputs: { t_end: 0.2 } }));
    const before = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total;
    const r = await call(t.url, 'POST', '/api/svc/batch', { items }, bearer(owner.key));
    t = await t.restart();
    const v = await until(
      async () => (await call(t.url, 'GET', `/api/svc/batch/${r.body.id}`, undefined, bearer(owner.key))).body,
      (b) => b.status === 'complete',
    );
    expect(v).toMatchObject({ completed: 12, failed: 0 });
    const after = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(owner.key))).body.total;
    expect(before - after).toBe(120);
  });

  it('validates the body and keeps batches to their owner', async () => {
    expectError(await call(t.url, 'POST', '/api/svc/batch', { items: [] }, bearer(owner.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/svc/batch', { items: Array(101).fill(chain) }, bearer(owner.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/svc/batch', { items: [chain] }), 401, 'SVC_NO_KEY');
    // An item fitting neither form says what each form needs; one that has a form's members says what is wrong in it.
    const refusal = async (items: unknown[]) =>
      expectError(await call(t.url, 'POST', '/api/svc/batch', { items }, bearer(owner.key)), 400, 'SVC_INVALID_INPUT');
    expect(await refusal([{}])).toMatchObject({ field: 'items.0', reason: 'none of its forms fits: give solver or domain' });
    expect(await refusal([chain, { solver: 'heat', extra: 1 }])).toMatchObject({ field: 'items.1.extra', reason: 'unknown key: extra' });
    expect(await refusal([{ ...chain, operators: 'KO42' }])).toMatchObject({ field: 'items.0.operators' });
    const r = await call(t.url, 'POST', '/api/svc/batch', { items: [chain] }, bearer(owner.key));
    const other = await zkIdentity(t.url, 'batch-other');
    expectError(await call(t.url, 'GET', `/api/svc/batch/${r.body.id}`, undefined, bearer(other.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'GET', '/api/svc/batch/bat_nope', undefined, bearer(owner.key)), 404, 'SVC_NOT_FOUND');
    expectError(await call(t.url, 'GET', '/api/svc/batch/~open!x', undefined, bearer(owner.key)), 404, 'SVC_NOT_FOUND');
  });
});

describe('batches per identity', () => {
  it(`at most ${BATCHES_OPEN_PER_IDENTITY} run at once per identity, also when sent in parallel: the rest 429 with Retry-After, others unaffected`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-batches-'));
    const store = await Store.open(dir, { sync: false });
    // Items that wait until released: the batches stay open while more are sent.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const compute = {
      compute: async () => {
        await gate;
        throw new ServiceError(400, 'SVC_INVALID_INPUT', 'held');
      },
      solve: async () => {
        await gate;
        throw new ServiceError(400, 'SVC_INVALID_INPUT', 'held');
      },
    } as unknown as ComputeService;
    const batches = new BatchService({ store, clock: new ManualClock(1_800_000_000n * 1_000_000_000n), compute, resultBytes: async () => undefined });
    const caller = (zid: string) => ({ kind: 'identity' as const, zid, slug: `m-${zid}`, home: 'here', key: null as never });
    try {
      const sent = await Promise.allSettled(Array.from({ length: 10 }, () => batches.submit(caller('greedy'), [chain as never], null)));
      expect(sent.filter((r) => r.status === 'fulfilled').length).toBe(BATCHES_OPEN_PER_IDENTITY);
      for (const r of sent.filter((r) => r.status === 'rejected')) {
        const e = (r as PromiseRejectedResult).reason as ServiceError;
        expect([e.status, e.code, e.extra.limit]).toEqual([429, 'SVC_RATE_LIMIT', BATCHES_OPEN_PER_IDENTITY]);
        expect(e.extra.retry_after_seconds).toBeGreaterThanOrEqual(1);
      }
      // Another identity is not held back.
      await batches.submit(caller('other'), [chain as never], null);
      release();
      await batches.idle();
      // Once they have finished, the identity may send again.
      await batches.submit(caller('greedy'), [chain as never], null);
      await batches.idle();
    } finally {
      release();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a batch item refused by a full solver queue', () => {
  it('waits its turn (Retry-After) and runs, instead of failing with 429', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-batches-'));
    const store = await Store.open(dir, { sync: false });
    let refusals = 2;
    const compute = {
      solve: async (
        _c: unknown,
        _s: unknown,
        _i: unknown,
        _st: unknown,
        _o: unknown,
        hooks: { ops: (f: { result_id: string; svcond: number }) => unknown[] },
      ) => {
        if (refusals-- > 0)
          throw new ServiceError(429, 'SVC_RATE_LIMIT', 'too many solver runs waiting', {
            limit: 4,
            queued_runs: 4,
            running_runs: 1,
            retry_after_seconds: 0.1,
          });
        await store.commit(hooks.ops({ result_id: 'res_1', svcond: 7 }) as never);
        return { bytes: Buffer.from(JSON.stringify({ value: 1, unit: 'J', svcProof: 'p', svcond: 7, result_id: 'res_1' })) };
      },
    } as unknown as ComputeService;
    const batches = new BatchService({ store, clock: new ManualClock(1_800_000_000n * 1_000_000_000n), compute, resultBytes: async () => undefined });
    try {
      const rec = await batches.submit({ kind: 'identity', zid: 'z', slug: 'm-z', home: 'here', key: null as never }, [{ solver: 'lorenz' }], null);
      await batches.idle();
      const outcome = await store.get<{ status: string; result_id: string }>(store.sub('batch_items'), `${rec.id}!${'0'.padStart(6, '0')}`);
      expect(outcome).toMatchObject({ status: 'sealed', result_id: 'res_1' });
      expect(refusals).toBe(-1);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a batch seen between its last seal and that item’s status write', () => {
  it('is complete with the sealed body’s value and proof, read from the stored result', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-batches-'));
    const store = await Store.open(dir, { sync: false });
    const body = { value: 2.5, unit: 'J', svcProof: 'ab'.repeat(32), svcond: 9, result_id: 'res_2' };
    let seen: unknown = null;
    // Set once the service exists: the compute it is given reads the batch's view mid-seal.
    const service: { batches?: BatchService } = {};
    let batchId = '';
    const compute = {
      solve: async (
        _c: unknown,
        _s: unknown,
        _i: unknown,
        _st: unknown,
        _o: unknown,
        hooks: { ops: (f: { result_id: string; svcond: number }) => unknown[] },
      ) => {
        // The seal's batch records the item; the view is read before the batch service adds the body's fields.
        await store.commit(hooks.ops({ result_id: 'res_2', svcond: 9 }) as never);
        seen = await service.batches!.view(batchId, 'z');
        return { bytes: Buffer.from(JSON.stringify(body)) };
      },
    } as unknown as ComputeService;
    const stored = new Map([['res_2', Buffer.from(JSON.stringify(body))]]);
    const batches = (service.batches = new BatchService({
      store,
      clock: new ManualClock(1_800_000_000n * 1_000_000_000n),
      compute,
      resultBytes: async (id) => stored.get(id),
    }));
    try {
      const rec = await batches.submit({ kind: 'identity', zid: 'z', slug: 'm-z', home: 'here', key: null as never }, [{ solver: 'lorenz' }], null);
      batchId = rec.id;
      await batches.idle();
      expect(seen).toMatchObject({
        status: 'complete',
        completed: 1,
        results: [{ status: 'sealed', result_id: 'res_2', value: 2.5, unit: 'J', svcProof: body.svcProof }],
      });
      expect(await batches.view(rec.id, 'z')).toMatchObject({ results: [{ svcProof: body.svcProof, value: 2.5 }] });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
