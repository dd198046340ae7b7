// Electromagnetism operators of solvers.md §6.
import { EPSILON_0, MU_0 } from './constants.js';
import { nonNegative, positive, REAL } from './domains.js';
import { defineOperator, negKey, num, pw, q, res } from './define.js';
import { CONST, div, k, mul, PI, pow, sqrt, x } from './reference.js';
import type { OperatorDef } from './types.js';

export const EM_COULOMB_FORCE = defineOperator({
  id: 'EM_COULOMB_FORCE',
  domain: 'electromagnetism',
  formula: 'F = q1q2/(4πε0r²)',
  unit: 'N',
  inputs: [
    ['charge1_C', 'C', 1e-6, REAL],
    ['charge2_C', 'C', 1e-6, REAL],
    ['distance_m', 'm', 1, positive('distance')],
  ],
  result_domain: REAL,
  reference: div(mul(x('charge1_C'), x('charge2_C')), mul(k(4), PI, CONST.epsilon0, pow(x('distance_m'), 2))),
  compute: (v, g) => g.div(v.charge1_C! * v.charge2_C!, 4 * Math.PI * EPSILON_0 * v.distance_m! * v.distance_m!, 'distance_m'),
  equation: (v, r) =>
    `F = q1 q2 / (4π ε0 r^2) = ${q(v.charge1_C!, 'C')} · ${q(v.charge2_C!, 'C')} / (4π · ${num(EPSILON_0)} F/m · ` +
    `${pw(v.distance_m!, 'm', 2)}) = ${res(r, 'N')}`,
});

export const EM_OHM_CURRENT = defineOperator({
  id: 'EM_OHM_CURRENT',
  domain: 'electromagnetism',
  formula: 'I = V/R',
  unit: 'A',
  inputs: [
    ['voltage_V', 'V', 12, REAL],
    ['resistance_ohm', 'ohm', 100, positive('resistance')],
  ],
  result_domain: REAL,
  reference: div(x('voltage_V'), x('resistance_ohm')),
  compute: (v, g) => g.div(v.voltage_V!, v.resistance_ohm!, 'resistance_ohm'),
  equation: (v, r) => `I = V / R = ${q(v.voltage_V!, 'V')} / ${q(v.resistance_ohm!, 'ohm')} = ${res(r, 'A')}`,
});

export const EM_CAPACITOR_ENERGY = defineOperator({
  id: 'EM_CAPACITOR_ENERGY',
  domain: 'electromagnetism',
  formula: 'E = ½CV²',
  unit: 'J',
  inputs: [
    ['capacitance_F', 'F', 1e-6, nonNegative('capacitance')],
    ['voltage_V', 'V', 12, REAL],
  ],
  result_domain: nonNegative('energy'),
  reference: mul(k(0.5), x('capacitance_F'), pow(x('voltage_V'), 2)),
  compute: (v) => 0.5 * v.capacitance_F! * v.voltage_V! * v.voltage_V!,
  equation: (v, r) => `E = 1/2 C V^2 = 1/2 · ${q(v.capacitance_F!, 'F')} · ${pw(v.voltage_V!, 'V', 2)} = ${res(r, 'J')}`,
});

export const EM_LC_RESONANCE = defineOperator({
  id: 'EM_LC_RESONANCE',
  domain: 'electromagnetism',
  formula: 'f = 1/(2π√(LC))',
  unit: 'Hz',
  inputs: [
    ['inductance_H', 'H', 1e-3, positive('inductance')],
    ['capacitance_F', 'F', 1e-6, positive('capacitance')],
  ],
  result_domain: positive('frequency'),
  reference: div(k(1), mul(k(2), PI, sqrt(mul(x('inductance_H'), x('capacitance_F'))))),
  compute: (v, g) => {
    const root = g.sqrt(v.inductance_H! * v.capacitance_F!, negKey(v, 'inductance_H', 'capacitance_F'));
    return g.div(1, 2 * Math.PI * root, v.inductance_H! === 0 ? 'inductance_H' : 'capacitance_F');
  },
  equation: (v, r) => `f = 1 / (2π sqrt(L C)) = 1 / (2π · sqrt(${q(v.inductance_H!, 'H')} · ${q(v.capacitance_F!, 'F')})) = ` + `${res(r, 'Hz')}`,
});

