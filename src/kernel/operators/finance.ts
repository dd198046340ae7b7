// Finance operators of solvers.md §6. Money is in USD, rates per year, times in years.
import { blackScholes, type OptionType } from '../../numerics/black-scholes.js';
import { defineOperator, num, q, res, type Guard, type InputSpec } from './define.js';
import type { OperatorDef } from './types.js';

/**
 * (1 + x)^e. For x > −1 as exp(e·log1p(x)), which keeps the accuracy that rounding 1 + x would lose; otherwise
 * a plain power through the guard (a negative base with a non-integer exponent is rejected, naming `key`).
 */
function growth(x: number, e: number, g: Guard, key: string): number {
  if (x > -1) return g.finite(Math.exp(e * Math.log1p(x)), key);
  return g.pow(1 + x, e, key);
}

export const FIN_COMPOUND_INTEREST = defineOperator({
  id: 'FIN_COMPOUND_INTEREST',
  domain: 'finance',
  formula: 'FV = PV(1 + r/n)^(nt)',
  unit: 'USD',
  inputs: [
    ['principal', 'USD', 1000],
    ['rate', '1/yr', 0.05],
    ['periods_per_year', '1/yr', 12],
    ['years', 'yr', 10],
  ],
  compute: (v, g) => {
    const n = v.periods_per_year!;
    const perPeriod = g.div(v.rate!, n, 'periods_per_year');
    return v.principal! * growth(perPeriod, n * v.years!, g, 'rate');
  },
  equation: (v, r) =>
    `FV = PV (1 + r/n)^(n t) = ${q(v.principal!, 'USD')} · (1 + ${num(v.rate!)}/${num(v.periods_per_year!)})^` +
    `(${num(v.periods_per_year!)} · ${num(v.years!)}) = ${res(r, 'USD')}`,
});

export const FIN_CONTINUOUS_COMPOUNDING = defineOperator({
  id: 'FIN_CONTINUOUS_COMPOUNDING',
  domain: 'finance',
  formula: 'FV = PV e^(rt)',
  unit: 'USD',
  inputs: [
    ['principal', 'USD', 1000],
    ['rate', '1/yr', 0.05],
    ['years', 'yr', 10],
  ],
  compute: (v, g) => v.principal! * g.finite(Math.exp(v.rate! * v.years!), 'rate'),
  equation: (v, r) => `FV = PV e^(r t) = ${q(v.principal!, 'USD')} · e^(${num(v.rate!)} · ${num(v.years!)}) = ${res(r, 'USD')}`,
});

export const FIN_PRESENT_VALUE = defineOperator({
  id: 'FIN_PRESENT_VALUE',
  domain: 'finance',
  formula: 'PV = FV/(1 + r)^t',
  unit: 'USD',
  inputs: [
    ['future_value', 'USD', 1000],
    ['rate', '1/yr', 0.05],
    ['years', 'yr', 10],
  ],
  compute: (v, g) => g.div(v.future_value!, growth(v.rate!, v.years!, g, 'rate'), 'rate'),
  equation: (v, r) => `PV = FV / (1 + r)^t = ${q(v.future_value!, 'USD')} / (1 + ${num(v.rate!)})^${num(v.years!)} = ${res(r, 'USD')}`,
});

export const FIN_ANNUITY_PAYMENT = defineOperator({
  id: 'FIN_ANNUITY_PAYMENT',
  domain: 'finance',
  formula: 'PMT = P i/(1 − (1+i)^(−N)), i = rate/periods_per_year, N = years·periods_per_year',
  unit: 'USD',
  inputs: [
    ['principal', 'USD', 200000],
    ['rate', '1/yr', 0.04],
    ['periods_per_year', '1/yr', 12],
    ['years', 'yr', 30],
  ],
  compute: (v, g) => {
    const i = g.div(v.rate!, v.periods_per_year!, 'periods_per_year');
    const N = v.years! * v.periods_per_year!;
    g.require(N !== 0, 'years', 'division by zero (no payments: years · periods_per_year = 0)', { not: 0 });
    // At i = 0 the formula is 0/0; its limit, the interest-free instalment P/N, is the payment.
    if (i === 0) return v.principal! / N;
    // 1 − (1 + i)^(−N) = −expm1(−N·log1p(i)) for i > −1, without the cancellation of the direct form.
    const denominator = i > -1 ? -Math.expm1(-N * Math.log1p(i)) : 1 - g.pow(1 + i, -N, 'rate');
    return g.div(v.principal! * i, g.finite(denominator, 'rate'), 'rate');
  },
  equation: (v, r) => {
    const i = v.rate! / v.periods_per_year!;
    const N = v.years! * v.periods_per_year!;
    return (
      `PMT = P i / (1 - (1 + i)^(-N)), i = r/n = ${num(v.rate!)}/${num(v.periods_per_year!)} = ${num(i)}, ` +
      `N = t n = ${num(v.years!)} · ${num(v.periods_per_year!)} = ${num(N)}: ` +
      (i === 0
        ? `PMT = P / N = ${q(v.principal!, 'USD')} / ${num(N)} = ${res(r, 'USD')}`
        : `PMT = ${q(v.principal!, 'USD')} · ${num(i)} / (1 - (1 + ${num(i)})^(-${num(N)})) = ${res(r, 'USD')}`)
    );
  },
});

const BS_INPUTS: readonly InputSpec[] = [
  ['spot', 'USD', 100],
  ['strike', 'USD', 100],
  ['rate', '1/yr', 0.05],
  ['volatility', '1/yr^(1/2)', 0.2],
  ['maturity_years', 'yr', 1],
  ['dividend_yield', '1/yr', 0],
];

