// Relativity operators of solvers.md §6.
import { C_LIGHT, G_NEWTON } from './constants.js';
import { atLeast, MASS, nonNegative, positive, REAL, VELOCITY } from './domains.js';
import { defineOperator, num, pw, q, res, type Guard } from './define.js';
import { add, CONST, div, k, mul, pow, sqrt, sub, x, type Expr } from './reference.js';
import type { OperatorDef } from './types.js';

const G_UNIT = 'm^3/(kg*s^2)';

/**
 * √(1 − v²/c²), written (1 − β)(1 + β) so it keeps its relative accuracy near c. |v| ≥ c is a domain
 * violation on velocity_m_s.
 */
function inverseGamma(v: number, g: Guard): number {
  const beta = v / C_LIGHT;
  const oneMinusBeta2 = (1 - beta) * (1 + beta);
  g.require(oneMinusBeta2 > 0, 'velocity_m_s', `|v| must be below c = ${num(C_LIGHT)} m/s (v = ${num(v)} m/s)`, {
    min: -C_LIGHT,
    max: C_LIGHT,
    inclusive: false,
  });
  return Math.sqrt(oneMinusBeta2);
}

/** √(1 − v²/c²) as a reference expression. */
function inverseGammaOf(v: Expr): Expr {
  return sqrt(sub(k(1), div(pow(v, 2), pow(CONST.c, 2))));
}

/** z = x / (s(1 + s)), s = √(1 − x), x = 2GM/(c²r): the weak-field form, without the cancellation of 1/s − 1. */
const redshiftReference: Expr = (() => {
  const ratio = div(mul(k(2), CONST.G, x('mass_kg')), mul(pow(CONST.c, 2), x('radius_m')));
  const s = sqrt(sub(k(1), ratio));
  return div(ratio, mul(s, add(k(1), s)));
})();

/** 'sqrt(1 - (v m/s)^2 / (c m/s)^2)' */
function rootText(v: number): string {
  return `sqrt(1 - ${pw(v, 'm/s', 2)} / ${pw(C_LIGHT, 'm/s', 2)})`;
}

export const REL_LORENTZ_FACTOR = defineOperator({
  id: 'REL_LORENTZ_FACTOR',
  domain: 'relativity',
  formula: 'γ = 1/√(1 − v²/c²)',
  unit: '1',
  inputs: [['velocity_m_s', 'm/s', 1.5e8, VELOCITY]],
  result_domain: atLeast(1, 'Lorentz factor'),
  reference: div(k(1), inverseGammaOf(x('velocity_m_s'))),
  compute: (v, g) => 1 / inverseGamma(v.velocity_m_s!, g),
  equation: (v, r) => `γ = 1 / sqrt(1 - v^2/c^2) = 1 / ${rootText(v.velocity_m_s!)} = ${res(r, '1')}`,
});

export const REL_TIME_DILATION = defineOperator({
  id: 'REL_TIME_DILATION',
  domain: 'relativity',
  formula: 'Δt = γΔτ',
  unit: 's',
  inputs: [
    ['velocity_m_s', 'm/s', 1.5e8, VELOCITY],
    ['proper_time_s', 's', 1, nonNegative('proper time')],
  ],
  result_domain: nonNegative('time'),
  reference: div(x('proper_time_s'), inverseGammaOf(x('velocity_m_s'))),
  compute: (v, g) => v.proper_time_s! / inverseGamma(v.velocity_m_s!, g),
  equation: (v, r) => `Δt = γ Δτ = ${q(v.proper_time_s!, 's')} / ${rootText(v.velocity_m_s!)} = ${res(r, 's')}`,
});

export const REL_LENGTH_CONTRACTION = defineOperator({
  id: 'REL_LENGTH_CONTRACTION',
  domain: 'relativity',
  formula: 'L = L0/γ',
  unit: 'm',
  inputs: [
    ['velocity_m_s', 'm/s', 1.5e8, VELOCITY],
    ['proper_length_m', 'm', 1, nonNegative('proper length')],
  ],
  result_domain: nonNegative('length'),
  reference: mul(x('proper_length_m'), inverseGammaOf(x('velocity_m_s'))),
  compute: (v, g) => v.proper_length_m! * inverseGamma(v.velocity_m_s!, g),
  equation: (v, r) => `L = L0 / γ = ${q(v.proper_length_m!, 'm')} · ${rootText(v.velocity_m_s!)} = ${res(r, 'm')}`,
});