export const EM_SOLENOID_FIELD = defineOperator({
  id: 'EM_SOLENOID_FIELD',
  domain: 'electromagnetism',
  formula: 'B = μ0 n I',
  unit: 'T',
  inputs: [
    ['turns_per_m', '1/m', 1000, nonNegative('turn density')],
    ['current_A', 'A', 1, REAL],
  ],
  result_domain: REAL,
  reference: mul(CONST.mu0, x('turns_per_m'), x('current_A')),
  compute: (v) => MU_0 * v.turns_per_m! * v.current_A!,
  equation: (v, r) => `B = μ0 n I = ${num(MU_0)} N/A^2 · ${q(v.turns_per_m!, '1/m')} · ${q(v.current_A!, 'A')} = ${res(r, 'T')}`,
});

export const EM_WIRE_FIELD = defineOperator({
  id: 'EM_WIRE_FIELD',
  domain: 'electromagnetism',
  formula: 'B = μ0 I/(2πr)',
  unit: 'T',
  inputs: [
    ['current_A', 'A', 1, REAL],
    ['distance_m', 'm', 0.01, positive('distance')],
  ],
  result_domain: REAL,
  reference: div(mul(CONST.mu0, x('current_A')), mul(k(2), PI, x('distance_m'))),
  compute: (v, g) => g.div(MU_0 * v.current_A!, 2 * Math.PI * v.distance_m!, 'distance_m'),
  equation: (v, r) => `B = μ0 I / (2π r) = ${num(MU_0)} N/A^2 · ${q(v.current_A!, 'A')} / (2π · ${q(v.distance_m!, 'm')}) = ` + `${res(r, 'T')}`,
});

export const EM_RC_TIME_CONSTANT = defineOperator({
  id: 'EM_RC_TIME_CONSTANT',
  domain: 'electromagnetism',
  formula: 'τ = RC',
  unit: 's',
  inputs: [
    ['resistance_ohm', 'ohm', 100, nonNegative('resistance')],
    ['capacitance_F', 'F', 1e-6, nonNegative('capacitance')],
  ],
  result_domain: nonNegative('time constant'),
  reference: mul(x('resistance_ohm'), x('capacitance_F')),
  compute: (v) => v.resistance_ohm! * v.capacitance_F!,
  equation: (v, r) => `τ = R C = ${q(v.resistance_ohm!, 'ohm')} · ${q(v.capacitance_F!, 'F')} = ${res(r, 's')}`,
});

export const EM_ELECTRIC_POWER = defineOperator({
  id: 'EM_ELECTRIC_POWER',
  domain: 'electromagnetism',
  formula: 'P = VI',
  unit: 'W',
  inputs: [
    ['voltage_V', 'V', 12, REAL],
    ['current_A', 'A', 1, REAL],
  ],
  result_domain: REAL,
  reference: mul(x('voltage_V'), x('current_A')),
  compute: (v) => v.voltage_V! * v.current_A!,
  equation: (v, r) => `P = V I = ${q(v.voltage_V!, 'V')} · ${q(v.current_A!, 'A')} = ${res(r, 'W')}`,
});

export const ELECTROMAGNETISM_OPERATORS: readonly OperatorDef[] = [
  EM_COULOMB_FORCE,
  EM_OHM_CURRENT,
  EM_CAPACITOR_ENERGY,
  EM_LC_RESONANCE,
  EM_SOLENOID_FIELD,
  EM_WIRE_FIELD,
  EM_RC_TIME_CONSTANT,
  EM_ELECTRIC_POWER,
];
