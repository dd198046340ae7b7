import { describe, expect, it } from 'vitest';
import { opt } from '../../src/solvers/opt.js';
import { nelderMead } from '../../src/numerics/optimize.js';
import { SolverFailure } from '../../src/solvers/errors.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

function solve(raw: unknown) {
  return opt.run(opt.resolve(raw));
}

const expectInputError = inputErrorOnResolve(opt, { status: 400 });

/** Chained Rosenbrock and its gradient, written out independently of the solver's. */
function rosenbrockF(x: ArrayLike<number>): number {
  let f = 0;
  for (let i = 0; i + 1 < x.length; i++) f += 100 * (x[i + 1]! - x[i]! ** 2) ** 2 + (1 - x[i]!) ** 2;
  return f;
}
function rosenbrockGrad(x: ArrayLike<number>): number[] {
  const g = new Array<number>(x.length).fill(0);
  for (let i = 0; i + 1 < x.length; i++) {
    const a = x[i + 1]! - x[i]! ** 2;
    g[i]! += -400 * x[i]! * a - 2 * (1 - x[i]!);
    g[i + 1]! += 200 * a;
  }
  return g;
}

/** Cycloid time by plain bisection (a different root finder from the solver's brent). */
function cycloidReference(X: number, Y: number, g: number): number {
  const h = (t: number) => (t - Math.sin(t)) / (1 - Math.cos(t)) - X / Y;
  let lo = 1e-9;
  let hi = 2 * Math.PI - 1e-9;
  for (let i = 0; i < 200; i++) {
    const mid = 0.5 * (lo + hi);
    if (h(mid) > 0) hi = mid;
    else lo = mid;
  }
  const theta = 0.5 * (lo + hi);
  const R = Y / (1 - Math.cos(theta));
  return theta * Math.sqrt(R / g);
}

describe('opt: rosenbrock', () => {
  it('defaults: BFGS reaches the known minimiser (1, 1) with f* = 0', () => {
    const inputs = opt.resolve({});
    expect(inputs).toEqual({ problem: 'rosenbrock', method: 'bfgs', max_iterations: 10000, gtol: 1e-10, dimension: 2, x0: [-1.2, 1] });
    const r = opt.run(inputs);
    expect(r.mode).toBe('rosenbrock');
    expect(r.unit).toBe('1');
    expect(r.output_class).toBe('scalar');
    expect(r.rule8).toBeNull();
    expect(r.rule8_array).toBeNull();
    expect(r.value).toBeLessThan(1e-20);
    const x = r.outputs.x as number[];
    expect(x).toHaveLength(2);
    for (const xi of x) expect(Math.abs(xi - 1)).toBeLessThan(1e-9);
    expect(r.outputs.gradient_norm as number).toBeLessThan(1e-10);
    expect(r.outputs.iterations as number).toBeGreaterThan(0);
    expect(r.check.passed).toBe(true);
    expect(r.check.reference).toBe(1);
    expect(r.check.rel_error).toBeLessThan(1e-9);
  });

  it('dimension 10 from the alternating start and a custom 3-D start', () => {
    for (const raw of [{ dimension: 10 }, { x0: [0.5, -0.3, 2] }]) {
      const r = solve(raw);
      const x = r.outputs.x as number[];
      expect(x).toHaveLength(raw.dimension ?? 3);
      for (const xi of x) expect(Math.abs(xi - 1)).toBeLessThan(1e-8);
      expect(r.check.passed).toBe(true);
    }
  });

  it('Nelder–Mead in 2-D and 3-D reaches the minimiser', () => {
    for (const dimension of [2, 3]) {
      const r = solve({ method: 'nelder_mead', dimension });
      for (const xi of r.outputs.x as number[]) expect(Math.abs(xi - 1)).toBeLessThan(1e-8);
      expect(r.value).toBeLessThan(1e-18);
      expect(r.check.passed).toBe(true);
    }
  });

  it('Nelder–Mead in 2, 5 and 8 dimensions from the alternating start reaches the global minimiser (1, …, 1)', () => {
    // From (−1.2, 1, −1.2, …) a plain simplex settles in the chained Rosenbrock's other minimum (x_1 ≈ −1,
    // f ≈ 3.93 in 5-D, 3.99 in 8-D); the certification poll must move it on to x* = 1, f* = 0.
    for (const dimension of [2, 5, 8]) {
      const r = solve({ method: 'nelder_mead', dimension });
      const x = r.outputs.x as number[];
      expect(x).toHaveLength(dimension);
      for (const xi of x) expect(Math.abs(xi - 1)).toBeLessThan(1e-8);
      expect(r.value).toBeLessThan(1e-18);
      expect(rosenbrockF(x)).toBeLessThan(1e-18);
      // Converged by the gradient test itself: f* = 0, so rounding does not limit ‖∇f‖.
      expect(Math.max(...rosenbrockGrad(x).map(Math.abs))).toBeLessThan(1e-10);
      expect(r.outputs.gradient_norm as number).toBeLessThan(1e-10);
      expect(r.outputs.iterations as number).toBeLessThanOrEqual(10000);
      expect(r.check.passed).toBe(true);
      expect(r.check.rel_error).toBeLessThan(1e-8);
    }
  });

  it('a genuine local minimum is a converged result that fails the check (the gate), not a solver error', () => {
    // 4-D chained Rosenbrock has a second minimum near (−0.776, 0.613, 0.382, 0.146), f ≈ 3.70; started next to it
    // both methods stop there. Stationarity is checked with the gradient written out above.
    for (const method of ['nelder_mead', 'bfgs']) {
      const r = solve({ method, x0: [-0.8, 0.6, 0.4, 0.15] });
      const x = r.outputs.x as number[];
      expect(Math.max(...rosenbrockGrad(x).map(Math.abs))).toBeLessThan(1e-5);
      expect(rosenbrockF(x)).toBeGreaterThan(3.7);
      expect(x[0]).toBeLessThan(-0.7);
      expect(r.check.passed).toBe(false);
      expect(r.check.rel_error).toBeGreaterThan(1);
    }
  });

  it('not converged within max_iterations is a SolverFailure (500)', () => {
    const inputs = opt.resolve({ max_iterations: 5 });
    expect(() => opt.run(inputs)).toThrow(SolverFailure);
    try {
      opt.run(inputs);
    } catch (e) {
      expect((e as SolverFailure).status).toBe(500);
      expect((e as SolverFailure).code).toBe('SVC_SOLVER_ERROR');
    }
  });

  it('Nelder–Mead out of iterations: SolverFailure naming the method, the reason and the remedy', () => {
    let err: SolverFailure | undefined;
    try {
      solve({ method: 'nelder_mead', dimension: 5, max_iterations: 50 });
    } catch (e) {
      err = e as SolverFailure;
    }
    expect(err).toBeInstanceOf(SolverFailure);
    expect(err!.status).toBe(500);
    expect(err!.code).toBe('SVC_SOLVER_ERROR');
    expect(err!.message).toMatch(/nelder_mead.*max_iterations = 50.*raise max_iterations/);
    expect(err!.details).toMatchObject({ reason: 'max_iterations', method: 'nelder_mead', iterations: 50, max_iterations: 50 });
  });
});

