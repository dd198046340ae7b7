import { describe, expect, it } from 'vitest';
import { countModels, dpll, sat, simplify, walksat, WALKSAT_WORK_LIMIT, WORK_LIMIT } from '../../src/solvers/sat.js';
import { Xoshiro128 } from '../../src/numerics/prng.js';
import { SolverFailure } from '../../src/solvers/errors.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

const run = (raw: unknown) => sat.run(sat.resolve(raw));

const expectInputError = inputErrorOnResolve(sat);

/** Pigeonhole principle PHP(p, h): p pigeons in h holes, unsatisfiable for p > h; p·h variables. */
function pigeonhole(p: number, h: number): number[][] {
  const x = (i: number, j: number) => i * h + j + 1;
  const clauses: number[][] = [];
  for (let i = 0; i < p; i++) clauses.push(Array.from({ length: h }, (_, j) => x(i, j)));
  for (let j = 0; j < h; j++) for (let i = 0; i < p; i++) for (let k = i + 1; k < p; k++) clauses.push([-x(i, j), -x(k, j)]);
  return clauses;
}

/** Naive model count, one assignment at a time (independent of the bit-parallel enumerator). */
function naiveCount(clauses: number[][], n: number): number {
  let count = 0;
  for (let a = 0; a < 2 ** n; a++) {
    const truth = (l: number) => (((a >> (Math.abs(l) - 1)) & 1) === 1) === l > 0;
    if (clauses.every((c) => c.some(truth))) count++;
  }
  return count;
}

function satisfies(clauses: number[][], assignment: number[]): boolean {
  const val = new Map(assignment.map((l) => [Math.abs(l), l > 0]));
  return clauses.every((c) => c.some((l) => val.get(Math.abs(l)) === l > 0));
}

describe('countModels (bit-parallel enumeration)', () => {
  it('counts small formulas exactly', () => {
    expect(countModels([[1, 2], [-1]], 2)).toBe(1);
    expect(countModels([[1, 2, 3]], 3)).toBe(7);
    expect(countModels([[6, 7]], 7)).toBe(96); // 3/4 of 2^7
    expect(countModels(pigeonhole(4, 3), 12)).toBe(0);
    expect(countModels(pigeonhole(3, 3), 9)).toBe(6); // 3! bijections
  });

  it('agrees with a naive count on pseudo-random formulas', () => {
    let s = 12345;
    const next = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (const n of [3, 6, 9, 12]) {
      const clauses = Array.from({ length: 3 * n }, () =>
        Array.from({ length: 1 + Math.floor(next() * 3) }, () => (1 + Math.floor(next() * n)) * (next() < 0.5 ? -1 : 1)),
      );
      expect(countModels(clauses, n)).toBe(naiveCount(clauses, n));
    }
  });
});

