// Fluid operators of solvers.md §6.
import { G0 } from './constants.js';
import { nonNegative, positive, REAL } from './domains.js';
import { defineOperator, negKey, pw, q, res } from './define.js';
import { add, div, k, mul, PI, pow, sqrt, sub, x } from './reference.js';
import type { OperatorDef } from './types.js';

export const FLUID_REYNOLDS = defineOperator({
  id: 'FLUID_REYNOLDS',
  domain: 'fluids',
  formula: 'Re = ρvL/μ',
  unit: '1',
  inputs: [
    ['density_kg_m3', 'kg/m^3', 1000, nonNegative('density')],
    ['velocity_m_s', 'm/s', 1, nonNegative('flow speed')],
    ['length_m', 'm', 0.1, positive('characteristic length')],
    ['dynamic_viscosity_Pa_s', 'Pa*s', 1.002e-3, positive('dynamic viscosity')],
  ],
  result_domain: nonNegative('Reynolds number'),
  reference: div(mul(x('density_kg_m3'), x('velocity_m_s'), x('length_m')), x('dynamic_viscosity_Pa_s')),
  compute: (v, g) => g.div(v.density_kg_m3! * v.velocity_m_s! * v.length_m!, v.dynamic_viscosity_Pa_s!, 'dynamic_viscosity_Pa_s'),
  equation: (v, r) =>
    `Re = ρ v L / μ = ${q(v.density_kg_m3!, 'kg/m^3')} · ${q(v.velocity_m_s!, 'm/s')} · ${q(v.length_m!, 'm')} / ` +
    `${q(v.dynamic_viscosity_Pa_s!, 'Pa*s')} = ${res(r, '1')}`,
});

export const FLUID_TORRICELLI = defineOperator({
  id: 'FLUID_TORRICELLI',
  domain: 'fluids',
  formula: 'v = √(2gh)',
  unit: 'm/s',
  inputs: [
    ['gravity_m_s2', 'm/s^2', G0, nonNegative('gravitational acceleration')],
    ['height_m', 'm', 1, nonNegative('height of fluid above the outlet')],
  ],
  result_domain: nonNegative('speed'),
  reference: sqrt(mul(k(2), x('gravity_m_s2'), x('height_m'))),
  compute: (v, g) => g.sqrt(2 * v.gravity_m_s2! * v.height_m!, negKey(v, 'height_m', 'gravity_m_s2')),
  equation: (v, r) => `v = sqrt(2 g h) = sqrt(2 · ${q(v.gravity_m_s2!, 'm/s^2')} · ${q(v.height_m!, 'm')}) = ${res(r, 'm/s')}`,
});

export const FLUID_HYDROSTATIC_PRESSURE = defineOperator({
  id: 'FLUID_HYDROSTATIC_PRESSURE',
  domain: 'fluids',
  formula: 'P = P0 + ρgh',
  unit: 'Pa',
  inputs: [
    ['surface_pressure_Pa', 'Pa', 101325, nonNegative('absolute pressure')],
    ['density_kg_m3', 'kg/m^3', 1000, nonNegative('density')],
    ['gravity_m_s2', 'm/s^2', G0, nonNegative('gravitational acceleration')],
    ['depth_m', 'm', 10, nonNegative('depth')],
  ],
  result_domain: nonNegative('absolute pressure'),
  reference: add(x('surface_pressure_Pa'), mul(x('density_kg_m3'), x('gravity_m_s2'), x('depth_m'))),
  compute: (v) => v.surface_pressure_Pa! + v.density_kg_m3! * v.gravity_m_s2! * v.depth_m!,
  equation: (v, r) =>
    `P = P0 + ρ g h = ${q(v.surface_pressure_Pa!, 'Pa')} + ${q(v.density_kg_m3!, 'kg/m^3')} · ` +
    `${q(v.gravity_m_s2!, 'm/s^2')} · ${q(v.depth_m!, 'm')} = ${res(r, 'Pa')}`,
});

export const FLUID_POISEUILLE_FLOW = defineOperator({
  id: 'FLUID_POISEUILLE_FLOW',
  domain: 'fluids',
  formula: 'Q = πΔP r⁴/(8μL)',
  unit: 'm^3/s',
  inputs: [
    ['pressure_drop_Pa', 'Pa', 1000, REAL],
    ['radius_m', 'm', 0.01, nonNegative('radius')],
    ['dynamic_viscosity_Pa_s', 'Pa*s', 1.002e-3, positive('dynamic viscosity')],
    ['length_m', 'm', 1, positive('length')],
  ],
  result_domain: REAL,
  reference: div(mul(PI, x('pressure_drop_Pa'), pow(x('radius_m'), 4)), mul(k(8), x('dynamic_viscosity_Pa_s'), x('length_m'))),
  compute: (v, g) => {
    const r2 = v.radius_m! * v.radius_m!;
    return g.div(
      Math.PI * v.pressure_drop_Pa! * r2 * r2,
      8 * v.dynamic_viscosity_Pa_s! * v.length_m!,
      v.dynamic_viscosity_Pa_s! === 0 ? 'dynamic_viscosity_Pa_s' : 'length_m',
    );
  },
  equation: (v, r) =>
    `Q = π ΔP r^4 / (8 μ L) = π · ${q(v.pressure_drop_Pa!, 'Pa')} · ${pw(v.radius_m!, 'm', 4)} / ` +
    `(8 · ${q(v.dynamic_viscosity_Pa_s!, 'Pa*s')} · ${q(v.length_m!, 'm')}) = ${res(r, 'm^3/s')}`,
});

