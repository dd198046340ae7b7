// Biology operators of solvers.md §6. Populations are counts (unit 1), rates per day, times in days.
import { FARADAY, R_GAS } from './constants.js';
import { ABSOLUTE_TEMPERATURE, between, nonNegative, nonZero, positive, PROBABILITY, REAL } from './domains.js';
import { defineOperator, negKey, num, pw, q, res } from './define.js';
import { add, CONST, div, exp, k, ln, mul, neg, powr, sub, x, type Expr } from './reference.js';
import type { OperatorDef } from './types.js';

/** θ = (S/K)ⁿ / (1 + (S/K)ⁿ): the same fraction, written with the pure number S/K so its real power is defined. */
const hillReference: Expr = (() => {
  const ratio = powr(div(x('substrate_mol_m3'), x('half_saturation_mol_m3')), x('hill_coefficient'));
  return div(ratio, add(k(1), ratio));
})();

export const BIO_EXPONENTIAL_GROWTH = defineOperator({
  id: 'BIO_EXPONENTIAL_GROWTH',
  domain: 'biology',
  formula: 'N = N0 e^(rt)',
  unit: '1',
  inputs: [
    ['initial_population', '1', 100, nonNegative('population')],
    ['growth_rate_per_day', '1/d', 0.1, REAL],
    ['time_days', 'd', 10, nonNegative('time')],
  ],
  result_domain: nonNegative('population'),
  reference: mul(x('initial_population'), exp(mul(x('growth_rate_per_day'), x('time_days')))),
  compute: (v, g) => v.initial_population! * g.finite(Math.exp(v.growth_rate_per_day! * v.time_days!), 'growth_rate_per_day'),
  equation: (v, r) =>
    `N = N0 e^(r t) = ${q(v.initial_population!, '1')} · e^(${q(v.growth_rate_per_day!, '1/d')} · ` + `${q(v.time_days!, 'd')}) = ${res(r, '1')}`,
});

export const BIO_LOGISTIC_GROWTH = defineOperator({
  id: 'BIO_LOGISTIC_GROWTH',
  domain: 'biology',
  formula: 'N = K/(1 + ((K − N0)/N0) e^(−rt))',
  unit: '1',
  inputs: [
    ['initial_population', '1', 100, positive('population')],
    ['carrying_capacity', '1', 1000, positive('carrying capacity')],
    ['growth_rate_per_day', '1/d', 0.1, nonNegative('growth rate')],
    ['time_days', 'd', 10, nonNegative('time')],
  ],
  result_domain: positive('population'),
  reference: div(
    x('carrying_capacity'),
    add(k(1), mul(div(sub(x('carrying_capacity'), x('initial_population')), x('initial_population')), exp(neg(mul(x('growth_rate_per_day'), x('time_days')))))),
  ),
  compute: (v, g) => {
    const K = v.carrying_capacity!;
    const N0 = v.initial_population!;
    const ratio = g.div(K - N0, N0, 'initial_population');
    const decay = g.finite(Math.exp(-v.growth_rate_per_day! * v.time_days!), 'growth_rate_per_day');
    return g.div(K, 1 + ratio * decay, 'carrying_capacity');
  },
  equation: (v, r) =>
    `N = K / (1 + ((K - N0)/N0) e^(-r t)) = ${q(v.carrying_capacity!, '1')} / (1 + ((${num(v.carrying_capacity!)} - ` +
    `${num(v.initial_population!)})/${q(v.initial_population!, '1')}) · e^(-${q(v.growth_rate_per_day!, '1/d')} · ` +
    `${q(v.time_days!, 'd')})) = ${res(r, '1')}`,
});

export const BIO_DOUBLING_TIME = defineOperator({
  id: 'BIO_DOUBLING_TIME',
  domain: 'biology',
  formula: 't_d = ln 2 / r',
  unit: 'd',
  inputs: [['growth_rate_per_day', '1/d', 0.1, positive('growth rate')]],
  result_domain: positive('doubling time'),
  reference: div(ln(k(2)), x('growth_rate_per_day')),
  compute: (v, g) => g.div(Math.LN2, v.growth_rate_per_day!, 'growth_rate_per_day'),
  equation: (v, r) => `t_d = ln 2 / r = ${num(Math.LN2)} / ${q(v.growth_rate_per_day!, '1/d')} = ${res(r, 'd')}`,
});

export const BIO_MICHAELIS_MENTEN = defineOperator({
  id: 'BIO_MICHAELIS_MENTEN',
  domain: 'biology',
  formula: 'v = V_max S/(K_m + S)',
  unit: 'mol/(m^3*s)',
  inputs: [
    ['vmax_mol_m3_s', 'mol/(m^3*s)', 1e-3, nonNegative('maximum rate')],
    ['substrate_mol_m3', 'mol/m^3', 0.5, nonNegative('concentration')],
    ['km_mol_m3', 'mol/m^3', 0.2, positive('Michaelis constant')],
  ],
  result_domain: nonNegative('reaction rate'),
  reference: div(mul(x('vmax_mol_m3_s'), x('substrate_mol_m3')), add(x('km_mol_m3'), x('substrate_mol_m3'))),
  compute: (v, g) => g.div(v.vmax_mol_m3_s! * v.substrate_mol_m3!, v.km_mol_m3! + v.substrate_mol_m3!, 'km_mol_m3'),
  equation: (v, r) =>
    `v = V_max S / (K_m + S) = ${q(v.vmax_mol_m3_s!, 'mol/(m^3*s)')} · ${q(v.substrate_mol_m3!, 'mol/m^3')} / ` +
    `(${q(v.km_mol_m3!, 'mol/m^3')} + ${q(v.substrate_mol_m3!, 'mol/m^3')}) = ${res(r, 'mol/(m^3*s)')}`,
});

