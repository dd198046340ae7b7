// Every registered solver through the HTTP pipeline: own endpoint vs /solve give identical bits, rule-8 terms
// present or null by output class, receipt fields by unit, and a 1 % wrong result fails the gate and seals nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { defaultRegistry, SOLVER_IDS, type AnySolver } from '../../src/solvers/registry.js';
import type { Check } from '../../src/solvers/types.js';

const registry = defaultRegistry();
const UNIT_FIELDS: Record<string, string> = { Pa: 'pressure', 'm/s': 'velocity', V: 'potential', T: 'magnetic_field', 'kg*m/s': 'momentum', K: 'temperature' };

/** The same solver, but its check's computed quantity (every part) is off by 1 %. */
function perturbed(s: AnySolver): AnySolver {
  const bump = (c: Check): Check => ({ ...c, computed: c.computed === 0 ? 0.01 * Math.abs(c.reference) + c.reference * 1.01 : c.computed * 1.01 });
  return {
    ...s,
    run: (inputs, state) => {
      const out = s.run(inputs, state);
      const check = bump(out.check);
      if (out.check.parts) check.parts = out.check.parts.map(bump);
      return { ...out, check };
    },
  };
}

let t: TestNode;
let faulty: TestNode;
let key: string;
let faultyKey: string;
let faultyZid: string;

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 100000 });
  faulty = await startTestNode({}, { registry: registry.with(registry.list().map(perturbed)), initialCredits: 100000 });
  key = (await zkIdentity(t.url, 'solvers')).key;
  const f = await zkIdentity(faulty.url, 'solvers-faulty');
  faultyKey = f.key;
  faultyZid = f.zid;
});
afterAll(async () => {
  await t.destroy();
  await faulty.destroy();
});

describe('registry', () => {
  it('holds solver ids from the catalogue only, each once', () => {
    for (const id of registry.ids()) expect(SOLVER_IDS).toContain(id);
    const catalogue = registry.list().filter((s) => s.catalogue);
    expect(
      registry
        .list()
        .filter((s) => !s.catalogue)
        .map((s) => s.id),
    ).toEqual(registry.get('multibody') ? ['multibody'] : []);
    expect(catalogue.length).toBe(registry.ids().length - (registry.get('multibody') ? 1 : 0));
  });

  it('/solve names the ids when given an unknown solver', async () => {
    const e = expectError(await call(t.url, 'POST', '/api/svc/solve', { solver: 'alchemy', inputs: {} }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('solver');
    expect(e.allowed).toEqual(registry.ids());
  });

  it('a run past a work limit is 400 SVC_INVALID_INPUT naming the input and the limit, before any work', async () => {
    // Each just past the limit that keeps its largest run under 5 s (all were accepted under the older limits).
    const cases: [string, Record<string, unknown>, string, number][] = [
      ['flow', { n: 128, t_end_s: 0.4 }, 't_end_s', 8e6],
      ['climate', { nx: 128, ny: 128, periods: 2 }, 'periods', 5e6],
      ['opt', { problem: 'brachistochrone', segments: 400 }, 'max_iterations', 4e8],
      ['gauge', { L: 32, therm_sweeps: 5000, max_sweeps: 25_000 }, 'max_sweeps', 2.1e7],
    ];
    for (const [solver, inputs, field, limit] of cases) {
      const before = t.node.counters.get('sealed_total');
      const e = expectError(await call(t.url, 'POST', '/api/svc/solve', { solver, inputs }, bearer(key)), 400, 'SVC_INVALID_INPUT');
      expect(e.field).toBe(field);
      expect(e.message).toMatch(new RegExp(`work limit exceeded: .* > ${limit.toExponential(3).replace('+', '\\+')}`));
      expect(t.node.counters.get('sealed_total')).toBe(before);
    }
  });
});

describe.each(registry.list().map((s) => [s.id, s] as const))('%s over HTTP', (id, solver) => {
  it('seals {} with rule-8 terms by output class and receipt fields by unit; own endpoint and /solve agree bit for bit', async () => {
    const viaSolve = await call(t.url, 'POST', '/api/svc/solve', { solver: id, inputs: {} }, bearer(key));
    expect(viaSolve.status, viaSolve.text.slice(0, 300)).toBe(200);
    const b = viaSolve.body;
    expect(b.solver).toBe(id);
    expect(Number.isFinite(b.value)).toBe(true);
    expect(b.check.rel_error).toBeLessThanOrEqual(1e-3);
    expect(b.check.passed).toBe(true);
    if (b.output_class === 'scalar') {
      expect(b.master_equation).toBeNull();
      expect(b.functional_equation).toBeNull();
      expect(b.spectral_propagator).toBeNull();
    } else {
      expect(b.master_equation.masterSum.terms.map((x: { name: string }) => x.name)).toEqual([
        'dalembertian',
        'mass',
        'self_interaction',
        'decay',
        'ko42_coupling',
        'source',
      ]);
      for (const term of b.master_equation.masterSum.terms) expect(Number.isFinite(term.value)).toBe(true);
      expect(Number.isFinite(b.functional_equation.E)).toBe(true);
      expect(b.spectral_propagator.power.length).toBeGreaterThan(0);
      expect(b.outputs).toHaveProperty(b.rule8_array);
    }
    const mapped = UNIT_FIELDS[b.unit];
    if (mapped) expect(b.svcond_receipt.fields[mapped]).toEqual({ value: b.value, unit: b.unit });
    for (const [name, f] of Object.entries(b.svcond_receipt.fields as Record<string, { value: number; unit: string }>)) {
      expect(Number.isFinite(f.value), name).toBe(true);
      expect(typeof f.unit).toBe('string');
    }
    if (!mapped && !['react', 'fracture', 'evolve'].includes(id)) expect(b.svcond_receipt.fields).toEqual({});
    if (solver.endpoint) {
      const own = await call(t.url, 'POST', solver.endpoint, {}, bearer(key));
      expect(own.status).toBe(200);
      expect(Object.is(own.body.value, b.value)).toBe(true);
      expect(own.body.result_digest).toBe(b.result_digest);
    } else {
      const again = await call(t.url, 'POST', '/api/svc/solve', { solver: id, inputs: {} }, bearer(key));
      expect(Object.is(again.body.value, b.value)).toBe(true);
      expect(again.body.result_digest).toBe(b.result_digest);
    }
    expect((await call(t.url, 'POST', '/api/svc/verify', b, bearer(key))).body.valid).toBe(true);
  });

  it('a result 1 % off fails the gate with 422 and seals nothing', async () => {
    const before = faulty.node.counters.get('sealed_total');
    await faulty.node.counters.loadIdentity(faultyZid); // read on demand (store/counters.ts)
    const envBefore = faulty.node.counters.get(`env:${faultyZid}`);
    const r = await call(faulty.url, 'POST', '/api/svc/solve', { solver: id, inputs: {} }, bearer(faultyKey));
    expectError(r, 422, 'SVC_TOLERANCE_GATE');
    expect(r.body.error.details.check.rel_error).toBeGreaterThan(1e-3);
    expect(faulty.node.counters.get('sealed_total')).toBe(before);
    expect(faulty.node.counters.get(`env:${faultyZid}`)).toBe(envBefore);
  });

  it('an unknown input key is 400 SVC_INVALID_INPUT naming the key', async () => {
    const e = expectError(await call(t.url, 'POST', '/api/svc/solve', { solver: id, inputs: { no_such_key_xyz: 1 } }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(e.field).toBe('no_such_key_xyz');
  });
});
