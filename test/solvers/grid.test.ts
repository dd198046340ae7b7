import { describe, expect, it } from 'vitest';
import { grid, type GridLine } from '../../src/solvers/grid.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

function solve(raw: unknown) {
  return grid.run(grid.resolve(raw));
}

const expectInputError = inputErrorOnResolve(grid, { status: 400 });

/**
 * Reference DC power flow by Gaussian elimination with partial pivoting on the full Laplacian with the slack
 * equation replaced by θ_slack = 0 (a different elimination and a different matrix from the solver's Cholesky).
 */
function referenceFlows(buses: number, lines: GridLine[], injections: number[], slack: number, base: number): number[] {
  const A = Array.from({ length: buses }, () => new Array<number>(buses + 1).fill(0));
  for (const l of lines) {
    const b = 1 / l.reactance_pu;
    A[l.from]![l.from]! += b;
    A[l.to]![l.to]! += b;
    A[l.from]![l.to]! -= b;
    A[l.to]![l.from]! -= b;
  }
  for (let i = 0; i < buses; i++) A[i]![buses] = injections[i]! / base;
  A[slack] = new Array<number>(buses + 1).fill(0);
  A[slack]![slack] = 1;
  for (let c = 0; c < buses; c++) {
    let piv = c;
    for (let r = c + 1; r < buses; r++) if (Math.abs(A[r]![c]!) > Math.abs(A[piv]![c]!)) piv = r;
    [A[c], A[piv]] = [A[piv]!, A[c]!];
    for (let r = 0; r < buses; r++) {
      if (r === c) continue;
      const f = A[r]![c]! / A[c]![c]!;
      for (let k = c; k <= buses; k++) A[r]![k]! -= f * A[c]![k]!;
    }
  }
  const theta = A.map((row, i) => row[buses]! / row[i]!);
  return lines.map((l) => ((theta[l.from]! - theta[l.to]!) / l.reactance_pu) * base);
}

