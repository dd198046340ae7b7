// `quant` — European option pricing (solvers.md §3.9): the Black–Scholes PDE in x = ln(S/K), Crank–Nicolson
// with a Rannacher start, checked against the Black–Scholes–Merton closed form.
import { z } from 'zod';
import { blackScholes, type OptionType } from '../numerics/black-scholes.js';
import { solveTridiagonal } from '../numerics/linalg.js';
import type { SolverDef, SolverOutput } from './types.js';
import { boundProfile, checkWorkLimit, intIn, makeCheck, numIn, parseInputs, refuseCheck } from './util.js';

/** Grid-node × time-step limit: 2e7 is about a second of single-core work. */
const WORK_LIMIT = 2e7;
/** Below this fraction of spot the price is too small for a 0.1 % relative check to mean anything. */
const FAR_OUT_OF_THE_MONEY = 1e-4;
/** Rannacher start: the first two Crank–Nicolson steps are replaced by four implicit-Euler half steps. */
const RANNACHER_HALF_STEPS = 4;

const schema = z.strictObject({
  option_type: z.enum(['call', 'put']).default('call'),
  // A millionth of a unit to a trillion (solvers.md had "> 0"): a subnormal or ~1e300 price made S = K·e^x, Δ and Γ
  // overflow to NaN. The PDE is in ln(S/K), so anything between is the same computation rescaled.
  spot: numIn(1e-6, 1e12).default(100),
  strike: numIn(1e-6, 1e12).default(100),
  rate: numIn(-0.1, 1).default(0.05),
  volatility: numIn(0.01, 3).default(0.2),
  maturity_years: numIn(1e-3, 50).default(1.0),
  dividend_yield: numIn(0, 1).default(0),
  nx: intIn(100, 20_000).default(1000),
  nt: intIn(10, 10_000).default(500),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be a 3-letter currency code')
    .default('USD'),
});

export type QuantInputs = z.infer<typeof schema>;