export const REL_REST_ENERGY = defineOperator({
  id: 'REL_REST_ENERGY',
  domain: 'relativity',
  formula: 'E = mc²',
  unit: 'J',
  inputs: [['mass_kg', 'kg', 1, MASS]],
  result_domain: nonNegative('energy'),
  reference: mul(x('mass_kg'), pow(CONST.c, 2)),
  compute: (v) => v.mass_kg! * C_LIGHT * C_LIGHT,
  equation: (v, r) => `E = m c^2 = ${q(v.mass_kg!, 'kg')} · ${pw(C_LIGHT, 'm/s', 2)} = ${res(r, 'J')}`,
});

export const REL_SCHWARZSCHILD_RADIUS = defineOperator({
  id: 'REL_SCHWARZSCHILD_RADIUS',
  domain: 'relativity',
  formula: 'r_s = 2GM/c²',
  unit: 'm',
  inputs: [['mass_kg', 'kg', 1.98847e30, MASS]],
  result_domain: nonNegative('radius'),
  reference: div(mul(k(2), CONST.G, x('mass_kg')), pow(CONST.c, 2)),
  compute: (v) => (2 * G_NEWTON * v.mass_kg!) / (C_LIGHT * C_LIGHT),
  equation: (v, r) => `r_s = 2 G M / c^2 = 2 · ${num(G_NEWTON)} ${G_UNIT} · ${q(v.mass_kg!, 'kg')} / ${pw(C_LIGHT, 'm/s', 2)} = ` + `${res(r, 'm')}`,
});

export const REL_GRAVITATIONAL_REDSHIFT = defineOperator({
  id: 'REL_GRAVITATIONAL_REDSHIFT',
  domain: 'relativity',
  formula: 'z = 1/√(1 − 2GM/(c²r)) − 1',
  unit: '1',
  inputs: [
    ['mass_kg', 'kg', 1.98847e30, MASS],
    ['radius_m', 'm', 6.957e8, positive('radius')],
  ],
  result_domain: nonNegative('redshift'),
  reference: redshiftReference,
  compute: (v, g) => {
    const x = g.div(2 * G_NEWTON * v.mass_kg!, C_LIGHT * C_LIGHT * v.radius_m!, 'radius_m');
    g.require(x < 1, 'radius_m', `radius must lie outside the Schwarzschild radius (2GM/(c^2 r) = ${num(x)} ≥ 1)`, {
      min: (2 * G_NEWTON * v.mass_kg!) / (C_LIGHT * C_LIGHT),
      inclusive: false,
    });
    // z = 1/s − 1 with s = √(1 − x), written x / (s(1 + s)) to avoid cancellation for weak fields.
    const s = Math.sqrt(1 - x);
    return x / (s * (1 + s));
  },
  equation: (v, r) =>
    `z = 1 / sqrt(1 - 2 G M / (c^2 r)) - 1 = 1 / sqrt(1 - 2 · ${num(G_NEWTON)} ${G_UNIT} · ${q(v.mass_kg!, 'kg')} / ` +
    `(${pw(C_LIGHT, 'm/s', 2)} · ${q(v.radius_m!, 'm')})) - 1 = ${res(r, '1')}`,
});

export const REL_MOMENTUM = defineOperator({
  id: 'REL_MOMENTUM',
  domain: 'relativity',
  formula: 'p = γmv',
  unit: 'kg*m/s',
  inputs: [
    ['mass_kg', 'kg', 1, MASS],
    ['velocity_m_s', 'm/s', 1.5e8, VELOCITY],
  ],
  result_domain: REAL,
  reference: div(mul(x('mass_kg'), x('velocity_m_s')), inverseGammaOf(x('velocity_m_s'))),
  compute: (v, g) => (v.mass_kg! * v.velocity_m_s!) / inverseGamma(v.velocity_m_s!, g),
  equation: (v, r) => `p = γ m v = ${q(v.mass_kg!, 'kg')} · ${q(v.velocity_m_s!, 'm/s')} / ${rootText(v.velocity_m_s!)} = ` + `${res(r, 'kg*m/s')}`,
});

export const RELATIVITY_OPERATORS: readonly OperatorDef[] = [
  REL_LORENTZ_FACTOR,
  REL_TIME_DILATION,
  REL_LENGTH_CONTRACTION,
  REL_REST_ENERGY,
  REL_SCHWARZSCHILD_RADIUS,
  REL_GRAVITATIONAL_REDSHIFT,
  REL_MOMENTUM,
];
