// The largest inputs each solver's work limits allow (scripts/bench/solvers.ts --max). Each case fixes the inputs
// that make a run costly (largest grids, longest spans, hardest settings) and names one input to push to the edge
// of what resolve() accepts (up for sizes and spans, down for steps like dt): found by search against the solver's
// own limits, so the cases follow the limits when they change.

/** One maximal case of a solver: `base` fixed, `grow` pushed until resolve() refuses. */
export interface MaxCase {
  solver: string;
  name: string;
  base: Record<string, unknown>;
  /** `start`: where the search starts when neither the base nor the solver's descriptor gives a number. */
  grow?: { key: string; dir: 'up' | 'down'; integer?: boolean; odd?: boolean; start?: number };
}

/** A ring of n atoms of radius r Å (z = 0) with LJ parameters of a carbon-like site. */
function atomRing(n: number, radius: number, z = 0): Record<string, number>[] {
  return Array.from({ length: n }, (_, i) => {
    const a = (2 * Math.PI * i) / n;
    return { x: radius * Math.cos(a), y: radius * Math.sin(a), z, sigma_A: 3.4, epsilon_kJ_mol: 0.36, charge_e: i % 2 === 0 ? 0.1 : -0.1 };
  });
}

/** A receptor of n atoms on a shell (Fibonacci sphere) of radius r Å: a pocket the ligand can enter. */
function atomShell(n: number, radius: number): Record<string, number>[] {
  const golden = Math.PI * (3 - Math.sqrt(5));
  return Array.from({ length: n }, (_, i) => {
    const y = 1 - (2 * (i + 0.5)) / n;
    const r = Math.sqrt(1 - y * y);
    const a = golden * i;
    return { x: radius * r * Math.cos(a), y: radius * y, z: radius * r * Math.sin(a), sigma_A: 3.4, epsilon_kJ_mol: 0.36, charge_e: 0 };
  });
}

/** n bodies of 1e24 kg on circular-ish orbits around a 2e30 kg star (well separated, so the run is regular). */
function starSystem(n: number): Record<string, unknown>[] {
  const G = 6.6743e-11;
  const star = 1.98847e30;
  const bodies: Record<string, unknown>[] = [{ mass_kg: star, position_m: [0, 0, 0], velocity_m_s: [0, 0, 0] }];
  for (let i = 1; i < n; i++) {
    const r = 5e10 + i * 2e10;
    const a = i * 2.399963;
    const v = Math.sqrt((G * star) / r);
    bodies.push({ mass_kg: 1e24, position_m: [r * Math.cos(a), r * Math.sin(a), 0], velocity_m_s: [-v * Math.sin(a), v * Math.cos(a), 0] });
  }
  return bodies;
}

/** A connected grid of n buses and m lines (a ring and chords), injections summing to zero off the slack. */
function powerGrid(n: number, m: number): Record<string, unknown> {
  const lines: { from: number; to: number; reactance_pu: number }[] = [];
  for (let i = 0; i < n; i++) lines.push({ from: i, to: (i + 1) % n, reactance_pu: 0.05 + (i % 7) * 0.01 });
  for (let k = 0; lines.length < m; k++) {
    const from = (k * 37) % n;
    const to = (from + 2 + ((k * 11) % (n - 3))) % n;
    if (from !== to) lines.push({ from, to, reactance_pu: 0.1 + (k % 5) * 0.02 });
  }
  const injections = Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i % 2 === 0 ? 10 : -10));
  return { buses: n, lines, injections_MW: injections, slack: 0 };
}

const reactW = Math.sqrt((2 * 1e-9) / 1);
const tumourL = Math.sqrt(1.5e-11 / 1.4e-7);