export const quant: SolverDef<QuantInputs> = {
  id: 'quant',
  kind: 'option pricing (European)',
  endpoint: '/api/svc/quant',
  catalogue: true,
  modes: null,
  stateful: false,
  inputs: [
    { key: 'option_type', unit: '—', default: 'call', range: 'call, put' },
    { key: 'spot', unit: 'USD', default: 100, range: '1e-6 … 1e12' },
    { key: 'strike', unit: 'USD', default: 100, range: '1e-6 … 1e12' },
    { key: 'rate', unit: '1/yr', default: 0.05, range: '-0.1 … 1' },
    { key: 'volatility', unit: '1/√yr', default: 0.2, range: '0.01 … 3' },
    { key: 'maturity_years', unit: 'yr', default: 1.0, range: '1e-3 … 50' },
    { key: 'dividend_yield', unit: '1/yr', default: 0, range: '0 … 1' },
    { key: 'nx', unit: '1', default: 1000, range: '100 … 20000 (nx × nt ≤ 2e7)' },
    { key: 'nt', unit: '1', default: 500, range: '10 … 10000 (nx × nt ≤ 2e7)' },
    { key: 'currency', unit: '—', default: 'USD', range: 'any 3-letter code (label only)' },
  ],

  schema,
  resolve(raw: unknown): QuantInputs {
    const inputs = parseInputs(schema, raw);
    checkWorkLimit('nt', inputs.nx * inputs.nt, WORK_LIMIT);
    return inputs;
  },

  run(inputs: QuantInputs): SolverOutput {
    const { spot, strike, rate, volatility, maturity_years: T, dividend_yield: q, nx, nt } = inputs;
    const type: OptionType = inputs.option_type;

    // Grid: nx cells centred on ln(S0/K), half-width max(6σ√T, |ln(S0/K)| + 4σ√T).
    const xCentre = Math.log(spot / strike);
    const sigmaSqrtT = volatility * Math.sqrt(T);
    const halfWidth = Math.max(6 * sigmaSqrtT, Math.abs(xCentre) + 4 * sigmaSqrtT);
    const xMin = xCentre - halfWidth;
    const h = (2 * halfWidth) / nx;
    const nodes = nx + 1;
    const x = new Float64Array(nodes);
    for (let j = 0; j < nodes; j++) x[j] = xMin + j * h;
    const sLow = strike * Math.exp(x[0]!);
    const sHigh = strike * Math.exp(x[nx]!);

    // Payoff at τ = 0.
    let V = new Float64Array(nodes);
    for (let j = 0; j < nodes; j++) {
      const s = strike * Math.exp(x[j]!);
      V[j] = Math.max(type === 'call' ? s - strike : strike - s, 0);
    }

    // Dirichlet values at time-to-expiry τ.
    const lowerBoundary = (tau: number) => (type === 'call' ? 0 : Math.max(strike * Math.exp(-rate * tau) - sLow * Math.exp(-q * tau), 0));
    const upperBoundary = (tau: number) => (type === 'call' ? Math.max(sHigh * Math.exp(-q * tau) - strike * Math.exp(-rate * tau), 0) : 0);

    // L V_j = lo V_{j−1} + mid V_j + up V_{j+1} (central differences of ½σ²V_xx + (r − q − ½σ²)V_x − rV).
    const diffusion = 0.5 * volatility * volatility;
    const drift = rate - q - diffusion;
    const lo = diffusion / (h * h) - drift / (2 * h);
    const mid = (-2 * diffusion) / (h * h) - rate;
    const up = diffusion / (h * h) + drift / (2 * h);

    const m = nodes - 2; // interior unknowns
    const sub = new Float64Array(m);
    const diag = new Float64Array(m);
    const sup = new Float64Array(m);
    const rhs = new Float64Array(m);

    // One θ-scheme step of size k from τ to τ + k: (I − θkL)V' = (I + (1−θ)kL)V, boundaries at τ + k.
    const step = (tau: number, k: number, theta: number) => {
      const implicitLo = -theta * k * lo;
      const implicitMid = 1 - theta * k * mid;
      const implicitUp = -theta * k * up;
      const explicitK = (1 - theta) * k;
      const bLowNew = lowerBoundary(tau + k);
      const bHighNew = upperBoundary(tau + k);
      for (let i = 0; i < m; i++) {
        const j = i + 1;
        sub[i] = implicitLo;
        diag[i] = implicitMid;
        sup[i] = implicitUp;
        rhs[i] = V[j]! + explicitK * (lo * V[j - 1]! + mid * V[j]! + up * V[j + 1]!);
      }
      rhs[0] = rhs[0]! - implicitLo * bLowNew;
      rhs[m - 1] = rhs[m - 1]! - implicitUp * bHighNew;
      const interior = solveTridiagonal(sub, diag, sup, rhs);
      const next = new Float64Array(nodes);
      next[0] = bLowNew;
      next[nodes - 1] = bHighNew;
      next.set(interior, 1);
      V = next;
    };

    const dt = T / nt;
    let tau = 0;
    for (let s = 0; s < RANNACHER_HALF_STEPS; s++) {
      step(tau, dt / 2, 1);
      tau = ((s + 1) * dt) / 2;
    }
    for (let n = RANNACHER_HALF_STEPS / 2; n < nt; n++) {
      step(n * dt, dt, 0.5);
    }

    // Value at x = ln(S0/K): the centre node when nx is even, cubic interpolation otherwise.
    const valueAt = (xq: number): number => {
      const u = (xq - xMin) / h;
      const nearest = Math.round(u);
      if (Math.abs(u - nearest) < 1e-9) return V[nearest]!;
      const j0 = Math.min(Math.max(Math.floor(u) - 1, 0), nodes - 4);
      let sum = 0;
      for (let a = 0; a < 4; a++) {
        let w = 1;
        for (let b = 0; b < 4; b++) if (b !== a) w *= (u - (j0 + b)) / (a - b);
        sum += w * V[j0 + a]!;
      }
      return sum;
    };
    const price = valueAt(xCentre);
    const vMinus = valueAt(xCentre - h);
    const vPlus = valueAt(xCentre + h);
    // Chain rule from x = ln(S/K): V_S = V_x / S, V_SS = (V_xx − V_x) / S².
    const vx = (vPlus - vMinus) / (2 * h);
    const vxx = (vPlus - 2 * price + vMinus) / (h * h);
    const delta = vx / spot;
    const gamma = (vxx - vx) / (spot * spot);

    const reference = blackScholes({
      spot,
      strike,
      rate,
      volatility,
      maturity_years: T,
      dividend_yield: q,
      option_type: type,
    });
    let check = makeCheck('Black–Scholes–Merton closed form', 'option price', price, reference);
    if (!check.passed && reference < FAR_OUT_OF_THE_MONEY * spot) {
      check = refuseCheck(check, 'far out of the money: price below 1e-4·spot, relative accuracy cannot be certified');
    }

    const sAxis = Array.from(x, (xj) => strike * Math.exp(xj));
    const curveS = boundProfile(sAxis);
    const curveV = boundProfile(V);
    return {
      mode: null,
      value: price,
      unit: inputs.currency,
      output_class: 'profile',
      rule8: curveV,
      rule8_array: 'price_curve',
      outputs: {
        price_curve: { S: curveS, V: curveV },
        delta,
        gamma,
        grid: { nx, nt, dx_log_price: h, dt_years: dt, x_min: xMin, x_max: x[nx]! },
      },
      check,
    };
  },
};