describe('grid: DC power flow', () => {
  it('defaults: the 5-bus network; flows match an independent elimination; KCL holds', () => {
    const inputs = grid.resolve({});
    expect(inputs.buses).toBe(5);
    expect(inputs.lines).toHaveLength(7);
    expect(inputs.injections_MW).toEqual([0, 40, -45, -40, -60]);
    expect(inputs.slack).toBe(0);
    expect(inputs.base_MVA).toBe(100);
    const r = grid.run(inputs);
    const ref = referenceFlows(5, inputs.lines, inputs.injections_MW, 0, 100);
    const flows = r.outputs.flows_MW as number[];
    expect(flows).toHaveLength(7);
    flows.forEach((f, i) => expect(f).toBeCloseTo(ref[i]!, 9));
    // The largest flow is on line 0–1: 480/7 MW (exact rational solution of this network).
    expect(r.value).toBeCloseTo(480 / 7, 10);
    expect(r.unit).toBe('MW');
    expect(r.mode).toBeNull();
    expect(r.output_class).toBe('scalar');
    expect(r.rule8).toBeNull();
    expect(r.rule8_array).toBeNull();
    // The slack supplies the total load: 45 + 40 + 60 − 40.
    expect(r.outputs.slack_injection_MW).toBeCloseTo(105, 12);
    expect((r.outputs.angles_rad as number[])[0]).toBe(0);
    expect(r.outputs.angles_rad as number[]).toHaveLength(5);
    expect(r.outputs.loading_order).toEqual([0, 4, 1, 3, 2, 5, 6]);
    expect(r.check.passed).toBe(true);
    expect(r.check.rel_error).toBeLessThan(1e-12);
  });

  it('two buses: the whole transfer flows on the one line, sign from → to', () => {
    const r = solve({ buses: 2, lines: [{ from: 0, to: 1, reactance_pu: 0.1 }], injections_MW: [999, 50], slack: 0 });
    // Bus 1 injects 50 MW, so 50 MW flow 1 → 0, i.e. −50 in the 0 → 1 direction; θ1 = 0.5 pu × 0.1 = 0.05 rad.
    expect((r.outputs.flows_MW as number[])[0]).toBeCloseTo(-50, 12);
    expect((r.outputs.angles_rad as number[])[1]).toBeCloseTo(0.05, 14);
    expect(r.outputs.slack_injection_MW).toBe(-50);
    expect(r.value).toBeCloseTo(50, 12);
    expect(r.check.passed).toBe(true);
  });

  it('a triangle of equal lines splits 2 : 1 between the direct and the two-line path', () => {
    const lines = [
      { from: 0, to: 1, reactance_pu: 0.1 },
      { from: 1, to: 2, reactance_pu: 0.1 },
      { from: 0, to: 2, reactance_pu: 0.1 },
    ];
    const r = solve({ buses: 3, lines, injections_MW: [0, 0, -90], slack: 0, base_MVA: 50 });
    const flows = r.outputs.flows_MW as number[];
    expect(flows[2]).toBeCloseTo(60, 11);
    expect(flows[0]).toBeCloseTo(30, 11);
    expect(flows[1]).toBeCloseTo(30, 11);
    expect(r.value).toBeCloseTo(60, 11);
    expect(r.outputs.loading_order).toEqual([2, 0, 1]);
    expect(r.check.passed).toBe(true);
  });

  it('a radial feeder: flows are set by KCL alone (subtree sums), whatever the reactances; slack in the middle', () => {
    // Chain 0 – 1 – 2 – 3 – 4 – 5, slack at bus 2.
    const inj = [-10, 25, 0, -30, 12, -7];
    const lines = [0, 1, 2, 3, 4].map((i) => ({ from: i, to: i + 1, reactance_pu: 0.05 + 0.07 * i }));
    const r = solve({ buses: 6, lines, injections_MW: inj, slack: 2 });
    const flows = r.outputs.flows_MW as number[];
    // Left of the slack: flow i → i+1 equals the injections up to i; right: minus those beyond i.
    expect(flows[0]).toBeCloseTo(-10, 11);
    expect(flows[1]).toBeCloseTo(15, 11);
    expect(flows[2]).toBeCloseTo(30 - 12 + 7, 11);
    expect(flows[3]).toBeCloseTo(-12 + 7, 11);
    expect(flows[4]).toBeCloseTo(7, 11);
    expect(r.outputs.slack_injection_MW).toBeCloseTo(10, 12);
    expect((r.outputs.angles_rad as number[])[2]).toBe(0);
    expect(r.check.passed).toBe(true);
  });

  it('parallel lines share by admittance', () => {
    const r = solve({
      buses: 2,
      lines: [
        { from: 0, to: 1, reactance_pu: 0.1 },
        { from: 1, to: 0, reactance_pu: 0.3 },
      ],
      injections_MW: [0, -80],
    });
    const flows = r.outputs.flows_MW as number[];
    expect(flows[0]).toBeCloseTo(60, 11);
    expect(flows[1]).toBeCloseTo(-20, 11);
  });

  it('a 120-bus meshed network agrees with the elimination reference', () => {
    const n = 120;
    const lines: GridLine[] = [];
    for (let i = 1; i < n; i++) lines.push({ from: i - 1, to: i, reactance_pu: 0.05 + 0.01 * (i % 9) });
    for (let i = 0; i + 11 < n; i += 4) lines.push({ from: i, to: i + 11, reactance_pu: 0.2 + 0.01 * (i % 5) });
    const inj = Array.from({ length: n }, (_, i) => ((i * 37) % 23) - 11);
    const r = solve({ buses: n, lines, injections_MW: inj, slack: 17 });
    const ref = referenceFlows(n, lines, inj, 17, 100);
    (r.outputs.flows_MW as number[]).forEach((f, i) => expect(Math.abs(f - ref[i]!)).toBeLessThan(1e-8));
    expect(r.check.passed).toBe(true);
  });

  it('no injection at all: zero flows, the check still certifies', () => {
    const r = solve({ buses: 2, lines: [{ from: 0, to: 1, reactance_pu: 0.2 }], injections_MW: [0, 0] });
    expect(r.value).toBe(0);
    expect(r.check.passed).toBe(true);
  });
});

