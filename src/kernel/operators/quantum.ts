// Quantum operators of solvers.md §6.
import { C_LIGHT, H_PLANCK, HBAR, M_ELECTRON, RYDBERG_ENERGY_J } from './constants.js';
import { between, integerAtLeast, nonNegative, positive, POSITIVE_MASS, PROBABILITY, REAL, type PhysicalDomain } from './domains.js';
import { defineOperator, num, pw, q, res } from './define.js';
import { add, CONST, cos, div, exp, k, mul, neg, pow, sqrt, sub, x } from './reference.js';
import type { OperatorDef } from './types.js';

/** The speed of a particle with a de Broglie wavelength: 0 < v < c. */
const MOVING_SPEED: PhysicalDomain = { text: `speed 0 < v < c = ${num(C_LIGHT)} m/s`, min: 0, min_inclusive: false, max: C_LIGHT, max_inclusive: false };
/** A bound state's energy, below the ionisation threshold. */
const BOUND_ENERGY: PhysicalDomain = { text: 'bound-state energy < 0', max: 0, max_inclusive: false };

export const QM_PHOTON_ENERGY = defineOperator({
  id: 'QM_PHOTON_ENERGY',
  domain: 'quantum',
  formula: 'E = hc/λ',
  unit: 'J',
  inputs: [['wavelength_m', 'm', 5e-7, positive('wavelength')]],
  result_domain: positive('energy'),
  reference: div(mul(CONST.h, CONST.c), x('wavelength_m')),
  compute: (v, g) => g.div(H_PLANCK * C_LIGHT, v.wavelength_m!, 'wavelength_m'),
  equation: (v, r) => `E = h c / λ = ${num(H_PLANCK)} J*s · ${num(C_LIGHT)} m/s / ${q(v.wavelength_m!, 'm')} = ${res(r, 'J')}`,
});

export const QM_DE_BROGLIE = defineOperator({
  id: 'QM_DE_BROGLIE',
  domain: 'quantum',
  formula: 'λ = h/(mv)',
  unit: 'm',
  inputs: [
    ['mass_kg', 'kg', M_ELECTRON, POSITIVE_MASS],
    ['velocity_m_s', 'm/s', 1e6, MOVING_SPEED],
  ],
  result_domain: positive('wavelength'),
  reference: div(CONST.h, mul(x('mass_kg'), x('velocity_m_s'))),
  compute: (v, g) => g.div(H_PLANCK, v.mass_kg! * v.velocity_m_s!, v.mass_kg! === 0 ? 'mass_kg' : 'velocity_m_s'),
  equation: (v, r) => `λ = h / (m v) = ${num(H_PLANCK)} J*s / (${q(v.mass_kg!, 'kg')} · ${q(v.velocity_m_s!, 'm/s')}) = ${res(r, 'm')}`,
});

export const QM_PARTICLE_IN_BOX = defineOperator({
  id: 'QM_PARTICLE_IN_BOX',
  domain: 'quantum',
  formula: 'E = n²h²/(8mL²)',
  unit: 'J',
  inputs: [
    ['level_n', '1', 1, integerAtLeast(1, 'quantum number n')],
    ['mass_kg', 'kg', M_ELECTRON, POSITIVE_MASS],
    ['width_m', 'm', 1e-9, positive('box width')],
  ],
  result_domain: positive('energy'),
  reference: div(mul(pow(x('level_n'), 2), pow(CONST.h, 2)), mul(k(8), x('mass_kg'), pow(x('width_m'), 2))),
  compute: (v, g) => {
    const n = v.level_n!;
    const L = v.width_m!;
    return g.div(n * n * H_PLANCK * H_PLANCK, 8 * v.mass_kg! * L * L, v.mass_kg! === 0 ? 'mass_kg' : 'width_m');
  },
  equation: (v, r) =>
    `E = n^2 h^2 / (8 m L^2) = ${pw(v.level_n!, '1', 2)} · ${pw(H_PLANCK, 'J*s', 2)} / (8 · ${q(v.mass_kg!, 'kg')} · ` +
    `${pw(v.width_m!, 'm', 2)}) = ${res(r, 'J')}`,
});