export const MAX_CASES: MaxCase[] = [
  { solver: 'action', name: 'near-separatrix', base: { theta0_rad: 3.1 }, grow: { key: 'steps_per_period', dir: 'up', integer: true } },
  { solver: 'evolve', name: '500 atoms', base: { n_cells: 5, cutoff_sigma: 5 }, grow: { key: 'steps', dir: 'up', integer: true } },
  { solver: 'heat', name: '1d', base: { mode: '1d', nx: 1001 }, grow: { key: 't_end_s', dir: 'up' } },
  { solver: 'heat', name: '2d', base: { mode: '2d', nx: 201 }, grow: { key: 't_end_s', dir: 'up' } },
  { solver: 'lorenz', name: 'longest', base: { t_end: 20 }, grow: { key: 'dt', dir: 'down' } },
  { solver: 'wave', name: 'membrane', base: { mode: 'membrane', periods: 2 }, grow: { key: 'nx', dir: 'up', integer: true } },
  { solver: 'wave', name: 'maxwell', base: { mode: 'maxwell', periods: 2 }, grow: { key: 'nx', dir: 'up', integer: true } },
  { solver: 'flow', name: 'n128', base: { n: 128 }, grow: { key: 't_end_s', dir: 'up' } },
  { solver: 'fracture', name: 'plate', base: { mode: 'plate', n: 100, horizon_factor: 5 }, grow: { key: 't_end_s', dir: 'up', start: 1e-5 } },
  { solver: 'fracture', name: 'bar', base: { mode: 'bar', n: 5000, horizon_cells: 6 }, grow: { key: 't_end_s', dir: 'up', start: 2e-4 } },
  { solver: 'epi', name: 'seir', base: { model: 'seir', t_end_days: 1e5 }, grow: { key: 'dt_days', dir: 'down' } },
  { solver: 'quant', name: 'widest', base: { nx: 20000 }, grow: { key: 'nt', dir: 'up', integer: true } },
  { solver: 'zeta', name: 'highest', base: { n: 10000, count: 20 } },
  {
    solver: 'sat',
    name: 'dpll at the threshold',
    base: { method: 'dpll', n_vars: 1000, n_clauses: 4260 },
    grow: { key: 'max_decisions', dir: 'up', integer: true },
  },
  {
    solver: 'sat',
    name: 'walksat at the threshold',
    base: { method: 'walksat', n_vars: 1000, n_clauses: 4260 },
    grow: { key: 'max_flips', dir: 'up', integer: true },
  },
  { solver: 'gauge', name: 'L24', base: { L: 24, therm_sweeps: 5000, target_rel_error: 1e-5 }, grow: { key: 'max_sweeps', dir: 'up', integer: true } },
  { solver: 'fea', name: 'static', base: { analysis: 'static', elements: 1000 } },
  { solver: 'fea', name: 'modal', base: { analysis: 'modal', elements: 1000, mode_number: 5 } },
  { solver: 'grid', name: '500 buses', base: powerGrid(500, 2000) },
  { solver: 'device', name: 'pn1d', base: { mode: 'pn1d' }, grow: { key: 'cells', dir: 'up', integer: true } },
  { solver: 'device', name: 'pn2d', base: { mode: 'pn2d', nx: 200, ny: 200 } },
  { solver: 'react', name: 'finest', base: { length_m: 500 * reactW, cfl: 0.05 }, grow: { key: 'nx', dir: 'up', integer: true, start: 4001 } },
  { solver: 'tumour', name: 'finest', base: { length_m: 500 * tumourL, cfl: 0.05 }, grow: { key: 'nx', dir: 'up', integer: true, start: 20001 } },
  {
    solver: 'opt',
    name: 'rosenbrock nelder_mead',
    base: { problem: 'rosenbrock', dimension: 50, method: 'nelder_mead', max_iterations: 100000, gtol: 1e-300 },
  },
  { solver: 'opt', name: 'rosenbrock bfgs', base: { problem: 'rosenbrock', dimension: 50, method: 'bfgs', max_iterations: 100000, gtol: 1e-300 } },
  {
    solver: 'opt',
    name: 'brachistochrone',
    base: { problem: 'brachistochrone', segments: 400, gtol: 1e-300 },
    grow: { key: 'max_iterations', dir: 'up', integer: true },
  },
  // 256² takes ~500 steps a period: even one period (3.3e7) is past the work limit, so the finest square grid that runs is 128².
  { solver: 'climate', name: '128²', base: { nx: 128, ny: 128, periods: 1 }, grow: { key: 'periods', dir: 'up' } },
  {
    solver: 'dock',
    name: '1000 × 10 atoms',
    base: { receptor: atomShell(1000, 30), ligand: atomRing(10, 1.5), n_starts: 8, box_center_A: [0, 0, 0], box_half_A: 30 },
    grow: { key: 'mc_steps', dir: 'up', integer: true },
  },
  { solver: 'multibody', name: '100 bodies', base: { bodies: starSystem(100), t_end_s: 3.15576e7 }, grow: { key: 'dt_s', dir: 'down' } },
  // The fewest bodies: a step's fixed part outweighs its forces.
  { solver: 'multibody', name: '2 bodies', base: { bodies: starSystem(2), t_end_s: 3.15576e7 }, grow: { key: 'dt_s', dir: 'down' } },
  { solver: 'predator_prey', name: 'longest', base: { max_days: 1e5 }, grow: { key: 'dt_days', dir: 'down' } },
  { solver: 'kalman', name: 'constant_velocity', base: { model: 'constant_velocity', steps: 100000 } },
  { solver: 'quantum_levels', name: 'harmonic', base: { potential: 'harmonic', grid_points: 50000, level: 20 } },
  { solver: 'quantum_levels', name: 'finite_well', base: { potential: 'finite_well' }, grow: { key: 'cells_in_well', dir: 'up', integer: true } },
  { solver: 'quantum_levels', name: 'morse', base: { potential: 'morse', grid_points: 50000 } },
  { solver: 'acoustic', name: 'cylinder', base: { shape: 'cylinder', cells: 100000, mode: 20 } },
  { solver: 'acoustic', name: 'cone', base: { shape: 'cone', cells: 100000, mode: 20 } },
  { solver: 'buckling', name: 'finest', base: { elements: 200, mode: 5 } },
  { solver: 'blackhole', name: 'deepest', base: { r0_rs: 1e6, r_end_rs: 1e-3 }, grow: { key: 'steps', dir: 'up', integer: true } },
];

