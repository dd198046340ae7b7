// The quantity a reactor watches for drift, per stateful solver: a conserved energy or invariant where the solver has
// one (telemetry reports its drift from the start), none where it has not (lorenz is chaotic, kalman is a filter).
// Pure: read from a sealed step's value, outputs and state, and the reactor's resolved inputs.

export interface InvariantReading {
  name: string;
  unit: string;
  /** The invariant at the reactor's start (before its first step). */
  initial: number;
  /** The invariant after this step. */
  value: number;
}

export interface StepView {
  value: number;
  outputs: Record<string, unknown>;
  state: unknown;
}

type Reader = (step: StepView, inputs: Record<string, unknown>) => InvariantReading | null;

const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);
const rec = (x: unknown): Record<string, unknown> => (x && typeof x === 'object' ? (x as Record<string, unknown>) : {});

/** Lotka–Volterra's conserved quantity V = δx − γ ln x + βy − α ln y. */
function lotkaVolterra(x: number, y: number, i: Record<string, unknown>): number | null {
  const a = num(i.alpha_per_day);
  const b = num(i.beta_per_day);
  const g = num(i.gamma_per_day);
  const d = num(i.delta_per_day);
  if (a === null || b === null || g === null || d === null || x <= 0 || y <= 0) return null;
  return d * x - g * Math.log(x) + b * y - a * Math.log(y);
}

const READERS: Record<string, Reader> = {
  // Total energy at the end of the run; the first run's initial energy is the start.
  multibody: (s) => {
    const e0 = num(s.outputs.initial_energy_J);
    return e0 === null ? null : { name: 'total_energy', unit: 'J', initial: e0, value: s.value };
  },
  evolve: (s) => {
    const e0 = num(s.outputs.initial_energy_J);
    return e0 === null ? null : { name: 'total_energy', unit: 'J', initial: e0, value: s.value };
  },
  action: (s) => {
    const e = num(s.outputs.energy_J);
    return e === null ? null : { name: 'energy', unit: 'J', initial: e, value: e };
  },
  // S + E + I + R = 1 (fractions of the population).
  epi: (s) => {
    const st = rec(s.state);
    const total = ['S', 'E', 'I', 'R'].reduce((acc, k) => acc + (num(st[k]) ?? 0), 0);
    return { name: 'population_fraction', unit: '1', initial: 1, value: total };
  },
  predator_prey: (s, i) => {
    const st = rec(s.state);
    const x = num(st.prey);
    const y = num(st.predators);
    const x0 = num(i.prey0);
    const y0 = num(i.predator0);
    if (x === null || y === null || x0 === null || y0 === null) return null;
    const v = lotkaVolterra(x, y, i);
    const v0 = lotkaVolterra(x0, y0, i);
    return v === null || v0 === null ? null : { name: 'lotka_volterra_invariant', unit: '1', initial: v0, value: v };
  },
};

/** The invariant after a step, or null when the solver has none. */
export function readInvariant(solver: string, step: StepView, inputs: Record<string, unknown>): InvariantReading | null {
  const reader = Object.hasOwn(READERS, solver) ? READERS[solver] : undefined;
  return reader ? reader(step, inputs) : null;
}

/** Relative drift |v − v0| / |v0| (absolute when v0 is 0). */
export function relativeDrift(initial: number, value: number): number {
  const d = Math.abs(value - initial);
  return initial === 0 ? d : d / Math.abs(initial);
}
