// Every tier gate reads an input its solver has, and is reachable: an example the solver accepts (within its own
// ranges and work limit) is locked below the gate's tier and runs at it. A gate on a misspelt or renamed input would
// otherwise never lock anything, silently.
import { describe, expect, it } from 'vitest';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { TIER_GATES, assertTierAllows, lockedInputs, tierSheet } from '../../src/tally/tier-gates.js';
import { TIERS, TIER_DAILY_ALLOWANCE, TIER_TIME_LIMIT_SECONDS, tierPolicy, tierRank } from '../../src/tally/tiers.js';
import { ServiceError } from '../../src/kernel/errors.js';

const ring = (n: number, radius: number) =>
  Array.from({ length: n }, (_, i) => {
    const a = (2 * Math.PI * i) / n;
    return { x: radius * Math.cos(a), y: radius * Math.sin(a), z: 0, sigma_A: 3.4, epsilon_kJ_mol: 0.36, charge_e: 0 };
  });

/** An evolve state of `n` atoms on a cubic grid 4 Å apart, at rest. */
const atomState = (n: number) => {
  const side = Math.ceil(Math.cbrt(n));
  const positions_m = Array.from({ length: n }, (_, i) => [i % side, Math.floor(i / side) % side, Math.floor(i / side / side)].map((c) => c * 4e-10));
  return { positions_m, velocities_m_s: positions_m.map(() => [0, 0, 0]), box_m: side * 4e-10 };
};

/** One accepted request per gate (solver:input), just past it; a state gate's example is the state. */
const EXAMPLES: Record<string, Record<string, unknown>> = {
  'device:mode': { mode: 'pn2d' },
  'gauge:L': { L: 34, max_sweeps: 500, therm_sweeps: 0 },
  'evolve:n_cells': { n_cells: 5, steps: 10 },
  'evolve:initialState.positions_m': atomState(257),
  'heat:nx': { nx: 503 },
  'climate:nx': { nx: 256, ny: 16, periods: 1 },
  'climate:ny': { nx: 16, ny: 256, periods: 1 },
  'dock:receptor': { receptor: ring(501, 60), n_starts: 1, mc_steps: 100 },
  'wave:nx': { mode: 'maxwell', nx: 2003, periods: 2 },
};

describe('tier gates', () => {
  const registry = defaultRegistry();

  const gateName = (g: (typeof TIER_GATES)[number]) => (g.of === undefined ? g.input : `${g.of}.${g.input}`);
  it.each(TIER_GATES.map((g) => [`${g.solver}:${gateName(g)}`, g] as const))('%s is on a real input and reachable', (name, gate) => {
    const solver = registry.get(gate.solver);
    expect(solver, gate.solver).toBeDefined();
    expect(gate.above === undefined).not.toBe(gate.equals === undefined);
    const example = EXAMPLES[name];
    expect(example, `an example for ${name}`).toBeDefined();
    let inputs: Record<string, unknown>;
    let state: unknown;
    if (gate.of === 'initialState') {
      // A state the solver accepts, continued with its default inputs and few steps.
      inputs = solver!.resolve({ steps: 10 });
      state = solver!.resolveState!(example, inputs);
      expect(Object.keys(state as object)).toContain(gate.input);
    } else {
      expect(solver!.inputs.map((i) => i.key)).toContain(gate.input);
      inputs = solver!.resolve(example);
    }
    const below = TIERS.filter((t) => tierRank(t) < tierRank(gate.tier));
    expect(below.length).toBeGreaterThan(0);
    for (const tier of below) expect(lockedInputs(gate.solver, inputs, tier, state).map((l) => l.input)).toContain(gateName(gate));
    for (const tier of TIERS.filter((t) => tierRank(t) >= tierRank(gate.tier))) expect(lockedInputs(gate.solver, inputs, tier, state)).toEqual([]);
  });

  it('a state of the default size stays free (the gate counts the state, not n_cells)', () => {
    const evolve = registry.get('evolve')!;
    const inputs = evolve.resolve({ steps: 10 });
    expect(lockedInputs('evolve', inputs, 'free', evolve.resolveState!(atomState(256), inputs))).toEqual([]);
    expect(lockedInputs('evolve', inputs, 'free', evolve.resolveState!(atomState(500), inputs))).toMatchObject([
      { input: 'initialState.positions_m', value: 500, required_tier: 'starter' },
    ]);
  });

  it("every solver's defaults stay free", () => {
    for (const solver of registry.list()) expect(lockedInputs(solver.id, solver.resolve({}), 'free'), solver.id).toEqual([]);
  });

  it('asks for the highest tier any locked input needs, with the part-7 fields', () => {
    const inputs = { nx: 256, ny: 256 };
    expect(lockedInputs('climate', inputs, 'free')).toHaveLength(2);
    try {
      assertTierAllows('gauge', { L: 64 }, 'free', 'http://node/api/tally/tiers');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ServiceError);
      const e = err as ServiceError;
      expect([e.status, e.code]).toEqual([403, 'SVC_TIER_LOCKED']);
      expect(e.extra).toMatchObject({ required_tier: 'starter', current_tier: 'free', upgrade_url: 'http://node/api/tally/tiers', solver: 'gauge' });
    }
    // Both climate gates need standard: a starter is still locked, a standard caller is not.
    expect(() => assertTierAllows('climate', inputs, 'starter', 'u')).toThrow(/standard tier; this caller is starter/);
    expect(() => assertTierAllows('climate', inputs, 'standard', 'u')).not.toThrow();
  });

  it("part 8's figures, and test overrides only where given", () => {
    expect(TIER_DAILY_ALLOWANCE).toEqual({ free: 143, starter: 500, standard: 2500, professional: 7500, enterprise: 25000 });
    expect(TIER_TIME_LIMIT_SECONDS).toMatchObject({ free: 30, standard: 120, professional: 600 });
    const p = tierPolicy({ timeLimitSeconds: { free: 1 } });
    expect(p.timeLimitSeconds).toEqual({ ...TIER_TIME_LIMIT_SECONDS, free: 1 });
    expect(p.dailyAllowance).toEqual(TIER_DAILY_ALLOWANCE);
    expect(tierSheet(p, false)).toMatchObject({ daily_allowance_enforced: false, gates: TIER_GATES, anonymous_and_demo: 'free' });
  });
});
