// Biology operators of solvers.md §6. Populations are counts (unit 1), rates per day, times in days.
import { FARADAY, R_GAS } from './constants.js';
import { defineOperator, negKey, num, pw, q, res } from './define.js';
import type { OperatorDef } from './types.js';

export const BIO_EXPONENTIAL_GROWTH = defineOperator({
  id: 'BIO_EXPONENTIAL_GROWTH',
  domain: 'biology',
  formula: 'N = N0 e^(rt)',
  unit: '1',
  inputs: [
    ['initial_population', '1', 100],
    ['growth_rate_per_day', '1/d', 0.1],
    ['time_days', 'd', 10],
  ],
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
    ['initial_population', '1', 100],
    ['carrying_capacity', '1', 1000],
    ['growth_rate_per_day', '1/d', 0.1],
    ['time_days', 'd', 10],
  ],
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
  inputs: [['growth_rate_per_day', '1/d', 0.1]],
  compute: (v, g) => g.div(Math.LN2, v.growth_rate_per_day!, 'growth_rate_per_day'),
  equation: (v, r) => `t_d = ln 2 / r = ${num(Math.LN2)} / ${q(v.growth_rate_per_day!, '1/d')} = ${res(r, 'd')}`,
});

export const BIO_MICHAELIS_MENTEN = defineOperator({
  id: 'BIO_MICHAELIS_MENTEN',
  domain: 'biology',
  formula: 'v = V_max S/(K_m + S)',
  unit: 'mol/(m^3*s)',
  inputs: [
    ['vmax_mol_m3_s', 'mol/(m^3*s)', 1e-3],
    ['substrate_mol_m3', 'mol/m^3', 0.5],
    ['km_mol_m3', 'mol/m^3', 0.2],
  ],
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
    ['substrate_mol_m3', 'mol/m^3', 0.5],
    ['half_saturation_mol_m3', 'mol/m^3', 0.5],
    ['hill_coefficient', '1', 2.6],
  ],
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
    ['temperature_K', 'K', 310.15],
    ['valence', '1', 1],
    ['conc_out_mol_m3', 'mol/m^3', 5],
    ['conc_in_mol_m3', 'mol/m^3', 140],
  ],
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
    ['beta_per_day', '1/d', 0.3],
    ['gamma_per_day', '1/d', 0.1],
  ],
  compute: (v, g) => g.div(v.beta_per_day!, v.gamma_per_day!, 'gamma_per_day'),
  equation: (v, r) => `R0 = β / γ = ${q(v.beta_per_day!, '1/d')} / ${q(v.gamma_per_day!, '1/d')} = ${res(r, '1')}`,
});

export const BIO_HARDY_WEINBERG_HET = defineOperator({
  id: 'BIO_HARDY_WEINBERG_HET',
  domain: 'biology',
  formula: 'H = 2p(1 − p)',
  unit: '1',
  inputs: [['allele_frequency', '1', 0.3]],
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