describe('sat solver', () => {
  it('solves the default generated instance with DPLL', () => {
    const inputs = sat.resolve({});
    expect(inputs).toEqual({ n_vars: 50, n_clauses: 200, method: 'dpll', max_decisions: 1e6, max_flips: 1e5 });
    const out = sat.run(inputs);
    expect(out.mode).toBe('dpll');
    expect(out.unit).toBe('1');
    expect(out.output_class).toBe('scalar');
    expect(out.rule8).toBeNull();
    expect(out.rule8_array).toBeNull();
    expect(out.value).toBe(1);
    expect(out.outputs.status).toBe('SAT');
    const clauses = out.outputs.clauses as number[][];
    expect(clauses).toHaveLength(200);
    for (const c of clauses) {
      expect(c).toHaveLength(3);
      expect(new Set(c.map(Math.abs)).size).toBe(3);
      for (const l of c) expect(Math.abs(l)).toBeLessThanOrEqual(50);
    }
    const assignment = out.outputs.assignment as number[];
    expect(assignment).toHaveLength(50);
    expect(satisfies(clauses, assignment)).toBe(true);
    expect(out.check.passed).toBe(true);
    expect(out.check.computed).toBe(1);
    expect(typeof out.outputs.decisions).toBe('number');
  });

  it('WalkSAT finds a model of the same kind of instance', () => {
    const out = run({ method: 'walksat', n_vars: 100, n_clauses: 380 });
    expect(out.mode).toBe('walksat');
    expect(out.value).toBe(1);
    expect(satisfies(out.outputs.clauses as number[][], out.outputs.assignment as number[])).toBe(true);
    expect(out.check.passed).toBe(true);
    expect(typeof out.outputs.flips).toBe('number');
  });

  it('finds the unique model of a forcing formula', () => {
    const clauses = [[1], [-1, 2], [-2, -3], [3, 4, -1], [-4, 5], [5, -5, 2]];
    for (const method of ['dpll', 'walksat']) {
      const out = run({ clauses, method });
      expect(out.value).toBe(1);
      expect(out.outputs.assignment).toEqual([1, 2, -3, 4, 5]);
      expect(out.outputs.clauses).toBeUndefined();
      expect(out.check.passed).toBe(true);
    }
  });

  it('proves pigeonhole PHP(5,4) unsatisfiable and certifies it by enumeration', () => {
    const out = run({ clauses: pigeonhole(5, 4) });
    expect(out.value).toBe(0);
    expect(out.outputs.status).toBe('UNSAT');
    expect(out.outputs.assignment).toEqual([]);
    expect(out.check.passed).toBe(true);
    expect(out.check.reference).toBe(1); // zero models + 1
  });

  it('agrees with a naive model count on dense generated instances', () => {
    for (const seed of [1, 2, 3, 4]) {
      const out = run({ n_vars: 12, n_clauses: 80, seed });
      const models = naiveCount(out.outputs.clauses as number[][], 12);
      expect(out.value).toBe(models > 0 ? 1 : 0);
      expect(out.check.passed).toBe(true);
    }
  });

  it('certifies UNSAT of a generated 22-variable instance', () => {
    const out = run({ n_vars: 22, n_clauses: 140, seed: 1 });
    expect(out.value).toBe(0);
    expect(out.check.passed).toBe(true);
  });

  it('refuses an UNSAT answer above 22 variables', () => {
    const out = run({ clauses: pigeonhole(6, 5) }); // 30 variables
    expect(out.value).toBe(0);
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toMatch(/n_vars > 22/);
  });

  it('budget exhausted → SolverFailure (500)', () => {
    expect(() => run({ clauses: pigeonhole(6, 5), max_decisions: 3 })).toThrow(SolverFailure);
    expect(() => run({ clauses: pigeonhole(5, 4), method: 'walksat', max_flips: 2000 })).toThrow(SolverFailure);
    try {
      run({ clauses: pigeonhole(5, 4), method: 'walksat', max_flips: 100 });
    } catch (e) {
      expect((e as SolverFailure).status).toBe(500);
    }
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError({ colour: 1 }, 'colour');
    expectInputError({ method: 'cdcl' }, 'method');
    expectInputError({ clauses: [[1, 0]] }, 'clauses.0.1');
    expectInputError({ clauses: [[]] }, 'clauses.0');
    expectInputError({ clauses: [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]] }, 'clauses.0');
    expectInputError({ clauses: [[1.5]] }, 'clauses.0.0');
    expectInputError({ clauses: [[1, 5]], n_vars: 4 }, 'clauses');
    expectInputError({ clauses: [[1, 2]], n_clauses: 2 }, 'n_clauses');
    expectInputError({ n_vars: 2 }, 'n_vars');
    expectInputError({ n_vars: 1001 }, 'n_vars');
    expectInputError({ n_clauses: 5001 }, 'n_clauses');
    expectInputError({ max_decisions: 2e7 }, 'max_decisions');
    expectInputError({ seed: -1 }, 'seed');
  });

  it('accepts its own default budgets on large instances: the work budget is spent at run time, not refused up front', () => {
    // 1e6 decisions × 1260 literal occurrences > the work limit was refused with 400 before; it is a budget, not a cost.
    expect(sat.resolve({ n_vars: 100, n_clauses: 420 })).toMatchObject({ max_decisions: 1e6, max_flips: 1e5 });
    expect(sat.resolve({ n_vars: 1000, n_clauses: 5000 }).n_clauses).toBe(5000);
    expect(sat.resolve({ n_vars: 1000, n_clauses: 5000, method: 'walksat', max_flips: 1e7 }).max_flips).toBe(1e7);
    expect(WORK_LIMIT).toBe(1e8);
    expect(WALKSAT_WORK_LIMIT).toBe(4e8);
  });

  it('a run that uses up its work budget ends with SolverFailure (500) naming the budget', () => {
    const cnf = simplify(pigeonhole(6, 5), 30);
    // Enough work: the same answer as the solver's own run (UNSAT, refused above 22 variables).
    expect(dpll(cnf, 1e7).status).toBe('UNSAT');
    let err: SolverFailure | undefined;
    try {
      dpll(cnf, 1e7, 5000);
    } catch (e) {
      err = e as SolverFailure;
    }
    expect(err).toBeInstanceOf(SolverFailure);
    expect(err!.status).toBe(500);
    expect(err!.code).toBe('SVC_SOLVER_ERROR');
    expect(err!.message).toBe('DPLL work budget exhausted');
    expect(err!.details).toMatchObject({ work_limit: 5000 });
    expect((err!.details as { work: number }).work).toBeGreaterThan(5000);
    const php = simplify(pigeonhole(5, 4), 20);
    expect(() => walksat(php, 1e7, new Xoshiro128([1, 2, 3, 4]), 10_000)).toThrow('WalkSAT work budget exhausted');
  });

  it("counts work as the literal occurrences each assignment visits (its own and its negation's lists)", () => {
    // (x1 ∨ x2)(¬x1 ∨ ¬x2)(x3 ∨ x4)(¬x3 ∨ ¬x4): the first decision x1 visits 1 + 1 occurrences and propagates ¬x2
    // (1 + 1): work 4 before the second decision. A limit of 3 ends the run there; 4 lets it finish.
    const cnf = simplify(
      [
        [1, 2],
        [-1, -2],
        [3, 4],
        [-3, -4],
      ],
      4,
    );
    expect(() => dpll(cnf, 1e6, 3)).toThrow('DPLL work budget exhausted');
    const out = dpll(cnf, 1e6, 4);
    expect(out.status).toBe('SAT');
    expect(out.work).toBe(2); // decisions
  });

  it('n_vars defaults to the largest literal when clauses are given', () => {
    expect(sat.resolve({ clauses: [[1, -7]] }).n_vars).toBe(7);
  });

  it('is deterministic, and the seed changes the instance', () => {
    const a = run({ method: 'walksat', n_vars: 80, n_clauses: 300 });
    const b = run({ method: 'walksat', n_vars: 80, n_clauses: 300 });
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    const c = run({ method: 'walksat', n_vars: 80, n_clauses: 300, seed: 7 });
    expect(JSON.stringify(c.outputs.clauses)).not.toBe(JSON.stringify(a.outputs.clauses));
  });

  it('a 1 % wrong result fails the gate', () => {
    for (const raw of [{}, { clauses: pigeonhole(4, 3) }]) expectGateRefusesPerturbed(run(raw));
  });
});