export const FLUID_DRAG_FORCE = defineOperator({
  id: 'FLUID_DRAG_FORCE',
  domain: 'fluids',
  formula: 'F = ½ρv²C_dA',
  unit: 'N',
  inputs: [
    ['density_kg_m3', 'kg/m^3', 1.225, nonNegative('density')],
    ['velocity_m_s', 'm/s', 30, REAL],
    ['drag_coefficient', '1', 0.47, nonNegative('drag coefficient')],
    ['area_m2', 'm^2', 0.01, nonNegative('area')],
  ],
  result_domain: nonNegative('force magnitude'),
  reference: mul(k(0.5), x('density_kg_m3'), pow(x('velocity_m_s'), 2), x('drag_coefficient'), x('area_m2')),
  compute: (v) => 0.5 * v.density_kg_m3! * v.velocity_m_s! * v.velocity_m_s! * v.drag_coefficient! * v.area_m2!,
  equation: (v, r) =>
    `F = 1/2 ρ v^2 C_d A = 1/2 · ${q(v.density_kg_m3!, 'kg/m^3')} · ${pw(v.velocity_m_s!, 'm/s', 2)} · ` +
    `${q(v.drag_coefficient!, '1')} · ${q(v.area_m2!, 'm^2')} = ${res(r, 'N')}`,
});

export const FLUID_STOKES_TERMINAL = defineOperator({
  id: 'FLUID_STOKES_TERMINAL',
  domain: 'fluids',
  formula: 'v = 2(ρp − ρf)gr²/(9μ)',
  unit: 'm/s',
  inputs: [
    ['particle_density_kg_m3', 'kg/m^3', 2650, nonNegative('density')],
    ['density_kg_m3', 'kg/m^3', 1000, nonNegative('density')],
    ['gravity_m_s2', 'm/s^2', G0, nonNegative('gravitational acceleration')],
    ['radius_m', 'm', 1e-5, nonNegative('radius')],
    ['dynamic_viscosity_Pa_s', 'Pa*s', 1.002e-3, positive('dynamic viscosity')],
  ],
  result_domain: REAL,
  reference: div(
    mul(k(2), sub(x('particle_density_kg_m3'), x('density_kg_m3')), x('gravity_m_s2'), pow(x('radius_m'), 2)),
    mul(k(9), x('dynamic_viscosity_Pa_s')),
  ),
  compute: (v, g) =>
    g.div(
      2 * (v.particle_density_kg_m3! - v.density_kg_m3!) * v.gravity_m_s2! * v.radius_m! * v.radius_m!,
      9 * v.dynamic_viscosity_Pa_s!,
      'dynamic_viscosity_Pa_s',
    ),
  equation: (v, r) =>
    `v = 2 (ρp - ρf) g r^2 / (9 μ) = 2 · (${q(v.particle_density_kg_m3!, 'kg/m^3')} - ${q(v.density_kg_m3!, 'kg/m^3')}) · ` +
    `${q(v.gravity_m_s2!, 'm/s^2')} · ${pw(v.radius_m!, 'm', 2)} / (9 · ${q(v.dynamic_viscosity_Pa_s!, 'Pa*s')}) = ` +
    `${res(r, 'm/s')}`,
});

export const FLUID_SHALLOW_WAVE_SPEED = defineOperator({
  id: 'FLUID_SHALLOW_WAVE_SPEED',
  domain: 'fluids',
  formula: 'c = √(gh)',
  unit: 'm/s',
  inputs: [
    ['gravity_m_s2', 'm/s^2', G0, nonNegative('gravitational acceleration')],
    ['depth_m', 'm', 10, nonNegative('depth')],
  ],
  result_domain: nonNegative('speed'),
  reference: sqrt(mul(x('gravity_m_s2'), x('depth_m'))),
  compute: (v, g) => g.sqrt(v.gravity_m_s2! * v.depth_m!, negKey(v, 'depth_m', 'gravity_m_s2')),
  equation: (v, r) => `c = sqrt(g h) = sqrt(${q(v.gravity_m_s2!, 'm/s^2')} · ${q(v.depth_m!, 'm')}) = ${res(r, 'm/s')}`,
});

export const FLUIDS_OPERATORS: readonly OperatorDef[] = [
  FLUID_REYNOLDS,
  FLUID_TORRICELLI,
  FLUID_HYDROSTATIC_PRESSURE,
  FLUID_POISEUILLE_FLOW,
  FLUID_DRAG_FORCE,
  FLUID_STOKES_TERMINAL,
  FLUID_SHALLOW_WAVE_SPEED,
];
