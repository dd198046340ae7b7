// Thermodynamics operators of solvers.md §6.
import { R_GAS, SIGMA_SB, WIEN_B } from './constants.js';
import { ABSOLUTE_TEMPERATURE, between, MASS, nonNegative, positive, REAL } from './domains.js';
import { defineOperator, negKey, num, pw, q, res } from './define.js';
import { CONST, div, ln, mul, pow, sub, x } from './reference.js';
import type { OperatorDef } from './types.js';

export const THERMO_IDEAL_GAS_PRESSURE = defineOperator({
  id: 'THERMO_IDEAL_GAS_PRESSURE',
  domain: 'thermodynamics',
  formula: 'P = nRT/V',
  unit: 'Pa',
  inputs: [
    ['amount_mol', 'mol', 1, nonNegative('amount of substance')],
    ['temperature_K', 'K', 273.15, ABSOLUTE_TEMPERATURE],
    ['volume_m3', 'm^3', 0.0224, positive('volume')],
  ],
  result_domain: nonNegative('pressure'),
  reference: div(mul(x('amount_mol'), CONST.R, x('temperature_K')), x('volume_m3')),
  compute: (v, g) => g.div(v.amount_mol! * R_GAS * v.temperature_K!, v.volume_m3!, 'volume_m3'),
  equation: (v, r) =>
    `P = n R T / V = ${q(v.amount_mol!, 'mol')} · ${num(R_GAS)} J/(mol*K) · ${q(v.temperature_K!, 'K')} / ` + `${q(v.volume_m3!, 'm^3')} = ${res(r, 'Pa')}`,
});

export const THERMO_CARNOT_EFFICIENCY = defineOperator({
  id: 'THERMO_CARNOT_EFFICIENCY',
  domain: 'thermodynamics',
  formula: 'η = 1 − Tc/Th',
  unit: '1',
  inputs: [
    ['cold_K', 'K', 300, ABSOLUTE_TEMPERATURE],
    ['hot_K', 'K', 600, ABSOLUTE_TEMPERATURE],
  ],
  result_domain: between(0, 1, 'efficiency'),
  reference: div(sub(x('hot_K'), x('cold_K')), x('hot_K')),
  // (Th − Tc)/Th rather than 1 − Tc/Th: the difference of two close temperatures is exact, their ratio is not.
  compute: (v, g) => {
    g.require(v.cold_K! <= v.hot_K!, 'cold_K', `the cold reservoir must not be hotter than the hot one (Tc = ${num(v.cold_K!)} K > Th = ${num(v.hot_K!)} K)`, {
      max: v.hot_K!,
    });
    return g.div(v.hot_K! - v.cold_K!, v.hot_K!, 'hot_K');
  },
  equation: (v, r) => `η = 1 - Tc/Th = 1 - ${q(v.cold_K!, 'K')} / ${q(v.hot_K!, 'K')} = ${res(r, '1')}`,
});

export const THERMO_STEFAN_BOLTZMANN = defineOperator({
  id: 'THERMO_STEFAN_BOLTZMANN',
  domain: 'thermodynamics',
  formula: 'j = εσT⁴',
  unit: 'W/m^2',
  inputs: [
    ['emissivity', '1', 1, between(0, 1, 'emissivity')],
    ['temperature_K', 'K', 5772, ABSOLUTE_TEMPERATURE],
  ],
  result_domain: nonNegative('radiant exitance'),
  reference: mul(x('emissivity'), CONST.sigmaSB, pow(x('temperature_K'), 4)),
  compute: (v) => {
    const t2 = v.temperature_K! * v.temperature_K!;
    return v.emissivity! * SIGMA_SB * t2 * t2;
  },
  equation: (v, r) => `j = ε σ T^4 = ${q(v.emissivity!, '1')} · ${num(SIGMA_SB)} W/(m^2*K^4) · ${pw(v.temperature_K!, 'K', 4)} = ` + `${res(r, 'W/m^2')}`,
});

