// `grid` — DC power flow (solvers.md §3.14): lossless DC approximation P = Bθ in per unit, slack row and
// column removed, solved by Cholesky; line flows (θ_i − θ_j)/x_ij · base. The check re-derives Kirchhoff's
// current law at every bus from the flows alone.
import { z } from 'zod';
import { cholesky, choleskySolve } from '../numerics/linalg.js';
import { InputError, SolverFailure } from './errors.js';
import type { InputSpec, SolverDef, SolverOutput } from './types.js';
import { makeCheck, numIn, parseInputs } from './util.js';

export interface GridLine {
  from: number;
  to: number;
  reactance_pu: number;
}

export interface GridInputs extends Record<string, unknown> {
  buses: number;
  lines: GridLine[];
  injections_MW: number[];
  slack: number;
  base_MVA: number;
}

const DEFAULT_LINES: GridLine[] = [
  { from: 0, to: 1, reactance_pu: 0.06 },
  { from: 0, to: 2, reactance_pu: 0.24 },
  { from: 1, to: 2, reactance_pu: 0.18 },
  { from: 1, to: 3, reactance_pu: 0.18 },
  { from: 1, to: 4, reactance_pu: 0.12 },
  { from: 2, to: 3, reactance_pu: 0.03 },
  { from: 3, to: 4, reactance_pu: 0.24 },
];
const DEFAULT_INJECTIONS = [0, 40, -45, -40, -60];
const MAX_BUSES = 500;
const MAX_LINES = 2000;

const lineSchema = z
  .object({
    from: z
      .number()
      .int()
      .min(0)
      .max(MAX_BUSES - 1),
    to: z
      .number()
      .int()
      .min(0)
      .max(MAX_BUSES - 1),
    reactance_pu: numIn(1e-6, 1e3),
  })
  .strict();

/** An injection: 0, or 1e-9 … 1e7 MW in magnitude (a milliwatt to several times the world's generation). */
const injection = () => numIn(-1e7, 1e7).refine((p) => p === 0 || Math.abs(p) >= 1e-9, 'must be 0 or have magnitude 1e-9 … 1e7 MW');

const schema = z
  .object({
    buses: z.number().int().min(2).max(MAX_BUSES).optional(),
    lines: z.array(lineSchema).min(1).max(MAX_LINES).optional(),
    // Finite ranges (solvers.md had "> 0" and none for injections): a subnormal reactance lost positive definiteness
    // (a 500), a subnormal base or injection made the flows or the KCL normalisation NaN.
    injections_MW: z.array(injection()).min(2).max(MAX_BUSES).optional(),
    slack: z
      .number()
      .int()
      .min(0)
      .max(MAX_BUSES - 1)
      .optional(),
    base_MVA: numIn(1e-3, 1e6).optional(),
  })
  .strict();

const inputs: InputSpec[] = [
  { key: 'buses', unit: '1', default: 5, range: '2 … 500' },
  { key: 'lines', unit: '', default: DEFAULT_LINES, range: '[{from, to, reactance_pu}] (0-based buses), ≤ 2000, reactance_pu 1e-6 … 1e3, network connected' },
  { key: 'injections_MW', unit: 'MW', default: DEFAULT_INJECTIONS, range: 'length = buses (the slack entry is ignored); each 0 or 1e-9 ≤ |P| ≤ 1e7' },
  { key: 'slack', unit: '1', default: 0, range: '0 … buses−1' },
  { key: 'base_MVA', unit: 'MVA', default: 100, range: '1e-3 … 1e6' },
];

function resolve(raw: unknown): GridInputs {
  const p = parseInputs(schema, raw);
  const buses = p.buses ?? 5;
  const lines = p.lines ?? DEFAULT_LINES.map((l) => ({ ...l }));
  const injections = p.injections_MW ?? [...DEFAULT_INJECTIONS];
  const slack = p.slack ?? 0;
  const baseMVA = p.base_MVA ?? 100;
  if (injections.length !== buses) {
    throw new InputError('injections_MW', `length must equal buses (${buses})`, { length: buses });
  }
  if (slack >= buses) throw new InputError('slack', `must be a bus index 0 … ${buses - 1}`, { min: 0, max: buses - 1 });
  lines.forEach((line, i) => {
    for (const end of ['from', 'to'] as const) {
      if (line[end] >= buses) throw new InputError(`lines.${i}.${end}`, `bus index must be 0 … ${buses - 1}`, { min: 0, max: buses - 1 });
    }
    if (line.from === line.to) throw new InputError(`lines.${i}.to`, 'a line must join two different buses', null);
  });
  // Connectivity by union–find: the reduced B matrix is singular for a disconnected network.
  const parent = Array.from({ length: buses }, (_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) {
      parent[i] = parent[parent[i]!]!;
      i = parent[i]!;
    }
    return i;
  };
  for (const line of lines) parent[root(line.from)] = root(line.to);
  const slackRoot = root(slack);
  for (let bus = 0; bus < buses; bus++) {
    if (root(bus) !== slackRoot) {
      throw new InputError('lines', `network is disconnected: bus ${bus} is not connected to the slack bus ${slack}`, 'connected network');
    }
  }
  return { buses, lines, injections_MW: injections, slack, base_MVA: baseMVA };
}