describe('grid: input validation', () => {
  it('reactances, injections and the base have finite ranges: at the corners a triangle splits as (x1 + x2) : x3', () => {
    // Old code: "> 0" / any — a 5e-324 reactance lost positive definiteness (a 500), a 5e-324 base made the flows NaN.
    for (const x1 of [1e-6, 1e3])
      for (const x3 of [1e-6, 1e3])
        for (const base of [1e-3, 1e6])
          for (const P of [1e-9, 1e7]) {
            const lines = [
              { from: 0, to: 1, reactance_pu: x1 },
              { from: 1, to: 2, reactance_pu: x1 },
              { from: 0, to: 2, reactance_pu: x3 },
            ];
            const r = solve({ buses: 3, lines, injections_MW: [0, 0, -P], slack: 0, base_MVA: base });
            const flows = r.outputs.flows_MW as number[];
            // Current divider: the direct line carries P·(x1 + x2)/(x1 + x2 + x3), the two-line path the rest.
            const direct = (P * 2 * x1) / (2 * x1 + x3);
            expect(Math.abs(flows[2]! - direct) / P).toBeLessThan(1e-12);
            expect(Math.abs(flows[0]! - (P - direct)) / P).toBeLessThan(1e-12);
            expect(r.check.passed).toBe(true);
            expect(Math.abs(r.value - Math.max(direct, P - direct)) / P).toBeLessThan(1e-12);
          }
    expectInputError({ base_MVA: 5e-324 }, 'base_MVA', { allowed: { min: 1e-3, inclusive: true } });
    expectInputError({ base_MVA: 1e300 }, 'base_MVA', { allowed: { max: 1e6, inclusive: true } });
    const line = (x: number) => ({ buses: 2, lines: [{ from: 0, to: 1, reactance_pu: x }], injections_MW: [0, 1] });
    expectInputError(line(5e-324), 'lines.0.reactance_pu', { allowed: { min: 1e-6, inclusive: true } });
    expectInputError(line(1e300), 'lines.0.reactance_pu', { allowed: { max: 1e3, inclusive: true } });
    expectInputError({ buses: 2, lines: [{ from: 0, to: 1, reactance_pu: 0.1 }], injections_MW: [0, 5e-324] }, 'injections_MW.1', {
      reason: 'must be 0 or have magnitude 1e-9 … 1e7 MW',
    });
    expectInputError({ buses: 2, lines: [{ from: 0, to: 1, reactance_pu: 0.1 }], injections_MW: [0, -Number.MAX_VALUE] }, 'injections_MW.1', {
      allowed: { min: -1e7, inclusive: true },
    });
  });

  it('unknown keys, wrong types, out-of-range values', () => {
    expectInputError({ voltage: 1 }, 'voltage');
    expectInputError({ buses: 'five' }, 'buses');
    expectInputError({ buses: 1 }, 'buses');
    expectInputError({ buses: 501 }, 'buses');
    expectInputError({ base_MVA: 0 }, 'base_MVA');
    expectInputError({ lines: [{ from: 0, to: 1, reactance_pu: 0 }] }, 'lines.0.reactance_pu');
    // util.zodIssueToInputError names a nested unknown key by the key alone.
    expectInputError({ lines: [{ from: 0, to: 1, reactance_pu: 0.1, r: 0 }] }, 'lines.0.r');
    expectInputError({ lines: [] }, 'lines');
    const tooMany = Array.from({ length: 2001 }, () => ({ from: 0, to: 1, reactance_pu: 0.1 }));
    expectInputError({ lines: tooMany }, 'lines');
  });

  it('indices, lengths and the slack must fit the bus count; self-loops are refused', () => {
    expectInputError({ buses: 6 }, 'injections_MW');
    expectInputError({ slack: 5 }, 'slack');
    expectInputError({ lines: [{ from: 0, to: 7, reactance_pu: 0.1 }] }, 'lines.0.to');
    expectInputError({ buses: 2, injections_MW: [0, 1], lines: [{ from: 1, to: 1, reactance_pu: 0.1 }] }, 'lines.0.to');
  });

  it('a disconnected network is a 400', () => {
    expectInputError(
      {
        buses: 4,
        injections_MW: [0, 10, -5, -5],
        lines: [
          { from: 0, to: 1, reactance_pu: 0.1 },
          { from: 2, to: 3, reactance_pu: 0.1 },
        ],
      },
      'lines',
    );
    // The default lines do not reach buses 5 … 6 of a 7-bus request.
    expectInputError({ buses: 7, injections_MW: [0, 0, 0, 0, 0, 0, 0] }, 'lines');
  });
});

describe('grid: determinism and the gate', () => {
  it('two runs give identical bits', () => {
    const a = solve({});
    const b = solve({});
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a 1 % error in the compared quantity fails the gate', () => {
    expectGateRefusesPerturbed(solve({}));
  });
});