export const BIO_HILL = defineOperator({
  id: 'BIO_HILL',
  domain: 'biology',
  formula: 'θ = Sⁿ/(Kⁿ + Sⁿ)',
  unit: '1',
  inputs: [
    ['substrate_mol_m3', 'mol/m^3', 0.5, nonNegative('concentration')],
    ['half_saturation_mol_m3', 'mol/m^3', 0.5, positive('half-saturation constant')],
    ['hill_coefficient', '1', 2.6, positive('Hill coefficient')],
  ],
  result_domain: between(0, 1, 'fractional saturation'),
  reference: hillReference,
  compute: (v, g) => {
    const n = v.hill_coefficient!;
    const Sn = g.pow(v.substrate_mol_m3!, n, 'substrate_mol_m3');
    const Kn = g.pow(v.half_saturation_mol_m3!, n, 'half_saturation_mol_m3');
    return g.div(Sn, Kn + Sn, 'half_saturation_mol_m3');
  },
  equation: (v, r) => {
    const S = pw(v.substrate_mol_m3!, 'mol/m^3', v.hill_coefficient!);
    const K = pw(v.half_saturation_mol_m3!, 'mol/m^3', v.hill_coefficient!);
    return `θ = S^n / (K^n + S^n) = ${S} / (${K} + ${S}) = ${res(r, '1')}`;
  },
});

export const BIO_NERNST = defineOperator({
  id: 'BIO_NERNST',
  domain: 'biology',
  formula: 'E = (RT/zF) ln(c_out/c_in)',
  unit: 'V',
  inputs: [
    ['temperature_K', 'K', 310.15, ABSOLUTE_TEMPERATURE],
    ['valence', '1', 1, nonZero('ion valence z', true)],
    ['conc_out_mol_m3', 'mol/m^3', 5, positive('concentration')],
    ['conc_in_mol_m3', 'mol/m^3', 140, positive('concentration')],
  ],
  result_domain: REAL,
  reference: mul(div(mul(CONST.R, x('temperature_K')), mul(x('valence'), CONST.F)), ln(div(x('conc_out_mol_m3'), x('conc_in_mol_m3')))),
  compute: (v, g) => {
    const prefactor = g.div(R_GAS * v.temperature_K!, v.valence! * FARADAY, 'valence');
    const ratio = g.div(v.conc_out_mol_m3!, v.conc_in_mol_m3!, 'conc_in_mol_m3');
    return prefactor * g.log(ratio, negKey(v, 'conc_out_mol_m3', 'conc_in_mol_m3'));
  },
  equation: (v, r) =>
    `E = (R T / (z F)) ln(c_out / c_in) = (${num(R_GAS)} J/(mol*K) · ${q(v.temperature_K!, 'K')} / ` +
    `(${num(v.valence!)} · ${num(FARADAY)} C/mol)) · ln(${q(v.conc_out_mol_m3!, 'mol/m^3')} / ` +
    `${q(v.conc_in_mol_m3!, 'mol/m^3')}) = ${res(r, 'V')}`,
});

export const BIO_BASIC_REPRODUCTION = defineOperator({
  id: 'BIO_BASIC_REPRODUCTION',
  domain: 'biology',
  formula: 'R0 = β/γ',
  unit: '1',
  inputs: [
    ['beta_per_day', '1/d', 0.3, nonNegative('transmission rate')],
    ['gamma_per_day', '1/d', 0.1, positive('recovery rate')],
  ],
  result_domain: nonNegative('R0'),
  reference: div(x('beta_per_day'), x('gamma_per_day')),
  compute: (v, g) => g.div(v.beta_per_day!, v.gamma_per_day!, 'gamma_per_day'),
  equation: (v, r) => `R0 = β / γ = ${q(v.beta_per_day!, '1/d')} / ${q(v.gamma_per_day!, '1/d')} = ${res(r, '1')}`,
});

export const BIO_HARDY_WEINBERG_HET = defineOperator({
  id: 'BIO_HARDY_WEINBERG_HET',
  domain: 'biology',
  formula: 'H = 2p(1 − p)',
  unit: '1',
  inputs: [['allele_frequency', '1', 0.3, PROBABILITY]],
  result_domain: between(0, 0.5, 'heterozygote frequency'),
  reference: mul(k(2), x('allele_frequency'), sub(k(1), x('allele_frequency'))),
  compute: (v) => 2 * v.allele_frequency! * (1 - v.allele_frequency!),
  equation: (v, r) => `H = 2 p (1 - p) = 2 · ${q(v.allele_frequency!, '1')} · (1 - ${q(v.allele_frequency!, '1')}) = ${res(r, '1')}`,
});

export const BIOLOGY_OPERATORS: readonly OperatorDef[] = [
  BIO_EXPONENTIAL_GROWTH,
  BIO_LOGISTIC_GROWTH,
  BIO_DOUBLING_TIME,
  BIO_MICHAELIS_MENTEN,
  BIO_HILL,
  BIO_NERNST,
  BIO_BASIC_REPRODUCTION,
  BIO_HARDY_WEINBERG_HET,
];