function run(inp: GridInputs): SolverOutput {
  const { buses, lines, injections_MW: injections, slack, base_MVA: base } = inp;
  // Reduced index of each non-slack bus (−1 for the slack).
  const reduced = new Int32Array(buses);
  for (let bus = 0, k = 0; bus < buses; bus++) reduced[bus] = bus === slack ? -1 : k++;
  const m = buses - 1;
  const B: number[][] = Array.from({ length: m }, () => new Array<number>(m).fill(0));
  for (const line of lines) {
    const b = 1 / line.reactance_pu;
    const i = reduced[line.from]!;
    const j = reduced[line.to]!;
    if (i >= 0) B[i]![i]! += b;
    if (j >= 0) B[j]![j]! += b;
    if (i >= 0 && j >= 0) {
      B[i]![j]! -= b;
      B[j]![i]! -= b;
    }
  }
  const P = new Array<number>(m);
  for (let bus = 0; bus < buses; bus++) if (bus !== slack) P[reduced[bus]!] = injections[bus]! / base;
  const L = cholesky(B);
  if (!L) throw new SolverFailure('reduced susceptance matrix is not positive definite', { buses, lines: lines.length });
  const thetaReduced = choleskySolve(L, P);
  const angles = new Array<number>(buses);
  for (let bus = 0; bus < buses; bus++) angles[bus] = bus === slack ? 0 : thetaReduced[reduced[bus]!]!;
  const flows = lines.map((line) => ((angles[line.from]! - angles[line.to]!) / line.reactance_pu) * base);

  // The slack injection balances the others (its given injection is ignored).
  let others = 0;
  for (let bus = 0; bus < buses; bus++) if (bus !== slack) others += injections[bus]!;
  const slackInjection = -others;
  const balanced = injections.map((v, bus) => (bus === slack ? slackInjection : v));

  // KCL from the flows alone: Σ outgoing flow − injection at every bus.
  const netOut = new Float64Array(buses);
  lines.forEach((line, i) => {
    netOut[line.from] = netOut[line.from]! + flows[i]!;
    netOut[line.to] = netOut[line.to]! - flows[i]!;
  });
  let scale = 0;
  for (const v of balanced) scale = Math.max(scale, Math.abs(v));
  // With no injection at all every flow is 0; compare on the base power instead of dividing by zero.
  if (scale === 0) scale = base;
  let worstBus = 0;
  let worstResidual = 0;
  for (let bus = 0; bus < buses; bus++) {
    const residual = netOut[bus]! - balanced[bus]!;
    if (Math.abs(residual) > Math.abs(worstResidual)) {
      worstResidual = residual;
      worstBus = bus;
    }
  }
  // computed/reference are offset by max |injection| so that rel_error = |residual| / max |injection| (§3.14).
  const check = makeCheck(
    'kirchhoff_current_law',
    `max |injection| + (Σ outgoing flow − injection) at the worst bus (${worstBus}) [MW]`,
    scale + worstResidual,
    scale,
  );

  let maxFlow = 0;
  for (const f of flows) maxFlow = Math.max(maxFlow, Math.abs(f));
  const loadingOrder = flows.map((_, i) => i).sort((a, b) => Math.abs(flows[b]!) - Math.abs(flows[a]!) || a - b);

  return {
    mode: null,
    value: maxFlow,
    unit: 'MW',
    output_class: 'scalar',
    rule8: null,
    rule8_array: null,
    outputs: {
      angles_rad: angles,
      bus_index: angles.map((_, i) => i),
      flows_MW: flows,
      line_index: flows.map((_, i) => i),
      slack_injection_MW: slackInjection,
      loading_order: loadingOrder,
      kcl_max_residual_MW: Math.abs(worstResidual),
    },
    check,
  };
}

export const grid: SolverDef<GridInputs> = {
  id: 'grid',
  kind: 'power-grid DC flow',
  endpoint: '/api/svc/grid',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs,
  schema,
  resolve,
  run,
};
