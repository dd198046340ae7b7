// Finance operators of solvers.md §6. Money is in USD, rates per year, times in years.
import { blackScholes, type OptionType } from '../../numerics/black-scholes.js';
import { atLeast, nonNegative, positive, REAL, type PhysicalDomain } from './domains.js';
import { defineOperator, num, q, res, type Guard, type InputSpec } from './define.js';
import { add, div, exp, expm1, ifPositive, k, ln, ln1p, max, mul, neg, Phi, pow, sqrt, sub, x, type Expr } from './reference.js';
import type { OperatorDef } from './types.js';

/**
 * (1 + x)^e. For x > −1 as exp(e·log1p(x)), which keeps the accuracy that rounding 1 + x would lose; otherwise
 * a plain power through the guard (a negative base with a non-integer exponent is rejected, naming `key`).
 */
function growth(rate: number, e: number, g: Guard, key: string): number {
  if (rate > -1) return g.finite(Math.exp(e * Math.log1p(rate)), key);
  return g.pow(1 + rate, e, key);
}

/** An interest rate per year: above −100 % (a loss of everything is the limit). */
const RATE: PhysicalDomain = { text: 'rate > -1 per year (no loss beyond 100 %)', min: -1, min_inclusive: false };
/** A return over a period: at least −100 %. */
const RETURN = atLeast(-1, 'return');
/** Compounding periods: at least one a year, so that the rate per period stays above −100 %. */
const PERIODS = atLeast(1, 'periods per year');
/** One year: a rate per year times a year is the pure number the formulas compound with. */
const YEAR = k(1, 'yr');

/** PMT = P i / (1 − (1 + i)^(−N)), and P/N, its limit, at i = 0. */
const annuityReference: Expr = (() => {
  const i = div(x('rate'), x('periods_per_year'));
  const N = mul(x('years'), x('periods_per_year'));
  const payment = div(mul(x('principal'), i), neg(expm1(neg(mul(N, ln1p(i))))));
  return ifPositive(pow(i, 2), payment, div(x('principal'), N));
})();

/** The Black–Scholes price with Φ evaluated by quadrature, and its intrinsic limit where σ√T = 0. */
function blackScholesReference(option_type: OptionType): Expr {
  const sigmaSqrtT = mul(x('volatility'), sqrt(x('maturity_years')));
  const d1 = div(
    add(ln(div(x('spot'), x('strike'))), mul(add(sub(x('rate'), x('dividend_yield')), mul(k(0.5), pow(x('volatility'), 2))), x('maturity_years'))),
    sigmaSqrtT,
  );
  const d2 = sub(d1, sigmaSqrtT);
  const spot = mul(x('spot'), exp(neg(mul(x('dividend_yield'), x('maturity_years')))));
  const strike = mul(x('strike'), exp(neg(mul(x('rate'), x('maturity_years')))));
  const zero = k(0, 'USD');
  return option_type === 'call'
    ? ifPositive(sigmaSqrtT, sub(mul(spot, Phi(d1)), mul(strike, Phi(d2))), max(sub(spot, strike), zero))
    : ifPositive(sigmaSqrtT, sub(mul(strike, Phi(neg(d2))), mul(spot, Phi(neg(d1)))), max(sub(strike, spot), zero));
}

export const FIN_COMPOUND_INTEREST = defineOperator({
  id: 'FIN_COMPOUND_INTEREST',
  domain: 'finance',
  formula: 'FV = PV(1 + r/n)^(nt)',
  unit: 'USD',
  inputs: [
    ['principal', 'USD', 1000, REAL],
    ['rate', '1/yr', 0.05, RATE],
    ['periods_per_year', '1/yr', 12, PERIODS],
    ['years', 'yr', 10, nonNegative('time')],
  ],
  result_domain: REAL,
  reference: mul(x('principal'), exp(mul(x('periods_per_year'), x('years'), ln1p(div(x('rate'), x('periods_per_year')))))),
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
    ['principal', 'USD', 1000, REAL],
    ['rate', '1/yr', 0.05, REAL],
    ['years', 'yr', 10, nonNegative('time')],
  ],
  result_domain: REAL,
  reference: mul(x('principal'), exp(mul(x('rate'), x('years')))),
  compute: (v, g) => v.principal! * g.finite(Math.exp(v.rate! * v.years!), 'rate'),
  equation: (v, r) => `FV = PV e^(r t) = ${q(v.principal!, 'USD')} · e^(${num(v.rate!)} · ${num(v.years!)}) = ${res(r, 'USD')}`,
});