describe('opt: quadratic', () => {
  it('default A, b: f* = −½ bᵀA⁻¹b = −431/168', () => {
    // Solved by hand (substitution): x* = (13/84, 8/21, 59/42), bᵀx* = 431/84.
    const r = solve({ problem: 'quadratic' });
    const x = r.outputs.x as number[];
    expect(x[0]).toBeCloseTo(13 / 84, 11);
    expect(x[1]).toBeCloseTo(8 / 21, 11);
    expect(x[2]).toBeCloseTo(59 / 42, 11);
    expect(r.value).toBeCloseTo(-431 / 168, 12);
    expect(r.unit).toBe('1');
    expect(r.check.passed).toBe(true);
    expect(r.check.reference).toBeCloseTo(-431 / 168, 13);
  });

  it('a diagonal 2-D system and a 4-D system by BFGS', () => {
    const r = solve({
      problem: 'quadratic',
      matrix: [
        [2, 0],
        [0, 8],
      ],
      vector: [2, 4],
    });
    expect(r.outputs.x as number[]).toHaveLength(2);
    expect((r.outputs.x as number[])[0]).toBeCloseTo(1, 10);
    expect((r.outputs.x as number[])[1]).toBeCloseTo(0.5, 10);
    expect(r.value).toBeCloseTo(-2, 12);
    expect(r.check.passed).toBe(true);

    // Tridiagonal [2, −1] (1-D Laplacian), b = (1, 0, 0, 1): x* = (1, 1, 1, 1), f* = −1.
    const lap = [
      [2, -1, 0, 0],
      [-1, 2, -1, 0],
      [0, -1, 2, -1],
      [0, 0, -1, 2],
    ];
    const r2 = solve({ problem: 'quadratic', matrix: lap, vector: [1, 0, 0, 1] });
    for (const xi of r2.outputs.x as number[]) expect(xi).toBeCloseTo(1, 10);
    expect(r2.value).toBeCloseTo(-1, 12);
    expect(r2.check.passed).toBe(true);
  });

  it('Nelder–Mead at the defaults (gtol 1e-10) converges on the default system: f* = −431/168, x* = (13/84, 8/21, 59/42)', () => {
    const inputs = opt.resolve({ problem: 'quadratic', method: 'nelder_mead' });
    expect(inputs.gtol).toBe(1e-10);
    const r = opt.run(inputs);
    // f is flat to second order at x*: f to rounding level, x only to ~√ε (what comparing f values can resolve).
    expect(Math.abs(r.value - -431 / 168) / (431 / 168)).toBeLessThan(1e-14);
    const x = r.outputs.x as number[];
    const xStar = [13 / 84, 8 / 21, 59 / 42];
    for (let i = 0; i < 3; i++) expect(Math.abs(x[i]! - xStar[i]!)).toBeLessThan(1e-7);
    // ‖∇f‖∞ = ‖Ax − b‖∞ is reported honestly; 1e-10 is below what f's rounding lets a simplex resolve.
    const A = [
      [4, 1, 0],
      [1, 3, 0.5],
      [0, 0.5, 2],
    ];
    const b = [1, 2, 3];
    const residual = Math.max(...A.map((row, i) => Math.abs(row.reduce((s, a, j) => s + a * x[j]!, 0) - b[i]!)));
    expect(r.outputs.gradient_norm as number).toBeCloseTo(residual, 12);
    expect(residual).toBeLessThan(1e-6);
    expect(r.outputs.iterations as number).toBeLessThan(1000);
    expect(r.check.passed).toBe(true);
    expect(r.check.rel_error).toBeLessThan(1e-14);
  });

  it('Nelder–Mead with a reachable gtol stops on it', () => {
    const r = solve({
      problem: 'quadratic',
      matrix: [
        [2, 0],
        [0, 8],
      ],
      vector: [2, 4],
      method: 'nelder_mead',
      gtol: 1e-6,
    });
    expect(r.value).toBeCloseTo(-2, 10);
    expect(r.outputs.gradient_norm as number).toBeLessThan(1e-6);
    expect(r.check.passed).toBe(true);
  });

  it('Nelder–Mead without a gradient (central differences only for the certification) on a 4-D system', () => {
    // Tridiagonal [2, −1], b = (1, 0, 0, 1): x* = (1, 1, 1, 1), f* = −1.
    const lap = [
      [2, -1, 0, 0],
      [-1, 2, -1, 0],
      [0, -1, 2, -1],
      [0, 0, -1, 2],
    ];
    const b = [1, 0, 0, 1];
    const f = (x: Float64Array): number => {
      let s = 0;
      for (let i = 0; i < 4; i++) s += x[i]! * (0.5 * lap[i]!.reduce((t, a, j) => t + a * x[j]!, 0) - b[i]!);
      return s;
    };
    const r = nelderMead(f, [0, 0, 0, 0], { maxIterations: 10000, gtol: 1e-10 });
    expect(r.converged).toBe(true);
    expect(r.reason).toBe('simplex');
    expect(Math.abs(r.f + 1)).toBeLessThan(1e-14);
    for (const xi of r.x) expect(Math.abs(xi - 1)).toBeLessThan(1e-7);
  });

  it('b = 0 cannot be certified relatively: refused check', () => {
    const r = solve({
      problem: 'quadratic',
      matrix: [
        [1, 0],
        [0, 1],
      ],
      vector: [0, 0],
    });
    expect(r.value).toBe(0);
    expect(r.check.passed).toBe(false);
    expect(r.check.refused).toMatch(/b = 0/);
  });
});