/** Domain of the closed form: ln(S/K) needs S, K > 0; σ√T needs σ ≥ 0 and T ≥ 0 (σ√T = 0 is the intrinsic limit). */
function blackScholesOperator(v: Record<string, number>, g: Guard, option_type: OptionType): number {
  g.require(v.spot! > 0, 'spot', `log of a non-positive number (ln(S/K), S = ${num(v.spot!)})`, { min: 0, inclusive: false });
  g.require(v.strike! > 0, 'strike', `log of a non-positive number (ln(S/K), K = ${num(v.strike!)})`, {
    min: 0,
    inclusive: false,
  });
  g.require(v.volatility! >= 0, 'volatility', `volatility must be ≥ 0 (σ = ${num(v.volatility!)})`, { min: 0 });
  g.require(v.maturity_years! >= 0, 'maturity_years', `negative under a root (√T, T = ${num(v.maturity_years!)})`, {
    min: 0,
  });
  return blackScholes({
    spot: v.spot!,
    strike: v.strike!,
    rate: v.rate!,
    volatility: v.volatility!,
    maturity_years: v.maturity_years!,
    dividend_yield: v.dividend_yield!,
    option_type,
  });
}

function blackScholesEquation(v: Record<string, number>, r: number, option_type: OptionType): string {
  const {
    spot: S,
    strike: K,
    rate,
    volatility: sigma,
    maturity_years: T,
    dividend_yield: qy,
  } = v as Record<'spot' | 'strike' | 'rate' | 'volatility' | 'maturity_years' | 'dividend_yield', number>;
  const name = option_type === 'call' ? 'C' : 'P';
  const spotTerm = `${q(S, 'USD')} · e^(-${num(qy)} · ${num(T)})`;
  const strikeTerm = `${q(K, 'USD')} · e^(-${num(rate)} · ${num(T)})`;
  const sigmaSqrtT = sigma * Math.sqrt(T);
  if (!(sigmaSqrtT > 0)) {
    const body = option_type === 'call' ? `${spotTerm} - ${strikeTerm}` : `${strikeTerm} - ${spotTerm}`;
    return (
      `${name} = max(${option_type === 'call' ? 'S e^(-qT) - K e^(-rT)' : 'K e^(-rT) - S e^(-qT)'}, 0) ` +
      `(σ sqrt(T) = 0) = max(${body}, 0) = ${res(r, 'USD')}`
    );
  }
  const d1 = (Math.log(S / K) + (rate - qy + 0.5 * sigma * sigma) * T) / sigmaSqrtT;
  const d2 = d1 - sigmaSqrtT;
  const head = option_type === 'call' ? 'C = S e^(-qT) Φ(d1) - K e^(-rT) Φ(d2)' : 'P = K e^(-rT) Φ(-d2) - S e^(-qT) Φ(-d1)';
  const dLine =
    `d1 = (ln(S/K) + (r - q + σ^2/2) T) / (σ sqrt(T)) = (ln(${num(S)}/${num(K)}) + (${num(rate)} - ${num(qy)} + ` +
    `${num(sigma)}^2/2) · ${num(T)}) / (${num(sigma)} · sqrt(${num(T)})) = ${num(d1)}, d2 = d1 - σ sqrt(T) = ${num(d2)}`;
  const body =
    option_type === 'call' ? `${spotTerm} · Φ(${num(d1)}) - ${strikeTerm} · Φ(${num(d2)})` : `${strikeTerm} · Φ(${num(-d2)}) - ${spotTerm} · Φ(${num(-d1)})`;
  return `${head}, ${dLine}: ${name} = ${body} = ${res(r, 'USD')}`;
}

export const FIN_BLACK_SCHOLES_CALL = defineOperator({
  id: 'FIN_BLACK_SCHOLES_CALL',
  domain: 'finance',
  formula: 'S e^(−qT)Φ(d1) − K e^(−rT)Φ(d2)',
  unit: 'USD',
  inputs: BS_INPUTS,
  compute: (v, g) => blackScholesOperator(v, g, 'call'),
  equation: (v, r) => blackScholesEquation(v, r, 'call'),
});

export const FIN_BLACK_SCHOLES_PUT = defineOperator({
  id: 'FIN_BLACK_SCHOLES_PUT',
  domain: 'finance',
  formula: 'K e^(−rT)Φ(−d2) − S e^(−qT)Φ(−d1)',
  unit: 'USD',
  inputs: BS_INPUTS,
  compute: (v, g) => blackScholesOperator(v, g, 'put'),
  equation: (v, r) => blackScholesEquation(v, r, 'put'),
});

export const FIN_CAPM = defineOperator({
  id: 'FIN_CAPM',
  domain: 'finance',
  formula: 'E[R] = r_f + β(E[R_m] − r_f)',
  unit: '1',
  inputs: [
    ['risk_free_rate', '1', 0.03],
    ['beta', '1', 1.2],
    ['market_return', '1', 0.08],
  ],
  compute: (v) => v.risk_free_rate! + v.beta! * (v.market_return! - v.risk_free_rate!),
  equation: (v, r) =>
    `E[R] = r_f + β (E[R_m] - r_f) = ${num(v.risk_free_rate!)} + ${q(v.beta!, '1')} · (${num(v.market_return!)} - ` +
    `${num(v.risk_free_rate!)}) = ${res(r, '1')}`,
});

export const FINANCE_OPERATORS: readonly OperatorDef[] = [
  FIN_COMPOUND_INTEREST,
  FIN_CONTINUOUS_COMPOUNDING,
  FIN_PRESENT_VALUE,
  FIN_ANNUITY_PAYMENT,
  FIN_BLACK_SCHOLES_CALL,
  FIN_BLACK_SCHOLES_PUT,
  FIN_CAPM,
];
