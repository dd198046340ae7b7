import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

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