describe('opt: brachistochrone', () => {
  it('defaults: discrete descent time just above the cycloid time (X = Y = 1 m)', () => {
    const inputs = opt.resolve({ problem: 'brachistochrone' });
    expect(inputs).toEqual({
      problem: 'brachistochrone',
      method: 'bfgs',
      max_iterations: 10000,
      gtol: 1e-10,
      horizontal_m: 1,
      drop_m: 1,
      gravity_m_s2: 9.80665,
      segments: 50,
    });
    const r = opt.run(inputs);
    const tStar = cycloidReference(1, 1, 9.80665);
    expect(tStar).toBeCloseTo(0.5829954, 6);
    expect(r.unit).toBe('s');
    // Any polyline is an admissible curve, so it cannot beat the cycloid.
    expect(r.value).toBeGreaterThan(tStar);
    expect((r.value - tStar) / tStar).toBeLessThan(1e-4);
    expect(r.check.passed).toBe(true);
    expect(r.check.reference).toBeCloseTo(tStar, 12);
    const heights = r.outputs.x as number[];
    const axis = r.outputs.node_x_m as number[];
    expect(heights).toHaveLength(49);
    expect(axis).toHaveLength(49);
    for (const y of heights) expect(y).toBeLessThan(0);
    expect(r.outputs.gradient_norm as number).toBeLessThan(1e-10);
  });

  it('a long shallow track (X/Y = 10) dips below the end point; a steep one (X/Y = 0.1)', () => {
    const shallow = solve({ problem: 'brachistochrone', horizontal_m: 10, drop_m: 1 });
    const tShallow = cycloidReference(10, 1, 9.80665);
    expect(Math.abs(shallow.value - tShallow) / tShallow).toBeLessThan(1e-3);
    expect(shallow.value).toBeGreaterThan(tShallow);
    expect(Math.min(...(shallow.outputs.x as number[]))).toBeLessThan(-1);
    expect(shallow.check.passed).toBe(true);

    const steep = solve({ problem: 'brachistochrone', horizontal_m: 0.5, drop_m: 5, gravity_m_s2: 3.71, segments: 80 });
    const tSteep = cycloidReference(0.5, 5, 3.71);
    expect(Math.abs(steep.value - tSteep) / tSteep).toBeLessThan(1e-4);
    expect(steep.check.passed).toBe(true);
  });
});