export const THERMO_WIEN_PEAK = defineOperator({
  id: 'THERMO_WIEN_PEAK',
  domain: 'thermodynamics',
  formula: 'λ = b/T',
  unit: 'm',
  inputs: [['temperature_K', 'K', 5772, ABSOLUTE_TEMPERATURE]],
  result_domain: positive('wavelength'),
  reference: div(CONST.wienB, x('temperature_K')),
  compute: (v, g) => g.div(WIEN_B, v.temperature_K!, 'temperature_K'),
  equation: (v, r) => `λ = b / T = ${num(WIEN_B)} m*K / ${q(v.temperature_K!, 'K')} = ${res(r, 'm')}`,
});

export const THERMO_SENSIBLE_HEAT = defineOperator({
  id: 'THERMO_SENSIBLE_HEAT',
  domain: 'thermodynamics',
  formula: 'Q = mcΔT',
  unit: 'J',
  inputs: [
    ['mass_kg', 'kg', 1, MASS],
    ['specific_heat_J_kgK', 'J/(kg*K)', 4186, nonNegative('specific heat capacity')],
    ['delta_T_K', 'K', 1, REAL],
  ],
  result_domain: REAL,
  reference: mul(x('mass_kg'), x('specific_heat_J_kgK'), x('delta_T_K')),
  compute: (v) => v.mass_kg! * v.specific_heat_J_kgK! * v.delta_T_K!,
  equation: (v, r) => `Q = m c ΔT = ${q(v.mass_kg!, 'kg')} · ${q(v.specific_heat_J_kgK!, 'J/(kg*K)')} · ${q(v.delta_T_K!, 'K')} = ` + `${res(r, 'J')}`,
});

export const THERMO_CONDUCTION = defineOperator({
  id: 'THERMO_CONDUCTION',
  domain: 'thermodynamics',
  formula: 'q = kAΔT/L',
  unit: 'W',
  inputs: [
    ['conductivity_W_mK', 'W/(m*K)', 401, nonNegative('thermal conductivity')],
    ['area_m2', 'm^2', 1, nonNegative('area')],
    ['delta_T_K', 'K', 1, REAL],
    ['thickness_m', 'm', 1, positive('thickness')],
  ],
  result_domain: REAL,
  reference: div(mul(x('conductivity_W_mK'), x('area_m2'), x('delta_T_K')), x('thickness_m')),
  compute: (v, g) => g.div(v.conductivity_W_mK! * v.area_m2! * v.delta_T_K!, v.thickness_m!, 'thickness_m'),
  equation: (v, r) =>
    `q = k A ΔT / L = ${q(v.conductivity_W_mK!, 'W/(m*K)')} · ${q(v.area_m2!, 'm^2')} · ${q(v.delta_T_K!, 'K')} / ` +
    `${q(v.thickness_m!, 'm')} = ${res(r, 'W')}`,
});

export const THERMO_ISOTHERMAL_ENTROPY = defineOperator({
  id: 'THERMO_ISOTHERMAL_ENTROPY',
  domain: 'thermodynamics',
  formula: 'ΔS = nR ln(V2/V1)',
  unit: 'J/K',
  inputs: [
    ['amount_mol', 'mol', 1, nonNegative('amount of substance')],
    ['volume1_m3', 'm^3', 1, positive('volume')],
    ['volume2_m3', 'm^3', 2, positive('volume')],
  ],
  result_domain: REAL,
  reference: mul(x('amount_mol'), CONST.R, ln(div(x('volume2_m3'), x('volume1_m3')))),
  compute: (v, g) => v.amount_mol! * R_GAS * g.log(g.div(v.volume2_m3!, v.volume1_m3!, 'volume1_m3'), negKey(v, 'volume2_m3', 'volume1_m3')),
  equation: (v, r) =>
    `ΔS = n R ln(V2/V1) = ${q(v.amount_mol!, 'mol')} · ${num(R_GAS)} J/(mol*K) · ` +
    `ln(${q(v.volume2_m3!, 'm^3')} / ${q(v.volume1_m3!, 'm^3')}) = ${res(r, 'J/K')}`,
});

export const THERMODYNAMICS_OPERATORS: readonly OperatorDef[] = [
  THERMO_IDEAL_GAS_PRESSURE,
  THERMO_CARNOT_EFFICIENCY,
  THERMO_STEFAN_BOLTZMANN,
  THERMO_WIEN_PEAK,
  THERMO_SENSIBLE_HEAT,
  THERMO_CONDUCTION,
  THERMO_ISOTHERMAL_ENTROPY,
];
