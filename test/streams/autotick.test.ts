import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode, expectError } from '../helpers/node.js';

const clock = new ManualClock(BigInt(Date.now()) * 1_000_000n);
let t: TestNode;
afterAll(() => t.destroy());

describe('autotick', () => {
  it('seals once per tickIntervalZeqonds on the clock, survives a restart, and stops when the owner cannot pay', async () => {
    // 25 credits: two solver ticks (10 each), not three.
    t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 25, clock });
    const owner = await zkIdentity(t.url, 'autotick-owner');
    const c = (
      await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.05 }, autotick: true, tickIntervalZeqonds: 3 }, bearer(owner.key))
    ).body;
    expect(c.autotick).toBe(true);
    const state = async () => (await call(t.url, 'GET', `/api/svc/streams/${c.id}`, undefined, bearer(c.key))).body;

    clock.advanceTicks(2);
    await t.node.autotick.runDue();
    expect((await state()).tick_count).toBe(0);
    clock.advanceTicks(1);
    await t.node.autotick.runDue();
    await t.node.autotick.runDue();
    expect((await state()).tick_count).toBe(1);

    t = await t.restart();
    expect(t.node.streams.autotickIds.has(c.id)).toBe(true);
    clock.advanceTicks(3);
    await t.node.autotick.runDue();
    const two = await state();
    expect(two.tick_count).toBe(2);
    expect(two.last_svcond).toBe(Number(clock.nowNs() / 777_000_777n));

    clock.advanceTicks(3);
    await t.node.autotick.runDue();
    const stopped = await state();
    expect(stopped).toMatchObject({ tick_count: 2, autotick: false, autotick_stopped: 'insufficient_balance' });
    t = await t.restart();
    expect(t.node.streams.autotickIds.has(c.id)).toBe(false);
  });
});

describe('autotick turned back on', () => {
  it('PATCH {autotick: true}: owner only, 402 while unfunded, then resumed and kept across a restart', async () => {
    const clk = new ManualClock(BigInt(Date.now()) * 1_000_000n);
    let n = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 15, clock: clk });
    try {
      const owner = await zkIdentity(n.url, 'autotick-resume');
      const c = (
        await call(n.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.05 }, autotick: true, tickIntervalZeqonds: 2 }, bearer(owner.key))
      ).body;
      clk.advanceTicks(2);
      await n.node.autotick.runDue();
      clk.advanceTicks(2);
      await n.node.autotick.runDue();
      const view = async () => (await call(n.url, 'GET', `/api/svc/streams/${c.id}`, undefined, bearer(owner.key))).body;
      expect(await view()).toMatchObject({ tick_count: 1, autotick: false, autotick_stopped: 'insufficient_balance' });

      const patch = (b: unknown, key: string) => call(n.url, 'PATCH', `/api/svc/streams/${c.id}`, b, bearer(key));
      expect((await patch({ autotick: true }, c.key)).status).toBe(403);
      // Nor may the channel key close it (for good): only the owner.
      expectError(await call(n.url, 'POST', `/api/svc/streams/${c.id}/close`, undefined, bearer(c.key)), 403, 'SVC_FORBIDDEN');
      expectError(await call(n.url, 'DELETE', `/api/svc/streams/${c.id}`, undefined, bearer(c.key)), 403, 'SVC_FORBIDDEN');
      expect(await view()).toMatchObject({ status: 'open' });
      expect((await patch({ autotick: 'yes' }, owner.key)).status).toBe(400);
      const broke = await patch({ autotick: true }, owner.key);
      expect(broke.status).toBe(402);
      expect(broke.body.error.code).toBe('INSUFFICIENT_BALANCE');
      expect(await view()).toMatchObject({ autotick: false, autotick_stopped: 'insufficient_balance' });

      // Funded again (the ledger's own credit path, as a grant makes), then resumed.
      const ledger = n.node.ledger;
      await ledger.wallet(owner.zid);
      await n.node.store.commit(ledger.creditOps(owner.zid, 100, 0).ops);
      const on = await patch({ autotick: true, tickIntervalZeqonds: 3 }, owner.key);
      expect(on.status).toBe(200);
      expect(on.body).toMatchObject({ autotick: true, autotick_stopped: null, tickIntervalZeqonds: 3 });

      n = await n.restart();
      expect(n.node.streams.autotickIds.has(c.id)).toBe(true);
      clk.advanceTicks(3);
      await n.node.autotick.runDue();
      expect(await view()).toMatchObject({ tick_count: 2, autotick: true });

      expect((await patch({ autotick: false }, owner.key)).body).toMatchObject({ autotick: false, autotick_stopped: null });
      expect(n.node.streams.autotickIds.has(c.id)).toBe(false);
    } finally {
      await n.destroy();
    }
  });
});
