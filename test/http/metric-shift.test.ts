// Rule 6 in a sealed result: a computation whose tick variance exceeds 0.0091 (it took more than ~148 ms from
// acceptance to the stamp) carries the applied metric shift in cko.metric_shift, and the result still verifies.
// The node's clock is the system clock plus an offset the test moves forward on every reading while one request
// runs, so the request takes (to the node) long enough without the test sleeping.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/kernel/clock.js';
import { VARIANCE_THRESHOLD } from '../../src/kernel/parity.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

/** The system clock, moved forward by `stepNs` at each reading while a step is set. */
class SteppingClock implements Clock {
  private offsetNs = 0n;
  stepNs = 0n;
  nowNs(): bigint {
    this.offsetNs += this.stepNs;
    return systemClock.nowNs() + this.offsetNs;
  }
}

const clock = new SteppingClock();
let t: TestNode;
let key: string;

beforeAll(async () => {
  t = await startTestNode({}, { clock });
  ({ key } = await zkIdentity(t.url, 'metric-shift'));
});
afterAll(async () => t.destroy());

const ke = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

describe('a sealed result with the metric shift applied (rule 6)', () => {
  it('a computation that spans more than 0.19 tick carries the applied delta_alpha, and verifies', async () => {
    clock.stepNs = 100_000_000n; // 0.1 s per reading: acceptance to stamp spans several readings
    const slow = await call(t.url, 'POST', '/api/svc/compute', ke, bearer(key));
    clock.stepNs = 0n;
    expect(slow.status, slow.text).toBe(200);
    const shift = slow.body.cko.metric_shift;
    expect(shift.applied).toBe(true);
    expect(shift.variance).toBeGreaterThan(VARIANCE_THRESHOLD);
    expect(shift.variance).toBeCloseTo((shift.elapsed_ticks / 2) ** 2, 12);
    // delta_alpha takes the modulation's change across the computation back out: −a[sin(2π(φ_start + Δ)) − sin(2πφ_start)].
    const startPhase = slow.body.phase - shift.elapsed_ticks;
    const expected = -1e-3 * (Math.sin(2 * Math.PI * (startPhase + shift.elapsed_ticks)) - Math.sin(2 * Math.PI * startPhase));
    expect(shift.delta_alpha).toBeCloseTo(expected, 12);
    expect(shift.delta_alpha).not.toBe(0);
    // The value is never touched (rule 5) and the sealed result verifies with the shift in it.
    expect(slow.body.value).toBe(9);
    const v = await call(t.url, 'POST', '/api/svc/verify', slow.body, bearer(key));
    expect(v.body).toMatchObject({ valid: true, proof_valid: true, receipt_valid: true });
  });
});
