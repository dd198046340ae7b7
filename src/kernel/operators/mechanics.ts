// Mechanics operators of solvers.md §6.
import { G_NEWTON, G0 } from './constants.js';
import { between, MASS, nonNegative, positive, POSITIVE_MASS, REAL, SPEED, VELOCITY } from './domains.js';
import { defineOperator, negKey, num, pw, q, res } from './define.js';
import { CONST, div, k, mul, PI, pow, sin, sqrt, x } from './reference.js';
import type { OperatorDef } from './types.js';

const G_UNIT = 'm^3/(kg*s^2)';

export const MECH_KINETIC_ENERGY = defineOperator({
  id: 'MECH_KINETIC_ENERGY',
  domain: 'mechanics',
  formula: 'E = ½mv²',
  unit: 'J',
  inputs: [
    ['mass_kg', 'kg', 1, MASS],
    ['velocity_m_s', 'm/s', 1, VELOCITY],
  ],
  result_domain: nonNegative('energy'),
  reference: mul(k(0.5), x('mass_kg'), pow(x('velocity_m_s'), 2)),
  compute: (v) => 0.5 * v.mass_kg! * v.velocity_m_s! * v.velocity_m_s!,
  equation: (v, r) => `E = 1/2 m v^2 = 1/2 · ${q(v.mass_kg!, 'kg')} · ${pw(v.velocity_m_s!, 'm/s', 2)} = ${res(r, 'J')}`,
});

export const MECH_POTENTIAL_ENERGY = defineOperator({
  id: 'MECH_POTENTIAL_ENERGY',
  domain: 'mechanics',
  formula: 'U = mgh',
  unit: 'J',
  inputs: [
    ['mass_kg', 'kg', 1, MASS],
    ['gravity_m_s2', 'm/s^2', G0, nonNegative('gravitational acceleration')],
    ['height_m', 'm', 1, REAL],
  ],
  result_domain: REAL,
  reference: mul(x('mass_kg'), x('gravity_m_s2'), x('height_m')),
  compute: (v) => v.mass_kg! * v.gravity_m_s2! * v.height_m!,
  equation: (v, r) => `U = m g h = ${q(v.mass_kg!, 'kg')} · ${q(v.gravity_m_s2!, 'm/s^2')} · ${q(v.height_m!, 'm')} = ${res(r, 'J')}`,
});

export const MECH_PENDULUM_PERIOD = defineOperator({
  id: 'MECH_PENDULUM_PERIOD',
  domain: 'mechanics',
  formula: 'T = 2π√(L/g)',
  unit: 's',
  inputs: [
    ['length_m', 'm', 1, positive('length')],
    ['gravity_m_s2', 'm/s^2', G0, positive('gravitational acceleration')],
  ],
  result_domain: positive('period'),
  reference: mul(k(2), PI, sqrt(div(x('length_m'), x('gravity_m_s2')))),
  compute: (v, g) => {
    const ratio = g.div(v.length_m!, v.gravity_m_s2!, 'gravity_m_s2');
    return 2 * Math.PI * g.sqrt(ratio, negKey(v, 'length_m', 'gravity_m_s2'));
  },
  equation: (v, r) => `T = 2π sqrt(L/g) = 2π · sqrt(${q(v.length_m!, 'm')} / ${q(v.gravity_m_s2!, 'm/s^2')}) = ${res(r, 's')}`,
});

export const MECH_SPRING_PERIOD = defineOperator({
  id: 'MECH_SPRING_PERIOD',
  domain: 'mechanics',
  formula: 'T = 2π√(m/k)',
  unit: 's',
  inputs: [
    ['mass_kg', 'kg', 1, POSITIVE_MASS],
    ['spring_constant_N_m', 'N/m', 1, positive('spring constant')],
  ],
  result_domain: positive('period'),
  reference: mul(k(2), PI, sqrt(div(x('mass_kg'), x('spring_constant_N_m')))),
  compute: (v, g) => {
    const ratio = g.div(v.mass_kg!, v.spring_constant_N_m!, 'spring_constant_N_m');
    return 2 * Math.PI * g.sqrt(ratio, negKey(v, 'mass_kg', 'spring_constant_N_m'));
  },
  equation: (v, r) => `T = 2π sqrt(m/k) = 2π · sqrt(${q(v.mass_kg!, 'kg')} / ${q(v.spring_constant_N_m!, 'N/m')}) = ${res(r, 's')}`,
});