/** What resolve() says of a candidate: accepted, or refused with the limit it names (its `allowed.max`). */
type Verdict = { ok: true; resolved: Record<string, unknown> } | { ok: false; limit: number | null; message: string };

/**
 * The extreme value of `grow.key` resolve() accepts with `base` fixed: from the default (the base's, else the
 * descriptor's `defaultOf`, else `grow.start`), doubling (or halving) until refused — or, when the default itself is
 * refused (a larger grid makes the default span too much work), the other way until accepted — then bisection
 * (integers exactly, numbers to 1e-4 relative). Returns the inputs, the limit the closest refusal named, and its text.
 */
/** The numeric defaults of a solver's input descriptors (where the search starts when the base gives none). */
export function defaultOf(descriptors: { key: string; default: unknown }[]): (key: string) => number | null {
  return (key) => {
    const d = descriptors.find((i) => i.key === key)?.default;
    return typeof d === 'number' ? d : null;
  };
}

export function maximise(
  resolve: (raw: Record<string, unknown>) => Record<string, unknown>,
  c: MaxCase,
  defaultOf: (key: string) => number | null = () => null,
): { inputs: Record<string, unknown>; workLimit: number | null; refusal: string | null } {
  const judge = (raw: Record<string, unknown>): Verdict => {
    try {
      return { ok: true, resolved: resolve(raw) };
    } catch (err) {
      const allowed = (err as { allowed?: { max?: unknown } }).allowed;
      return { ok: false, limit: typeof allowed?.max === 'number' ? allowed.max : null, message: (err as Error).message };
    }
  };
  if (!c.grow) {
    const first = judge(c.base);
    if (!first.ok) throw new Error(`${c.solver} ${c.name}: the base inputs are refused: ${first.message}`);
    return { inputs: c.base, workLimit: null, refusal: null };
  }
  const { key, dir, integer, odd } = c.grow;
  const fit = (v: number): number => {
    let x = integer || odd ? Math.round(v) : v;
    if (odd && x % 2 === 0) x += dir === 'up' ? -1 : 1;
    return x;
  };
  const at = (v: number) => judge({ ...c.base, [key]: fit(v) });
  const first = judge(c.base);
  const fromBase = first.ok ? Number(first.resolved[key]) : NaN;
  const start = typeof c.base[key] === 'number' ? (c.base[key] as number) : Number.isFinite(fromBase) ? fromBase : (defaultOf(key) ?? c.grow.start ?? NaN);
  if (!Number.isFinite(start) || start <= 0) throw new Error(`${c.solver} ${c.name}: no numeric start for ${key}`);
  const outward = (v: number): number => (dir === 'up' ? v * 2 : v / 2);
  const inward = (v: number): number => (dir === 'up' ? v / 2 : v * 2);
  let good = NaN;
  let bad = NaN;
  let limit: number | null = null;
  let refusal: string | null = null;
  const refused = (v: Verdict): void => {
    if (!v.ok) {
      limit = v.limit;
      refusal = v.message;
    }
  };
  const s0 = at(start);
  if (s0.ok) {
    good = start;
    for (let i = 0; i < 200; i++) {
      const next = outward(good);
      const v = at(next);
      if (v.ok) good = next;
      else {
        bad = next;
        refused(v);
        break;
      }
    }
    if (Number.isNaN(bad)) return { inputs: { ...c.base, [key]: fit(good) }, workLimit: null, refusal: null };
  } else {
    bad = start;
    refused(s0);
    for (let i = 0; i < 200; i++) {
      const next = inward(bad);
      const v = at(next);
      if (v.ok) {
        good = next;
        break;
      }
      bad = next;
      refused(v);
    }
    if (Number.isNaN(good)) throw new Error(`${c.solver} ${c.name}: no value of ${key} is accepted: ${refusal}`);
  }
  for (let i = 0; i < 200; i++) {
    if (integer ? Math.abs(fit(bad) - fit(good)) <= 1 : Math.abs(bad - good) <= 1e-4 * Math.abs(good)) break;
    const mid = integer ? Math.floor((good + bad) / 2) : Math.sqrt(good * bad) || (good + bad) / 2;
    if (fit(mid) === fit(good) || fit(mid) === fit(bad)) break;
    const v = at(mid);
    if (v.ok) good = mid;
    else {
      bad = mid;
      refused(v);
    }
  }
  return { inputs: { ...c.base, [key]: fit(good) }, workLimit: limit, refusal };
}