export const FIN_PRESENT_VALUE = defineOperator({
  id: 'FIN_PRESENT_VALUE',
  domain: 'finance',
  formula: 'PV = FV/(1 + r)^t',
  unit: 'USD',
  inputs: [
    ['future_value', 'USD', 1000, REAL],
    ['rate', '1/yr', 0.05, RATE],
    ['years', 'yr', 10, nonNegative('time')],
  ],
  result_domain: REAL,
  reference: div(x('future_value'), exp(mul(div(x('years'), YEAR), ln1p(mul(x('rate'), YEAR))))),
  compute: (v, g) => g.div(v.future_value!, growth(v.rate!, v.years!, g, 'rate'), 'rate'),
  equation: (v, r) => `PV = FV / (1 + r)^t = ${q(v.future_value!, 'USD')} / (1 + ${num(v.rate!)})^${num(v.years!)} = ${res(r, 'USD')}`,
});

export const FIN_ANNUITY_PAYMENT = defineOperator({
  id: 'FIN_ANNUITY_PAYMENT',
  domain: 'finance',
  formula: 'PMT = P i/(1 − (1+i)^(−N)), i = rate/periods_per_year, N = years·periods_per_year',
  unit: 'USD',
  inputs: [
    ['principal', 'USD', 200000, REAL],
    ['rate', '1/yr', 0.04, RATE],
    ['periods_per_year', '1/yr', 12, PERIODS],
    ['years', 'yr', 30, positive('term')],
  ],
  result_domain: REAL,
  reference: annuityReference,
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
  ['spot', 'USD', 100, positive('spot price')],
  ['strike', 'USD', 100, positive('strike price')],
  ['rate', '1/yr', 0.05, REAL],
  ['volatility', '1/yr^(1/2)', 0.2, nonNegative('volatility')],
  ['maturity_years', 'yr', 1, nonNegative('time to maturity')],
  ['dividend_yield', '1/yr', 0, REAL],
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
  result_domain: nonNegative('option price'),
  reference: blackScholesReference('call'),
  compute: (v, g) => blackScholesOperator(v, g, 'call'),
  equation: (v, r) => blackScholesEquation(v, r, 'call'),
});

export const FIN_BLACK_SCHOLES_PUT = defineOperator({
  id: 'FIN_BLACK_SCHOLES_PUT',
  domain: 'finance',
  formula: 'K e^(−rT)Φ(−d2) − S e^(−qT)Φ(−d1)',
  unit: 'USD',
  inputs: BS_INPUTS,
  result_domain: nonNegative('option price'),
  reference: blackScholesReference('put'),
  compute: (v, g) => blackScholesOperator(v, g, 'put'),
  equation: (v, r) => blackScholesEquation(v, r, 'put'),
});

export const FIN_CAPM = defineOperator({
  id: 'FIN_CAPM',
  domain: 'finance',
  formula: 'E[R] = r_f + β(E[R_m] − r_f)',
  unit: '1',
  inputs: [
    ['risk_free_rate', '1', 0.03, RETURN],
    ['beta', '1', 1.2, REAL],
    ['market_return', '1', 0.08, RETURN],
  ],
  result_domain: REAL,
  reference: add(x('risk_free_rate'), mul(x('beta'), sub(x('market_return'), x('risk_free_rate')))),
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