export const MECH_PROJECTILE_RANGE = defineOperator({
  id: 'MECH_PROJECTILE_RANGE',
  domain: 'mechanics',
  formula: 'R = v² sin 2θ / g',
  unit: 'm',
  inputs: [
    ['velocity_m_s', 'm/s', 10, SPEED],
    ['angle_rad', 'rad', Math.PI / 4, between(0, Math.PI / 2, 'launch angle (rad)')],
    ['gravity_m_s2', 'm/s^2', G0, positive('gravitational acceleration')],
  ],
  result_domain: nonNegative('range'),
  reference: div(mul(pow(x('velocity_m_s'), 2), sin(mul(k(2), x('angle_rad')))), x('gravity_m_s2')),
  compute: (v, g) => g.div(v.velocity_m_s! * v.velocity_m_s! * Math.sin(2 * v.angle_rad!), v.gravity_m_s2!, 'gravity_m_s2'),
  equation: (v, r) =>
    `R = v^2 sin(2θ) / g = ${pw(v.velocity_m_s!, 'm/s', 2)} · sin(2 · ${q(v.angle_rad!, 'rad')}) / ` + `${q(v.gravity_m_s2!, 'm/s^2')} = ${res(r, 'm')}`,
});

export const MECH_ORBITAL_PERIOD = defineOperator({
  id: 'MECH_ORBITAL_PERIOD',
  domain: 'mechanics',
  formula: 'T = 2π√(a³/GM)',
  unit: 's',
  inputs: [
    ['semi_major_axis_m', 'm', 1.495978707e11, positive('semi-major axis')],
    ['central_mass_kg', 'kg', 1.98847e30, POSITIVE_MASS],
  ],
  result_domain: positive('period'),
  reference: mul(k(2), PI, sqrt(div(pow(x('semi_major_axis_m'), 3), mul(CONST.G, x('central_mass_kg'))))),
  compute: (v, g) => {
    const a = v.semi_major_axis_m!;
    const ratio = g.div(a * a * a, G_NEWTON * v.central_mass_kg!, 'central_mass_kg');
    return 2 * Math.PI * g.sqrt(ratio, negKey(v, 'semi_major_axis_m', 'central_mass_kg'));
  },
  equation: (v, r) =>
    `T = 2π sqrt(a^3/(G M)) = 2π · sqrt(${pw(v.semi_major_axis_m!, 'm', 3)} / (${num(G_NEWTON)} ${G_UNIT} · ` +
    `${q(v.central_mass_kg!, 'kg')})) = ${res(r, 's')}`,
});

export const MECH_ESCAPE_VELOCITY = defineOperator({
  id: 'MECH_ESCAPE_VELOCITY',
  domain: 'mechanics',
  formula: 'v = √(2GM/r)',
  unit: 'm/s',
  inputs: [
    ['central_mass_kg', 'kg', 5.9722e24, MASS],
    ['radius_m', 'm', 6.371e6, positive('radius')],
  ],
  result_domain: nonNegative('speed'),
  reference: sqrt(div(mul(k(2), CONST.G, x('central_mass_kg')), x('radius_m'))),
  compute: (v, g) => {
    const ratio = g.div(2 * G_NEWTON * v.central_mass_kg!, v.radius_m!, 'radius_m');
    return g.sqrt(ratio, negKey(v, 'central_mass_kg', 'radius_m'));
  },
  equation: (v, r) =>
    `v = sqrt(2 G M / r) = sqrt(2 · ${num(G_NEWTON)} ${G_UNIT} · ${q(v.central_mass_kg!, 'kg')} / ` + `${q(v.radius_m!, 'm')}) = ${res(r, 'm/s')}`,
});

export const MECH_GRAVITATIONAL_FORCE = defineOperator({
  id: 'MECH_GRAVITATIONAL_FORCE',
  domain: 'mechanics',
  formula: 'F = G m1 m2 / r²',
  unit: 'N',
  inputs: [
    ['mass1_kg', 'kg', 5.9722e24, MASS],
    ['mass2_kg', 'kg', 7.342e22, MASS],
    ['distance_m', 'm', 3.844e8, positive('distance')],
  ],
  result_domain: nonNegative('force magnitude'),
  reference: div(mul(CONST.G, x('mass1_kg'), x('mass2_kg')), pow(x('distance_m'), 2)),
  compute: (v, g) => g.div(G_NEWTON * v.mass1_kg! * v.mass2_kg!, v.distance_m! * v.distance_m!, 'distance_m'),
  equation: (v, r) =>
    `F = G m1 m2 / r^2 = ${num(G_NEWTON)} ${G_UNIT} · ${q(v.mass1_kg!, 'kg')} · ${q(v.mass2_kg!, 'kg')} / ` + `${pw(v.distance_m!, 'm', 2)} = ${res(r, 'N')}`,
});

export const MECHANICS_OPERATORS: readonly OperatorDef[] = [
  MECH_KINETIC_ENERGY,
  MECH_POTENTIAL_ENERGY,
  MECH_PENDULUM_PERIOD,
  MECH_SPRING_PERIOD,
  MECH_PROJECTILE_RANGE,
  MECH_ORBITAL_PERIOD,
  MECH_ESCAPE_VELOCITY,
  MECH_GRAVITATIONAL_FORCE,
];