describe('opt: input validation', () => {
  it('rejects unknown keys, wrong types, out-of-range values and keys of another problem', () => {
    expectInputError({ bogus: 1 }, 'bogus');
    expectInputError({ problem: 5 }, 'problem');
    expectInputError({ problem: 'knapsack' }, 'problem');
    expectInputError({ dimension: 51 }, 'dimension');
    expectInputError({ dimension: 1 }, 'dimension');
    expectInputError({ dimension: 3, x0: [1, 2] }, 'x0');
    // A start where f overflows has nowhere to descend from (it was a 500 "f is not finite at the starting point").
    expectInputError({ x0: [1e300, 1] }, 'x0', { reason: /not finite at x0/ });
    expectInputError({ problem: 'quadratic', matrix: [[1e300]], vector: [1], x0: [1e10] }, 'x0', { reason: /not finite at x0/ });
    expectInputError({ segments: 50 }, 'segments');
    expectInputError(
      {
        problem: 'quadratic',
        matrix: [
          [1, 2],
          [2, 1],
        ],
        vector: [1, 1],
      },
      'matrix',
    );
    expectInputError(
      {
        problem: 'quadratic',
        matrix: [
          [1, 0.5],
          [0.4, 1],
        ],
        vector: [1, 1],
      },
      'matrix.1.0',
    );
    expectInputError(
      {
        problem: 'quadratic',
        matrix: [
          [1, 0],
          [0, 1],
        ],
        vector: [1, 1, 1],
      },
      'vector',
    );
    expectInputError({ problem: 'brachistochrone', method: 'nelder_mead' }, 'method');
    expectInputError({ problem: 'brachistochrone', horizontal_m: 20, drop_m: 1 }, 'horizontal_m');
    expectInputError({ problem: 'brachistochrone', segments: 9 }, 'segments');
    expectInputError({ gtol: 0 }, 'gtol');
  });

  it('work limit: unknowns² × max_iterations', () => {
    expectInputError({ problem: 'brachistochrone', segments: 400, max_iterations: 100000 }, 'max_iterations');
    // 399² × 10 000 = 1.59e9 > 4e8: a run that spends that budget took 14 s here; 2500 iterations fit (it converges in ~1300).
    expectInputError({ problem: 'brachistochrone', segments: 400 }, 'max_iterations');
    expect(opt.resolve({ problem: 'brachistochrone', segments: 400, max_iterations: 2500 }).max_iterations).toBe(2500);
    expectInputError({ problem: 'brachistochrone', segments: 400, max_iterations: 2600 }, 'max_iterations');
  });
});

describe('opt: determinism and the gate', () => {
  it('two runs give identical bits', () => {
    const cases = [
      {},
      { problem: 'quadratic' },
      { problem: 'brachistochrone' },
      { problem: 'quadratic', method: 'nelder_mead' },
      { method: 'nelder_mead', dimension: 5 },
      { method: 'nelder_mead', dimension: 8 },
    ];
    for (const raw of cases) {
      const a = solve(raw);
      const b = solve(raw);
      expect(Object.is(a.value, b.value)).toBe(true);
      expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
    }
  });

  it('a 1 % error in the compared quantity fails the gate', () => {
    for (const raw of [{}, { problem: 'quadratic' }, { problem: 'brachistochrone' }]) expectGateRefusesPerturbed(solve(raw));
  });
});