export const QM_HARMONIC_LEVEL = defineOperator({
  id: 'QM_HARMONIC_LEVEL',
  domain: 'quantum',
  formula: 'E = ħω(n + ½)',
  unit: 'J',
  inputs: [
    ['level_n', '1', 0, integerAtLeast(0, 'quantum number n')],
    ['omega_rad_s', 'rad/s', 1e15, nonNegative('angular frequency')],
  ],
  result_domain: nonNegative('energy'),
  reference: mul(CONST.hbar, x('omega_rad_s'), add(x('level_n'), k(0.5))),
  compute: (v) => HBAR * v.omega_rad_s! * (v.level_n! + 0.5),
  equation: (v, r) => `E = ħ ω (n + 1/2) = ${num(HBAR)} J*s · ${q(v.omega_rad_s!, 'rad/s')} · (${num(v.level_n!)} + 1/2) = ` + `${res(r, 'J')}`,
});

export const QM_HYDROGEN_LEVEL = defineOperator({
  id: 'QM_HYDROGEN_LEVEL',
  domain: 'quantum',
  formula: `E = −E_R/n² (E_R = ${num(RYDBERG_ENERGY_J)} J)`,
  unit: 'J',
  inputs: [['level_n', '1', 1, integerAtLeast(1, 'principal quantum number n')]],
  result_domain: BOUND_ENERGY,
  reference: neg(div(CONST.rydbergEnergy, pow(x('level_n'), 2))),
  compute: (v, g) => -g.div(RYDBERG_ENERGY_J, v.level_n! * v.level_n!, 'level_n'),
  equation: (v, r) => `E = -E_R / n^2 = -${num(RYDBERG_ENERGY_J)} J / ${pw(v.level_n!, '1', 2)} = ${res(r, 'J')}`,
});

export const QM_TUNNELING_PROBABILITY = defineOperator({
  id: 'QM_TUNNELING_PROBABILITY',
  domain: 'quantum',
  formula: 'T = exp(−2d√(2m(V−E))/ħ)',
  unit: '1',
  inputs: [
    ['mass_kg', 'kg', M_ELECTRON, POSITIVE_MASS],
    ['barrier_J', 'J', 1.602176634e-19, REAL],
    ['energy_J', 'J', 8.01088317e-20, REAL],
    ['width_m', 'm', 1e-10, nonNegative('barrier width')],
  ],
  result_domain: PROBABILITY,
  reference: exp(neg(div(mul(k(2), x('width_m'), sqrt(mul(k(2), x('mass_kg'), sub(x('barrier_J'), x('energy_J'))))), CONST.hbar))),
  compute: (v, g) => {
    const radicand = 2 * v.mass_kg! * (v.barrier_J! - v.energy_J!);
    const key = v.mass_kg! < 0 ? 'mass_kg' : 'energy_J';
    const kappa = g.sqrt(radicand, key) / HBAR;
    return Math.exp(-2 * v.width_m! * kappa);
  },
  equation: (v, r) =>
    `T = exp(-2 d sqrt(2 m (V - E)) / ħ) = exp(-2 · ${q(v.width_m!, 'm')} · sqrt(2 · ${q(v.mass_kg!, 'kg')} · ` +
    `(${q(v.barrier_J!, 'J')} - ${q(v.energy_J!, 'J')})) / ${num(HBAR)} J*s) = ${res(r, '1')}`,
});

export const QM_COMPTON_SHIFT = defineOperator({
  id: 'QM_COMPTON_SHIFT',
  domain: 'quantum',
  formula: 'Δλ = (h/m_e c)(1 − cos θ)',
  unit: 'm',
  inputs: [['angle_rad', 'rad', Math.PI / 2, between(0, Math.PI, 'scattering angle (rad)')]],
  result_domain: nonNegative('wavelength shift'),
  reference: mul(div(CONST.h, mul(CONST.me, CONST.c)), sub(k(1), cos(x('angle_rad')))),
  compute: (v) => (H_PLANCK / (M_ELECTRON * C_LIGHT)) * (1 - Math.cos(v.angle_rad!)),
  equation: (v, r) =>
    `Δλ = h / (m_e c) (1 - cos θ) = ${num(H_PLANCK)} J*s / (${num(M_ELECTRON)} kg · ${num(C_LIGHT)} m/s) · ` +
    `(1 - cos(${q(v.angle_rad!, 'rad')})) = ${res(r, 'm')}`,
});

export const QUANTUM_OPERATORS: readonly OperatorDef[] = [
  QM_PHOTON_ENERGY,
  QM_DE_BROGLIE,
  QM_PARTICLE_IN_BOX,
  QM_HARMONIC_LEVEL,
  QM_HYDROGEN_LEVEL,
  QM_TUNNELING_PROBABILITY,
  QM_COMPTON_SHIFT,
];
