// The closed-form operator registry of solvers.md §6: every operator against closed forms computed here from the
// physics (constants typed in from CODATA 2018, not imported), published anchors, validation errors with their
// part-7 extra fields, equation strings and chain evaluation.
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/kernel/errors.js';
import { evaluateChain, ko42Equation, type Modulation } from '../../src/kernel/operators/chain.js';
import * as K from '../../src/kernel/operators/constants.js';
import { num } from '../../src/kernel/operators/define.js';
import { categories, editDistance, getOperator, KO42, listOperators, nearestDomain, operatorSpec, OPERATORS } from '../../src/kernel/operators/registry.js';
import { DOMAINS, type OperatorDef } from '../../src/kernel/operators/types.js';
import { normCdf } from '../../src/numerics/special.js';
import { InputError } from '../../src/solvers/errors.js';

// CODATA 2018 (solvers.md §1), typed in independently of constants.ts.
const c = 299792458;
const h = 6.62607015e-34;
const hbar = h / (2 * Math.PI);
const G = 6.6743e-11;
const eps0 = 8.8541878128e-12;
const mu0 = 1.25663706212e-6;
const me = 9.1093837015e-31;
const sigmaSB = 5.670374419e-8;
const wienB = 2.897771955e-3;
const ER = 2.1798723611035e-18;
const Faraday = 96485.33212;
const Rgas = 8.314462618;
const eC = 1.602176634e-19;
const g0 = 9.80665;
const Msun = 1.98847e30;
const Mearth = 5.9722e24;

type V = Record<string, number>;
interface Case {
  unit: string;
  /** Keys and defaults in the order of the §6 table. */
  defaults: V;
  /** Closed form on fully resolved inputs. */
  f: (v: V) => number;
  /** Two non-default requests (partial inputs; the rest take the defaults above). */
  alt: [V, V];
}

function bs(v: V, type: 'call' | 'put'): number {
  const {
    spot: S,
    strike: X,
    rate: r,
    volatility: s,
    maturity_years: T,
    dividend_yield: q,
  } = v as Record<'spot' | 'strike' | 'rate' | 'volatility' | 'maturity_years' | 'dividend_yield', number>;
  const d1 = (Math.log(S / X) + (r - q + (s * s) / 2) * T) / (s * Math.sqrt(T));
  const d2 = d1 - s * Math.sqrt(T);
  return type === 'call'
    ? S * Math.exp(-q * T) * normCdf(d1) - X * Math.exp(-r * T) * normCdf(d2)
    : X * Math.exp(-r * T) * normCdf(-d2) - S * Math.exp(-q * T) * normCdf(-d1);
}
const BS_DEFAULTS = { spot: 100, strike: 100, rate: 0.05, volatility: 0.2, maturity_years: 1, dividend_yield: 0 };
const gammaOf = (v: number) => 1 / Math.sqrt(1 - (v * v) / (c * c));

const CASES: Record<string, Case> = {
  // mechanics
  MECH_KINETIC_ENERGY: {
    unit: 'J',
    defaults: { mass_kg: 1, velocity_m_s: 1 },
    f: (v) => (v.mass_kg! * v.velocity_m_s! ** 2) / 2,
    alt: [
      { mass_kg: 2, velocity_m_s: 3 },
      { mass_kg: 1500, velocity_m_s: -27.8 },
    ],
  },
  MECH_POTENTIAL_ENERGY: {
    unit: 'J',
    defaults: { mass_kg: 1, gravity_m_s2: g0, height_m: 1 },
    f: (v) => v.mass_kg! * v.gravity_m_s2! * v.height_m!,
    alt: [
      { mass_kg: 70, height_m: 8848 },
      { mass_kg: 2, gravity_m_s2: 1.625, height_m: -3 },
    ],
  },
  MECH_PENDULUM_PERIOD: {
    unit: 's',
    defaults: { length_m: 1, gravity_m_s2: g0 },
    f: (v) => 2 * Math.PI * Math.sqrt(v.length_m! / v.gravity_m_s2!),
    alt: [{ length_m: 0.994 }, { length_m: 2, gravity_m_s2: 1.625 }],
  },
  MECH_SPRING_PERIOD: {
    unit: 's',
    defaults: { mass_kg: 1, spring_constant_N_m: 1 },
    f: (v) => 2 * Math.PI * Math.sqrt(v.mass_kg! / v.spring_constant_N_m!),
    alt: [
      { mass_kg: 0.5, spring_constant_N_m: 200 },
      { mass_kg: 4, spring_constant_N_m: Math.PI ** 2 },
    ],
  },
  MECH_PROJECTILE_RANGE: {
    unit: 'm',
    defaults: { velocity_m_s: 10, angle_rad: Math.PI / 4, gravity_m_s2: g0 },
    f: (v) => (v.velocity_m_s! ** 2 * Math.sin(2 * v.angle_rad!)) / v.gravity_m_s2!,
    alt: [
      { velocity_m_s: 20, angle_rad: Math.PI / 6 },
      { velocity_m_s: 50, angle_rad: 0.3, gravity_m_s2: 3.72 },
    ],
  },
  MECH_ORBITAL_PERIOD: {
    unit: 's',
    defaults: { semi_major_axis_m: 1.495978707e11, central_mass_kg: 1.98847e30 },
    f: (v) => 2 * Math.PI * Math.sqrt(v.semi_major_axis_m! ** 3 / (G * v.central_mass_kg!)),
    alt: [
      { semi_major_axis_m: 3.844e8, central_mass_kg: Mearth },
      { semi_major_axis_m: 4.2164e7, central_mass_kg: Mearth },
    ],
  },
  MECH_ESCAPE_VELOCITY: {
    unit: 'm/s',
    defaults: { central_mass_kg: 5.9722e24, radius_m: 6.371e6 },
    f: (v) => Math.sqrt((2 * G * v.central_mass_kg!) / v.radius_m!),
    alt: [
      { central_mass_kg: 7.342e22, radius_m: 1.7374e6 },
      { central_mass_kg: Msun, radius_m: 6.957e8 },
    ],
  },
  MECH_GRAVITATIONAL_FORCE: {
    unit: 'N',
    defaults: { mass1_kg: 5.9722e24, mass2_kg: 7.342e22, distance_m: 3.844e8 },
    f: (v) => (G * v.mass1_kg! * v.mass2_kg!) / v.distance_m! ** 2,
    alt: [
      { mass1_kg: 1, mass2_kg: 1, distance_m: 1 },
      { mass1_kg: 80, mass2_kg: Mearth, distance_m: 6.371e6 },
    ],
  },
  // thermodynamics
  THERMO_IDEAL_GAS_PRESSURE: {
    unit: 'Pa',
    defaults: { amount_mol: 1, temperature_K: 273.15, volume_m3: 0.0224 },
    f: (v) => (v.amount_mol! * Rgas * v.temperature_K!) / v.volume_m3!,
    alt: [
      { amount_mol: 2, temperature_K: 300, volume_m3: 0.05 },
      { amount_mol: 0.5, temperature_K: 77, volume_m3: 1e-3 },
    ],
  },
  THERMO_CARNOT_EFFICIENCY: {
    unit: '1',
    defaults: { cold_K: 300, hot_K: 600 },
    f: (v) => (v.hot_K! - v.cold_K!) / v.hot_K!,
    alt: [
      { cold_K: 273.15, hot_K: 373.15 },
      { cold_K: 290, hot_K: 1500 },
    ],
  },
  THERMO_STEFAN_BOLTZMANN: {
    unit: 'W/m^2',
    defaults: { emissivity: 1, temperature_K: 5772 },
    f: (v) => v.emissivity! * sigmaSB * v.temperature_K! ** 4,
    alt: [{ emissivity: 0.9, temperature_K: 300 }, { temperature_K: 1000 }],
  },
  THERMO_WIEN_PEAK: {
    unit: 'm',
    defaults: { temperature_K: 5772 },
    f: (v) => wienB / v.temperature_K!,
    alt: [{ temperature_K: 310 }, { temperature_K: 2.725 }],
  },
  THERMO_SENSIBLE_HEAT: {
    unit: 'J',
    defaults: { mass_kg: 1, specific_heat_J_kgK: 4186, delta_T_K: 1 },
    f: (v) => v.mass_kg! * v.specific_heat_J_kgK! * v.delta_T_K!,
    alt: [{ mass_kg: 2.5, specific_heat_J_kgK: 897, delta_T_K: 40 }, { delta_T_K: -10 }],
  },
  THERMO_CONDUCTION: {
    unit: 'W',
    defaults: { conductivity_W_mK: 401, area_m2: 1, delta_T_K: 1, thickness_m: 1 },
    f: (v) => (v.conductivity_W_mK! * v.area_m2! * v.delta_T_K!) / v.thickness_m!,
    alt: [
      { conductivity_W_mK: 0.04, area_m2: 10, delta_T_K: 20, thickness_m: 0.1 },
      { conductivity_W_mK: 1.05, area_m2: 2, delta_T_K: 15, thickness_m: 0.004 },
    ],
  },
  THERMO_ISOTHERMAL_ENTROPY: {
    unit: 'J/K',
    defaults: { amount_mol: 1, volume1_m3: 1, volume2_m3: 2 },
    f: (v) => v.amount_mol! * Rgas * Math.log(v.volume2_m3! / v.volume1_m3!),
    alt: [{ amount_mol: 2, volume1_m3: 3, volume2_m3: 1 }, { volume2_m3: Math.E }],
  },
  // electromagnetism
  EM_COULOMB_FORCE: {
    unit: 'N',
    defaults: { charge1_C: 1e-6, charge2_C: 1e-6, distance_m: 1 },
    f: (v) => (v.charge1_C! * v.charge2_C!) / (4 * Math.PI * eps0 * v.distance_m! ** 2),
    alt: [
      { charge1_C: eC, charge2_C: -eC, distance_m: 5.29177210903e-11 },
      { charge1_C: 2e-6, charge2_C: 3e-6, distance_m: 0.05 },
    ],
  },
  EM_OHM_CURRENT: {
    unit: 'A',
    defaults: { voltage_V: 12, resistance_ohm: 100 },
    f: (v) => v.voltage_V! / v.resistance_ohm!,
    alt: [
      { voltage_V: 230, resistance_ohm: 52.9 },
      { voltage_V: -5, resistance_ohm: 1000 },
    ],
  },
  EM_CAPACITOR_ENERGY: {
    unit: 'J',
    defaults: { capacitance_F: 1e-6, voltage_V: 12 },
    f: (v) => (v.capacitance_F! * v.voltage_V! ** 2) / 2,
    alt: [
      { capacitance_F: 4.7e-3, voltage_V: 25 },
      { capacitance_F: 1e-12, voltage_V: 1000 },
    ],
  },
  EM_LC_RESONANCE: {
    unit: 'Hz',
    defaults: { inductance_H: 1e-3, capacitance_F: 1e-6 },
    f: (v) => 1 / (2 * Math.PI * Math.sqrt(v.inductance_H! * v.capacitance_F!)),
    alt: [
      { inductance_H: 1e-6, capacitance_F: 1e-9 },
      { inductance_H: 0.25, capacitance_F: 1e-4 },
    ],
  },
  EM_SOLENOID_FIELD: {
    unit: 'T',
    defaults: { turns_per_m: 1000, current_A: 1 },
    f: (v) => mu0 * v.turns_per_m! * v.current_A!,
    alt: [
      { turns_per_m: 5000, current_A: 2 },
      { turns_per_m: 100, current_A: -0.5 },
    ],
  },
  EM_WIRE_FIELD: {
    unit: 'T',
    defaults: { current_A: 1, distance_m: 0.01 },
    f: (v) => (mu0 * v.current_A!) / (2 * Math.PI * v.distance_m!),
    alt: [
      { current_A: 10, distance_m: 0.05 },
      { current_A: 1000, distance_m: 1 },
    ],
  },
  EM_RC_TIME_CONSTANT: {
    unit: 's',
    defaults: { resistance_ohm: 100, capacitance_F: 1e-6 },
    f: (v) => v.resistance_ohm! * v.capacitance_F!,
    alt: [
      { resistance_ohm: 10000, capacitance_F: 1e-6 },
      { resistance_ohm: 4.7e3, capacitance_F: 2.2e-9 },
    ],
  },
  EM_ELECTRIC_POWER: {
    unit: 'W',
    defaults: { voltage_V: 12, current_A: 1 },
    f: (v) => v.voltage_V! * v.current_A!,
    alt: [
      { voltage_V: 230, current_A: 10 },
      { voltage_V: 3.7, current_A: -0.2 },
    ],
  },
  // quantum
  QM_PHOTON_ENERGY: {
    unit: 'J',
    defaults: { wavelength_m: 5e-7 },
    f: (v) => (h * c) / v.wavelength_m!,
    alt: [{ wavelength_m: 6.5628e-7 }, { wavelength_m: 1e-10 }],
  },
  QM_DE_BROGLIE: {
    unit: 'm',
    defaults: { mass_kg: me, velocity_m_s: 1e6 },
    f: (v) => h / (v.mass_kg! * v.velocity_m_s!),
    alt: [
      { mass_kg: 1.67492749804e-27, velocity_m_s: 2200 },
      { mass_kg: 0.145, velocity_m_s: 40 },
    ],
  },
  QM_PARTICLE_IN_BOX: {
    unit: 'J',
    defaults: { level_n: 1, mass_kg: me, width_m: 1e-9 },
    f: (v) => (v.level_n! ** 2 * h * h) / (8 * v.mass_kg! * v.width_m! ** 2),
    alt: [{ level_n: 2 }, { level_n: 3, mass_kg: 1.67262192369e-27, width_m: 1e-14 }],
  },
  QM_HARMONIC_LEVEL: {
    unit: 'J',
    defaults: { level_n: 0, omega_rad_s: 1e15 },
    f: (v) => hbar * v.omega_rad_s! * (v.level_n! + 0.5),
    alt: [{ level_n: 1 }, { level_n: 5, omega_rad_s: 2e14 }],
  },
  QM_HYDROGEN_LEVEL: {
    unit: 'J',
    defaults: { level_n: 1 },
    f: (v) => -ER / v.level_n! ** 2,
    alt: [{ level_n: 2 }, { level_n: 3 }],
  },
  QM_TUNNELING_PROBABILITY: {
    unit: '1',
    defaults: { mass_kg: me, barrier_J: 1.602176634e-19, energy_J: 8.01088317e-20, width_m: 1e-10 },
    f: (v) => Math.exp((-2 * v.width_m! * Math.sqrt(2 * v.mass_kg! * (v.barrier_J! - v.energy_J!))) / hbar),
    alt: [{ width_m: 5e-10 }, { barrier_J: 2 * eC, energy_J: 0.1 * eC, width_m: 2e-10 }],
  },
  QM_COMPTON_SHIFT: {
    unit: 'm',
    defaults: { angle_rad: Math.PI / 2 },
    f: (v) => (h / (me * c)) * (1 - Math.cos(v.angle_rad!)),
    alt: [{ angle_rad: Math.PI }, { angle_rad: 1 }],
  },
  // relativity
  REL_LORENTZ_FACTOR: {
    unit: '1',
    defaults: { velocity_m_s: 1.5e8 },
    f: (v) => gammaOf(v.velocity_m_s!),
    alt: [{ velocity_m_s: 0.6 * c }, { velocity_m_s: -0.99 * c }],
  },
  REL_TIME_DILATION: {
    unit: 's',
    defaults: { velocity_m_s: 1.5e8, proper_time_s: 1 },
    f: (v) => gammaOf(v.velocity_m_s!) * v.proper_time_s!,
    alt: [
      { velocity_m_s: 0.8 * c, proper_time_s: 2.2e-6 },
      { velocity_m_s: 1000, proper_time_s: 86400 },
    ],
  },
  REL_LENGTH_CONTRACTION: {
    unit: 'm',
    defaults: { velocity_m_s: 1.5e8, proper_length_m: 1 },
    f: (v) => v.proper_length_m! / gammaOf(v.velocity_m_s!),
    alt: [
      { velocity_m_s: 0.6 * c, proper_length_m: 10 },
      { velocity_m_s: 0.999 * c, proper_length_m: 100 },
    ],
  },
  REL_REST_ENERGY: {
    unit: 'J',
    defaults: { mass_kg: 1 },
    f: (v) => v.mass_kg! * c * c,
    alt: [{ mass_kg: me }, { mass_kg: 0.001 }],
  },
  REL_SCHWARZSCHILD_RADIUS: {
    unit: 'm',
    defaults: { mass_kg: 1.98847e30 },
    f: (v) => (2 * G * v.mass_kg!) / (c * c),
    alt: [{ mass_kg: Mearth }, { mass_kg: 4.3e6 * Msun }],
  },
  REL_GRAVITATIONAL_REDSHIFT: {
    // 1/√(1 − x) − 1 = expm1(−½ log1p(−x)): no cancellation for the weak fields of Sun and Earth.
    unit: '1',
    defaults: { mass_kg: 1.98847e30, radius_m: 6.957e8 },
    f: (v) => Math.expm1(-0.5 * Math.log1p((-2 * G * v.mass_kg!) / (c * c * v.radius_m!))),
    alt: [
      { mass_kg: Msun, radius_m: 1e4 },
      { mass_kg: Mearth, radius_m: 6.371e6 },
    ],
  },
  REL_MOMENTUM: {
    unit: 'kg*m/s',
    defaults: { mass_kg: 1, velocity_m_s: 1.5e8 },
    f: (v) => gammaOf(v.velocity_m_s!) * v.mass_kg! * v.velocity_m_s!,
    alt: [
      { mass_kg: me, velocity_m_s: 0.9 * c },
      { mass_kg: 2, velocity_m_s: -3 },
    ],
  },
  // fluids
  FLUID_REYNOLDS: {
    unit: '1',
    defaults: { density_kg_m3: 1000, velocity_m_s: 1, length_m: 0.1, dynamic_viscosity_Pa_s: 1.002e-3 },
    f: (v) => (v.density_kg_m3! * v.velocity_m_s! * v.length_m!) / v.dynamic_viscosity_Pa_s!,
    alt: [
      { density_kg_m3: 1.225, velocity_m_s: 30, length_m: 2, dynamic_viscosity_Pa_s: 1.81e-5 },
      { density_kg_m3: 1260, velocity_m_s: 0.01, length_m: 0.02, dynamic_viscosity_Pa_s: 1.412 },
    ],
  },
  FLUID_TORRICELLI: {
    unit: 'm/s',
    defaults: { gravity_m_s2: g0, height_m: 1 },
    f: (v) => Math.sqrt(2 * v.gravity_m_s2! * v.height_m!),
    alt: [{ height_m: 5 }, { height_m: 2, gravity_m_s2: 1.625 }],
  },
  FLUID_HYDROSTATIC_PRESSURE: {
    unit: 'Pa',
    defaults: { surface_pressure_Pa: 101325, density_kg_m3: 1000, gravity_m_s2: g0, depth_m: 10 },
    f: (v) => v.surface_pressure_Pa! + v.density_kg_m3! * v.gravity_m_s2! * v.depth_m!,
    alt: [
      { depth_m: 10994, density_kg_m3: 1025 },
      { surface_pressure_Pa: 0, depth_m: 0.76, density_kg_m3: 13595.1 },
    ],
  },
  FLUID_POISEUILLE_FLOW: {
    unit: 'm^3/s',
    defaults: { pressure_drop_Pa: 1000, radius_m: 0.01, dynamic_viscosity_Pa_s: 1.002e-3, length_m: 1 },
    f: (v) => (Math.PI * v.pressure_drop_Pa! * v.radius_m! ** 4) / (8 * v.dynamic_viscosity_Pa_s! * v.length_m!),
    alt: [
      { pressure_drop_Pa: 500, radius_m: 0.002, length_m: 0.5 },
      { pressure_drop_Pa: 4000, radius_m: 1.5e-3, dynamic_viscosity_Pa_s: 3.5e-3, length_m: 0.1 },
    ],
  },
  FLUID_DRAG_FORCE: {
    unit: 'N',
    defaults: { density_kg_m3: 1.225, velocity_m_s: 30, drag_coefficient: 0.47, area_m2: 0.01 },
    f: (v) => 0.5 * v.density_kg_m3! * v.velocity_m_s! ** 2 * v.drag_coefficient! * v.area_m2!,
    alt: [{ velocity_m_s: 10 }, { density_kg_m3: 1000, velocity_m_s: 2, drag_coefficient: 1.2, area_m2: 0.5 }],
  },
  FLUID_STOKES_TERMINAL: {
    unit: 'm/s',
    defaults: { particle_density_kg_m3: 2650, density_kg_m3: 1000, gravity_m_s2: g0, radius_m: 1e-5, dynamic_viscosity_Pa_s: 1.002e-3 },
    f: (v) => (2 * (v.particle_density_kg_m3! - v.density_kg_m3!) * v.gravity_m_s2! * v.radius_m! ** 2) / (9 * v.dynamic_viscosity_Pa_s!),
    alt: [{ radius_m: 5e-6 }, { particle_density_kg_m3: 7800, density_kg_m3: 1260, radius_m: 1e-3, dynamic_viscosity_Pa_s: 1.412 }],
  },
  FLUID_SHALLOW_WAVE_SPEED: {
    unit: 'm/s',
    defaults: { gravity_m_s2: g0, depth_m: 10 },
    f: (v) => Math.sqrt(v.gravity_m_s2! * v.depth_m!),
    alt: [{ depth_m: 4000 }, { depth_m: 0.5, gravity_m_s2: 9.81 }],
  },
  // finance
  FIN_COMPOUND_INTEREST: {
    unit: 'USD',
    defaults: { principal: 1000, rate: 0.05, periods_per_year: 12, years: 10 },
    f: (v) => v.principal! * (1 + v.rate! / v.periods_per_year!) ** (v.periods_per_year! * v.years!),
    alt: [
      { principal: 5000, rate: 0.03, periods_per_year: 4, years: 5 },
      { rate: 0.12, periods_per_year: 1, years: 1 },
    ],
  },
  FIN_CONTINUOUS_COMPOUNDING: {
    unit: 'USD',
    defaults: { principal: 1000, rate: 0.05, years: 10 },
    f: (v) => v.principal! * Math.exp(v.rate! * v.years!),
    alt: [
      { principal: 1, rate: 1, years: 1 },
      { rate: -0.02, years: 20 },
    ],
  },
  FIN_PRESENT_VALUE: {
    unit: 'USD',
    defaults: { future_value: 1000, rate: 0.05, years: 10 },
    f: (v) => v.future_value! / (1 + v.rate!) ** v.years!,
    alt: [
      { future_value: 1e6, rate: 0.07, years: 30 },
      { rate: 0, years: 5 },
    ],
  },
  FIN_ANNUITY_PAYMENT: {
    unit: 'USD',
    defaults: { principal: 200000, rate: 0.04, periods_per_year: 12, years: 30 },
    f: (v) => {
      const i = v.rate! / v.periods_per_year!;
      const N = v.years! * v.periods_per_year!;
      return i === 0 ? v.principal! / N : (v.principal! * i) / (1 - (1 + i) ** -N);
    },
    alt: [
      { principal: 10000, rate: 0.06, periods_per_year: 12, years: 5 },
      { principal: 1200, rate: 0, years: 1 },
    ],
  },
  FIN_BLACK_SCHOLES_CALL: {
    unit: 'USD',
    defaults: BS_DEFAULTS,
    f: (v) => bs(v, 'call'),
    alt: [
      { spot: 42, strike: 40, rate: 0.1, volatility: 0.2, maturity_years: 0.5 },
      { spot: 100, strike: 95, rate: 0.03, volatility: 0.25, maturity_years: 2, dividend_yield: 0.02 },
    ],
  },
  FIN_BLACK_SCHOLES_PUT: {
    unit: 'USD',
    defaults: BS_DEFAULTS,
    f: (v) => bs(v, 'put'),
    alt: [
      { spot: 42, strike: 40, rate: 0.1, volatility: 0.2, maturity_years: 0.5 },
      { spot: 100, strike: 95, rate: 0.03, volatility: 0.25, maturity_years: 2, dividend_yield: 0.02 },
    ],
  },
  FIN_CAPM: {
    unit: '1',
    defaults: { risk_free_rate: 0.03, beta: 1.2, market_return: 0.08 },
    f: (v) => v.risk_free_rate! + v.beta! * (v.market_return! - v.risk_free_rate!),
    alt: [{ risk_free_rate: 0.02, beta: 0.8, market_return: 0.07 }, { beta: -0.5 }],
  },
  // biology
  BIO_EXPONENTIAL_GROWTH: {
    unit: '1',
    defaults: { initial_population: 100, growth_rate_per_day: 0.1, time_days: 10 },
    f: (v) => v.initial_population! * Math.exp(v.growth_rate_per_day! * v.time_days!),
    alt: [
      { initial_population: 1, growth_rate_per_day: Math.LN2, time_days: 10 },
      { growth_rate_per_day: -0.05, time_days: 30 },
    ],
  },
  BIO_LOGISTIC_GROWTH: {
    unit: '1',
    defaults: { initial_population: 100, carrying_capacity: 1000, growth_rate_per_day: 0.1, time_days: 10 },
    f: (v) => {
      const {
        initial_population: N0,
        carrying_capacity: Kc,
        growth_rate_per_day: r,
        time_days: t,
      } = v as Record<'initial_population' | 'carrying_capacity' | 'growth_rate_per_day' | 'time_days', number>;
      return (Kc * N0) / (N0 + (Kc - N0) * Math.exp(-r * t));
    },
    alt: [{ time_days: 0 }, { initial_population: 10, carrying_capacity: 500, growth_rate_per_day: 0.5, time_days: 12 }],
  },
  BIO_DOUBLING_TIME: {
    unit: 'd',
    defaults: { growth_rate_per_day: 0.1 },
    f: (v) => Math.log(2) / v.growth_rate_per_day!,
    alt: [{ growth_rate_per_day: Math.LN2 }, { growth_rate_per_day: 0.0231 }],
  },
  BIO_MICHAELIS_MENTEN: {
    unit: 'mol/(m^3*s)',
    defaults: { vmax_mol_m3_s: 1e-3, substrate_mol_m3: 0.5, km_mol_m3: 0.2 },
    f: (v) => (v.vmax_mol_m3_s! * v.substrate_mol_m3!) / (v.km_mol_m3! + v.substrate_mol_m3!),
    alt: [{ substrate_mol_m3: 0.2 }, { vmax_mol_m3_s: 5e-2, substrate_mol_m3: 10, km_mol_m3: 0.01 }],
  },
  BIO_HILL: {
    unit: '1',
    defaults: { substrate_mol_m3: 0.5, half_saturation_mol_m3: 0.5, hill_coefficient: 2.6 },
    f: (v) => 1 / (1 + (v.half_saturation_mol_m3! / v.substrate_mol_m3!) ** v.hill_coefficient!),
    alt: [{ substrate_mol_m3: 1 }, { substrate_mol_m3: 0.1, hill_coefficient: 1 }],
  },
  BIO_NERNST: {
    unit: 'V',
    defaults: { temperature_K: 310.15, valence: 1, conc_out_mol_m3: 5, conc_in_mol_m3: 140 },
    f: (v) => ((Rgas * v.temperature_K!) / (v.valence! * Faraday)) * Math.log(v.conc_out_mol_m3! / v.conc_in_mol_m3!),
    alt: [
      { valence: 2, conc_out_mol_m3: 2, conc_in_mol_m3: 1e-4 },
      { valence: -1, conc_out_mol_m3: 110, conc_in_mol_m3: 10 },
    ],
  },
  BIO_BASIC_REPRODUCTION: {
    unit: '1',
    defaults: { beta_per_day: 0.3, gamma_per_day: 0.1 },
    f: (v) => v.beta_per_day! / v.gamma_per_day!,
    alt: [
      { beta_per_day: 0.5, gamma_per_day: 0.2 },
      { beta_per_day: 1.2, gamma_per_day: 1 / 14 },
    ],
  },
  BIO_HARDY_WEINBERG_HET: {
    unit: '1',
    defaults: { allele_frequency: 0.3 },
    f: (v) => 2 * v.allele_frequency! - 2 * v.allele_frequency! ** 2,
    alt: [{ allele_frequency: 0.5 }, { allele_frequency: 0.01 }],
  },
};

const TABLE_COUNTS: Record<string, number> = {
  mechanics: 8,
  thermodynamics: 7,
  electromagnetism: 8,
  quantum: 7,
  relativity: 7,
  fluids: 7,
  finance: 7,
  biology: 8,
};

function op(id: string): OperatorDef {
  const found = getOperator(id);
  if (!found) throw new Error(`operator ${id} missing`);
  return found;
}

function expectRel(actual: number, expected: number, tol = 1e-12): void {
  if (expected === 0) {
    expect(Math.abs(actual)).toBeLessThanOrEqual(tol);
    return;
  }
  const rel = Math.abs(actual - expected) / Math.abs(expected);
  if (!(rel <= tol)) throw new Error(`expected ${expected}, got ${actual} (rel ${rel})`);
}

function catchError(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a ServiceError');
}

const MOD: Modulation = { R_t: 1.000734, svcond: 2289461022, phase: 0.1167 };

describe('constants (CODATA 2018, solvers.md §1)', () => {
  it('match the listed values', () => {
    expect([K.C_LIGHT, K.H_PLANCK, K.K_BOLTZMANN, K.E_CHARGE, K.N_AVOGADRO, K.R_GAS, K.G_NEWTON]).toEqual([c, h, 1.380649e-23, eC, 6.02214076e23, Rgas, G]);
    expect([K.EPSILON_0, K.MU_0, K.M_ELECTRON, K.ATOMIC_MASS_U, K.SIGMA_SB, K.WIEN_B]).toEqual([eps0, mu0, me, 1.6605390666e-27, sigmaSB, wienB]);
    expect([K.RYDBERG_ENERGY_J, K.FARADAY, K.M_SUN, K.G0]).toEqual([ER, Faraday, Msun, g0]);
    expect(K.HBAR).toBe(hbar);
    expect(K.CODATA_2018.c).toBe(c);
    expect(Object.isFrozen(K.CODATA_2018)).toBe(true);
  });
});

describe('every operator of the §6 table', () => {
  it('is registered with its exact id, domain, unit, input keys and defaults (and nothing else)', () => {
    expect(OPERATORS.map((o) => o.id).sort()).toEqual(Object.keys(CASES).sort());
    expect(OPERATORS).toHaveLength(59);
    for (const d of DOMAINS) expect(OPERATORS.filter((o) => o.domain === d)).toHaveLength(TABLE_COUNTS[d]!);
    for (const [id, spec] of Object.entries(CASES)) {
      const o = op(id);
      expect(o.unit, id).toBe(spec.unit);
      expect(Object.fromEntries(o.inputs.map((i) => [i.key, i.default])), id).toEqual(spec.defaults);
      expect(
        o.inputs.map((i) => i.key),
        id,
      ).toEqual(Object.keys(spec.defaults));
      for (const i of o.inputs) expect(i.unit.length, `${id}.${i.key}`).toBeGreaterThan(0);
      expect(o.formula.length).toBeGreaterThan(3);
    }
    expect(op('MECH_KINETIC_ENERGY').formula).toBe('E = ½mv²');
    expect(op('QM_HYDROGEN_LEVEL').formula).toBe('E = −E_R/n² (E_R = 2.1798723611035e-18 J)');
  });

  for (const [id, spec] of Object.entries(CASES)) {
    it(`${id}: defaults and two other inputs match the closed form`, () => {
      const o = op(id);
      const requests: V[] = [{}, ...spec.alt];
      for (const req of requests) {
        const full = { ...spec.defaults, ...req };
        const value = o.evaluate(req);
        expect(Number.isFinite(value)).toBe(true);
        expectRel(value, spec.f(full));
        expect(o.evaluate(full)).toBe(value); // defaults fill in exactly as given explicitly
        // The equation substitutes every resolved input and ends with the result and unit.
        const eq = o.equation(full, value);
        for (const key of Object.keys(full)) expect(eq, `${id} ${key}`).toContain(num(full[key]!));
        expect(eq.endsWith(spec.unit === '1' ? ` = ${num(value)}` : ` = ${num(value)} ${spec.unit}`), eq).toBe(true);
      }
    });
  }
});

describe('published anchors', () => {
  const ev = (id: string, inputs: V = {}) => op(id).evaluate(inputs);
  it('mechanics', () => {
    expect(Math.round(ev('MECH_ESCAPE_VELOCITY'))).toBe(11186);
    expectRel(ev('MECH_ORBITAL_PERIOD'), 365.25 * 86400, 1e-5); // one year
    expectRel(ev('MECH_ORBITAL_PERIOD', { semi_major_axis_m: 4.2164e7, central_mass_kg: Mearth }), 86164.1, 1e-4); // GEO
    expectRel(ev('MECH_PENDULUM_PERIOD', { length_m: 0.994 }), 2, 1e-3); // seconds pendulum
    expect(ev('MECH_KINETIC_ENERGY', { mass_kg: 2, velocity_m_s: 3 })).toBe(9);
    expectRel(ev('MECH_GRAVITATIONAL_FORCE'), 1.98e20, 1e-2);
  });
  it('thermodynamics', () => {
    expect(ev('THERMO_CARNOT_EFFICIENCY')).toBe(0.5);
    expectRel(ev('THERMO_IDEAL_GAS_PRESSURE'), 101325, 1e-3); // molar volume at STP
    expectRel(ev('THERMO_WIEN_PEAK'), 502.04e-9, 1e-4); // solar peak
    expectRel(ev('THERMO_WIEN_PEAK', { temperature_K: 2.725 }), 1.0634e-3, 1e-3); // CMB
    expectRel(ev('THERMO_STEFAN_BOLTZMANN'), 6.2938e7, 1e-4); // solar surface flux
  });
  it('electromagnetism', () => {
    expectRel(ev('EM_COULOMB_FORCE'), 8.9875517923e-3, 1e-9); // k_e · 1 µC²
    expectRel(ev('EM_COULOMB_FORCE', { charge1_C: eC, charge2_C: eC, distance_m: 5.29177210903e-11 }), 8.2387235e-8, 1e-7);
    expectRel(ev('EM_LC_RESONANCE'), 5032.92, 1e-6);
    expectRel(ev('EM_WIRE_FIELD'), 2e-5, 1e-9);
  });
  it('quantum', () => {
    expectRel(ev('QM_HYDROGEN_LEVEL') / eC, -13.6057, 1e-5);
    expectRel(ev('QM_HYDROGEN_LEVEL', { level_n: 2 }) / eC, -3.40142, 1e-5);
    expectRel(ev('QM_COMPTON_SHIFT'), 2.42631023867e-12, 1e-10); // Compton wavelength
    expectRel(ev('QM_PHOTON_ENERGY', { wavelength_m: 1.23984198e-6 }), eC, 1e-8); // 1 eV ↔ 1239.84198 nm
    expectRel(ev('QM_DE_BROGLIE', { mass_kg: 1.67492749804e-27, velocity_m_s: 2200 }), 1.798e-10, 1e-3); // thermal neutron
  });
  it('relativity', () => {
    expectRel(ev('REL_SCHWARZSCHILD_RADIUS'), 2953.34, 1e-6);
    expectRel(ev('REL_SCHWARZSCHILD_RADIUS', { mass_kg: Mearth }), 8.87e-3, 1e-3);
    expectRel(ev('REL_LORENTZ_FACTOR', { velocity_m_s: 0.6 * c }), 1.25, 1e-14);
    expectRel(ev('REL_LENGTH_CONTRACTION', { velocity_m_s: 0.6 * c, proper_length_m: 10 }), 8, 1e-14);
    expectRel(ev('REL_GRAVITATIONAL_REDSHIFT'), 2.12e-6, 2e-3); // solar surface
    expectRel(ev('REL_REST_ENERGY', { mass_kg: me }), 8.1871057769e-14, 1e-9);
  });
  it('fluids', () => {
    expectRel(ev('FLUID_HYDROSTATIC_PRESSURE', { surface_pressure_Pa: 0, depth_m: 0.76, density_kg_m3: 13595.1 }), 101325, 1e-5); // 760 mmHg
    expectRel(ev('FLUID_SHALLOW_WAVE_SPEED', { depth_m: 4000 }), 198.06, 1e-4); // tsunami speed
    expect(ev('FLUID_HYDROSTATIC_PRESSURE')).toBeCloseTo(199391.5, 9);
  });
  it('finance', () => {
    expect(ev('FIN_BLACK_SCHOLES_CALL')).toBe(10.450583572185565);
    expect(ev('FIN_BLACK_SCHOLES_PUT')).toBe(5.573526022256971);
    const hull = { spot: 42, strike: 40, rate: 0.1, volatility: 0.2, maturity_years: 0.5 }; // Hull, Example 15.6
    expect(ev('FIN_BLACK_SCHOLES_CALL', hull)).toBeCloseTo(4.76, 2);
    expect(ev('FIN_BLACK_SCHOLES_PUT', hull)).toBeCloseTo(0.81, 2);
    for (const req of [{}, hull, CASES.FIN_BLACK_SCHOLES_CALL!.alt[1]]) {
      // put–call parity C − P = S e^(−qT) − K e^(−rT)
      const v = { ...BS_DEFAULTS, ...req };
      const parity = v.spot * Math.exp(-v.dividend_yield * v.maturity_years) - v.strike * Math.exp(-v.rate * v.maturity_years);
      expectRel(ev('FIN_BLACK_SCHOLES_CALL', req) - ev('FIN_BLACK_SCHOLES_PUT', req), parity, 1e-12);
    }
    // σ√T = 0: the discounted intrinsic value of the forward (the limit the shared closed form returns).
    expectRel(ev('FIN_BLACK_SCHOLES_CALL', { volatility: 0 }), 100 - 100 * Math.exp(-0.05), 1e-14);
    expect(ev('FIN_BLACK_SCHOLES_PUT', { volatility: 0 })).toBe(0);
    expect(ev('FIN_BLACK_SCHOLES_PUT', { maturity_years: 0, spot: 90 })).toBe(10);
    expect(op('FIN_BLACK_SCHOLES_CALL').equation({ volatility: 0 }, ev('FIN_BLACK_SCHOLES_CALL', { volatility: 0 }))).toContain(
      'C = max(S e^(-qT) - K e^(-rT), 0) (σ sqrt(T) = 0) = max(100 USD · e^(-0 · 1) - 100 USD · e^(-0.05 · 1), 0)',
    );
    expect(ev('FIN_ANNUITY_PAYMENT')).toBeCloseTo(954.83, 2); // $200k, 30 y, 4 %
    expect(ev('FIN_ANNUITY_PAYMENT', { principal: 1200, rate: 0, years: 1 })).toBe(100); // zero-rate limit P/N
    expect(ev('FIN_COMPOUND_INTEREST')).toBeCloseTo(1647.01, 2);
    expect(ev('FIN_CAPM')).toBeCloseTo(0.09, 15);
  });
  it('biology', () => {
    expectRel(ev('BIO_NERNST'), -0.08906, 1e-4); // K+ reversal potential at 37 °C
    expectRel(ev('BIO_EXPONENTIAL_GROWTH', { initial_population: 1, growth_rate_per_day: Math.LN2, time_days: 10 }), 1024, 1e-13);
    expect(ev('BIO_LOGISTIC_GROWTH', { time_days: 0 })).toBeCloseTo(100, 12);
    expect(ev('BIO_HILL')).toBe(0.5);
    expectRel(ev('BIO_MICHAELIS_MENTEN', { substrate_mol_m3: 0.2 }), 5e-4, 1e-14); // S = K_m → V_max/2
    expect(ev('BIO_HARDY_WEINBERG_HET', { allele_frequency: 0.5 })).toBe(0.5);
  });
});

describe('domain violations → 400 SVC_INVALID_INPUT naming operator and key', () => {
  // Values outside an input's physical domain are refused by the domain ('outside its domain'); the guards of the
  // formulas (division by zero, a root or log of a negative number) refuse what the domains let through.
  const cases: [string, V, string, string][] = [
    ['MECH_PENDULUM_PERIOD', { gravity_m_s2: 0 }, 'gravity_m_s2', 'outside its domain'],
    ['MECH_PENDULUM_PERIOD', { length_m: -1 }, 'length_m', 'outside its domain'],
    ['MECH_SPRING_PERIOD', { spring_constant_N_m: 0 }, 'spring_constant_N_m', 'outside its domain'],
    ['MECH_SPRING_PERIOD', { spring_constant_N_m: -2 }, 'spring_constant_N_m', 'outside its domain'],
    ['MECH_PROJECTILE_RANGE', { gravity_m_s2: 0 }, 'gravity_m_s2', 'outside its domain'],
    ['MECH_ORBITAL_PERIOD', { central_mass_kg: 0 }, 'central_mass_kg', 'outside its domain'],
    ['MECH_ORBITAL_PERIOD', { semi_major_axis_m: -1 }, 'semi_major_axis_m', 'outside its domain'],
    ['MECH_ESCAPE_VELOCITY', { radius_m: 0 }, 'radius_m', 'outside its domain'],
    ['MECH_ESCAPE_VELOCITY', { radius_m: -1 }, 'radius_m', 'outside its domain'],
    ['MECH_GRAVITATIONAL_FORCE', { distance_m: 0 }, 'distance_m', 'outside its domain'],
    ['MECH_KINETIC_ENERGY', { mass_kg: 1e10, velocity_m_s: 1e300 }, 'velocity_m_s', 'outside its domain'],
    ['THERMO_IDEAL_GAS_PRESSURE', { volume_m3: 0 }, 'volume_m3', 'outside its domain'],
    ['THERMO_CARNOT_EFFICIENCY', { hot_K: 0 }, 'hot_K', 'outside its domain'],
    ['THERMO_WIEN_PEAK', { temperature_K: 0 }, 'temperature_K', 'outside its domain'],
    ['THERMO_CONDUCTION', { thickness_m: 0 }, 'thickness_m', 'outside its domain'],
    ['THERMO_ISOTHERMAL_ENTROPY', { volume1_m3: 0 }, 'volume1_m3', 'outside its domain'],
    ['THERMO_ISOTHERMAL_ENTROPY', { volume2_m3: 0 }, 'volume2_m3', 'outside its domain'],
    ['THERMO_ISOTHERMAL_ENTROPY', { volume1_m3: -1 }, 'volume1_m3', 'outside its domain'],
    ['EM_COULOMB_FORCE', { distance_m: 0 }, 'distance_m', 'outside its domain'],
    ['EM_OHM_CURRENT', { resistance_ohm: 0 }, 'resistance_ohm', 'outside its domain'],
    ['EM_LC_RESONANCE', { inductance_H: 0 }, 'inductance_H', 'outside its domain'],
    ['EM_LC_RESONANCE', { capacitance_F: -1e-6 }, 'capacitance_F', 'outside its domain'],
    ['EM_WIRE_FIELD', { distance_m: 0 }, 'distance_m', 'outside its domain'],
    ['QM_PHOTON_ENERGY', { wavelength_m: 0 }, 'wavelength_m', 'outside its domain'],
    ['QM_DE_BROGLIE', { velocity_m_s: 0 }, 'velocity_m_s', 'outside its domain'],
    ['QM_DE_BROGLIE', { mass_kg: 0 }, 'mass_kg', 'outside its domain'],
    ['QM_PARTICLE_IN_BOX', { width_m: 0 }, 'width_m', 'outside its domain'],
    ['QM_PARTICLE_IN_BOX', { mass_kg: 0 }, 'mass_kg', 'outside its domain'],
    ['QM_HYDROGEN_LEVEL', { level_n: 0 }, 'level_n', 'outside its domain'],
    ['QM_TUNNELING_PROBABILITY', { energy_J: 2e-19 }, 'energy_J', 'negative under a root'],
    ['REL_LORENTZ_FACTOR', { velocity_m_s: c }, 'velocity_m_s', 'outside its domain'],
    ['REL_LORENTZ_FACTOR', { velocity_m_s: 3e8 }, 'velocity_m_s', 'outside its domain'],
    ['REL_LORENTZ_FACTOR', { velocity_m_s: -c }, 'velocity_m_s', 'outside its domain'],
    ['REL_TIME_DILATION', { velocity_m_s: c }, 'velocity_m_s', 'outside its domain'],
    ['REL_LENGTH_CONTRACTION', { velocity_m_s: 4e8 }, 'velocity_m_s', 'outside its domain'],
    ['REL_MOMENTUM', { velocity_m_s: c }, 'velocity_m_s', 'outside its domain'],
    ['REL_GRAVITATIONAL_REDSHIFT', { radius_m: 0 }, 'radius_m', 'outside its domain'],
    ['REL_GRAVITATIONAL_REDSHIFT', { radius_m: 2000 }, 'radius_m', 'Schwarzschild radius'],
    ['FLUID_REYNOLDS', { dynamic_viscosity_Pa_s: 0 }, 'dynamic_viscosity_Pa_s', 'outside its domain'],
    ['FLUID_TORRICELLI', { height_m: -1 }, 'height_m', 'outside its domain'],
    ['FLUID_POISEUILLE_FLOW', { length_m: 0 }, 'length_m', 'outside its domain'],
    ['FLUID_POISEUILLE_FLOW', { dynamic_viscosity_Pa_s: 0 }, 'dynamic_viscosity_Pa_s', 'outside its domain'],
    ['FLUID_STOKES_TERMINAL', { dynamic_viscosity_Pa_s: 0 }, 'dynamic_viscosity_Pa_s', 'outside its domain'],
    ['FLUID_SHALLOW_WAVE_SPEED', { depth_m: -1 }, 'depth_m', 'outside its domain'],
    ['FIN_COMPOUND_INTEREST', { periods_per_year: 0 }, 'periods_per_year', 'outside its domain'],
    ['FIN_COMPOUND_INTEREST', { rate: -24, periods_per_year: 12, years: 0.55 }, 'rate', 'outside its domain'],
    ['FIN_CONTINUOUS_COMPOUNDING', { rate: 1000, years: 1 }, 'rate', 'not finite'],
    ['FIN_PRESENT_VALUE', { rate: -1 }, 'rate', 'outside its domain'],
    ['FIN_ANNUITY_PAYMENT', { periods_per_year: 0 }, 'periods_per_year', 'outside its domain'],
    ['FIN_ANNUITY_PAYMENT', { years: 0 }, 'years', 'outside its domain'],
    ['FIN_BLACK_SCHOLES_CALL', { spot: 0 }, 'spot', 'outside its domain'],
    ['FIN_BLACK_SCHOLES_PUT', { strike: -1 }, 'strike', 'outside its domain'],
    ['FIN_BLACK_SCHOLES_CALL', { volatility: -0.1 }, 'volatility', '≥ 0'],
    ['FIN_BLACK_SCHOLES_PUT', { maturity_years: -1 }, 'maturity_years', 'outside its domain'],
    ['BIO_EXPONENTIAL_GROWTH', { growth_rate_per_day: 100, time_days: 10 }, 'growth_rate_per_day', 'not finite'],
    ['BIO_LOGISTIC_GROWTH', { initial_population: 0 }, 'initial_population', 'outside its domain'],
    ['BIO_DOUBLING_TIME', { growth_rate_per_day: 0 }, 'growth_rate_per_day', 'outside its domain'],
    ['BIO_MICHAELIS_MENTEN', { km_mol_m3: -0.5 }, 'km_mol_m3', 'outside its domain'],
    ['BIO_HILL', { substrate_mol_m3: -1 }, 'substrate_mol_m3', 'outside its domain'],
    ['BIO_HILL', { substrate_mol_m3: 0, half_saturation_mol_m3: 0 }, 'half_saturation_mol_m3', 'outside its domain'],
    ['BIO_NERNST', { valence: 0 }, 'valence', 'outside its domain'],
    ['BIO_NERNST', { conc_in_mol_m3: 0 }, 'conc_in_mol_m3', 'outside its domain'],
    ['BIO_NERNST', { conc_out_mol_m3: 0 }, 'conc_out_mol_m3', 'outside its domain'],
    ['BIO_BASIC_REPRODUCTION', { gamma_per_day: 0 }, 'gamma_per_day', 'outside its domain'],
  ];
  it.each(cases)('%s %j → %s', (id, inputs, field, reason) => {
    const err = catchError(() => op(id).evaluate(inputs));
    expect(err).toBeInstanceOf(InputError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('SVC_INVALID_INPUT');
    expect(err.extra.field).toBe(field);
    expect(err.extra.operator).toBe(id);
    expect(String(err.extra.reason)).toContain(reason);
    expect(err.message).toContain(id);
    expect(err.message).toContain(field);
    expect(err.extra).toHaveProperty('allowed');
  });

  it('the same violation inside a chain', () => {
    const err = catchError(() =>
      evaluateChain({ domain: 'relativity', operators: ['KO42', 'REL_REST_ENERGY', 'REL_LORENTZ_FACTOR'], inputs: { velocity_m_s: c } }, MOD),
    );
    expect(err.code).toBe('SVC_INVALID_INPUT');
    expect(err.extra).toMatchObject({ field: 'velocity_m_s', operator: 'REL_LORENTZ_FACTOR' });
  });

  it('just below c is fine and accurate', () => {
    const v = c * (1 - 1e-9);
    expectRel(op('REL_LORENTZ_FACTOR').evaluate({ velocity_m_s: v }), 1 / Math.sqrt(1e-9 * (2 - 1e-9)), 1e-7);
  });
});

describe('KO42 and the listings', () => {
  it('KO42 is a no-input operator of unit 1 registered in every domain', () => {
    expect(KO42.id).toBe('KO42');
    expect(KO42.formula).toBe('R(t) = S(t)[1 + a·sin(2π·f·t + φ0)]');
    expect(KO42.unit).toBe('1');
    expect(KO42.inputs).toEqual([]);
    expect([...KO42.domains]).toEqual([...DOMAINS]);
    expect([KO42.frequency_hz, KO42.amplitude]).toEqual([1.287, 1e-3]);
  });

  it('listOperators: KO42 once with domain all, then all 59 with {id, domain, formula, inputs, unit, result_domain}', () => {
    const list = listOperators();
    expect(list).toHaveLength(60);
    expect(list[0]).toEqual({ id: 'KO42', domain: 'all', domains: [...DOMAINS], formula: KO42.formula, inputs: [], unit: '1', result_domain: null });
    expect(list.filter((o) => o.id === 'KO42')).toHaveLength(1);
    expect(new Set(list.map((o) => o.id)).size).toBe(60);
    expect(list[1]).toEqual({
      id: 'MECH_KINETIC_ENERGY',
      domain: 'mechanics',
      formula: 'E = ½mv²',
      inputs: [
        { key: 'mass_kg', unit: 'kg', default: 1, domain: { text: 'mass ≥ 0', min: 0, min_inclusive: true } },
        {
          key: 'velocity_m_s',
          unit: 'm/s',
          default: 1,
          domain: { text: '|v| < c = 299792458 m/s', min: -c, min_inclusive: false, max: c, max_inclusive: false },
        },
      ],
      unit: 'J',
      result_domain: { text: 'energy ≥ 0', min: 0, min_inclusive: true },
    });
    for (const item of list.slice(1)) expect(Object.keys(item).sort()).toEqual(['domain', 'formula', 'id', 'inputs', 'result_domain', 'unit']);
    // Every input of every operator declares a domain its default lies in.
    for (const item of list.slice(1)) for (const input of item.inputs) expect(input.domain.text.length, `${item.id}.${input.key}`).toBeGreaterThan(3);
    expect(JSON.parse(JSON.stringify(list))).toEqual(list); // plain JSON
  });

  it('categories: the 8 domains with their ids, KO42 first', () => {
    const cats = categories();
    expect(cats.map((x) => x.domain)).toEqual([...DOMAINS]);
    for (const cat of cats) {
      expect(cat.operators[0]).toBe('KO42');
      expect(cat.operators).toHaveLength(TABLE_COUNTS[cat.domain]! + 1);
      for (const id of cat.operators.slice(1)) expect(op(id).domain).toBe(cat.domain);
    }
  });

  it('operatorSpec by operator, by domain, KO42 and both', () => {
    expect(operatorSpec({ operator: 'FLUID_TORRICELLI' })).toEqual({
      operator: 'FLUID_TORRICELLI',
      domain: 'fluids',
      formula: 'v = √(2gh)',
      unit: 'm/s',
      inputs: [
        { key: 'gravity_m_s2', unit: 'm/s^2', default: g0, domain: { text: 'gravitational acceleration ≥ 0', min: 0, min_inclusive: true } },
        { key: 'height_m', unit: 'm', default: 1, domain: { text: 'height of fluid above the outlet ≥ 0', min: 0, min_inclusive: true } },
      ],
      result_domain: { text: 'speed ≥ 0', min: 0, min_inclusive: true },
      accepted_keys: ['gravity_m_s2', 'height_m'],
    });
    const fin = operatorSpec({ domain: 'finance' });
    expect(fin).toMatchObject({ domain: 'finance', operators: categories()[6]!.operators });
    expect((fin as { accepted_keys: string[] }).accepted_keys).toEqual([
      'principal',
      'rate',
      'periods_per_year',
      'years',
      'future_value',
      'spot',
      'strike',
      'volatility',
      'maturity_years',
      'dividend_yield',
      'risk_free_rate',
      'beta',
      'market_return',
    ]);
    const principal = (fin as { inputs: { key: string; operators: { operator: string; default: number }[] }[] }).inputs[0]!;
    expect(principal.operators).toContainEqual({ operator: 'FIN_ANNUITY_PAYMENT', default: 200000, domain: { text: 'any real number' } });
    expect(operatorSpec({ operator: 'KO42' })).toMatchObject({ operator: 'KO42', domain: 'all', accepted_keys: [] });
    expect(operatorSpec({ operator: 'REL_MOMENTUM', domain: 'relativity' })).toMatchObject({ accepted_keys: ['mass_kg', 'velocity_m_s'] });
  });

  it('operatorSpec errors carry their part-7 fields', () => {
    const unknownDomain = catchError(() => operatorSpec({ domain: 'thermo' }));
    expect([unknownDomain.status, unknownDomain.code, unknownDomain.extra]).toEqual([400, 'SVC_INVALID_DOMAIN', { suggestion: 'thermodynamics' }]);
    const unknownOp = catchError(() => operatorSpec({ operator: 'BIO_HIL' }));
    expect(unknownOp.code).toBe('SVC_INVALID_OPERATOR');
    expect((unknownOp.extra.available_similar as string[])[0]).toBe('BIO_HILL');
    const wrongDomain = catchError(() => operatorSpec({ operator: 'BIO_HILL', domain: 'quantum' }));
    expect(wrongDomain.code).toBe('SVC_INVALID_OPERATOR');
    for (const id of wrongDomain.extra.available_similar as string[]) expect(id === 'KO42' || op(id).domain === 'quantum').toBe(true);
    const neither = catchError(() => operatorSpec({}));
    expect([neither.code, neither.extra.field]).toEqual(['SVC_INVALID_INPUT', 'operator']);
  });

  it('edit distance and nearest domain', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(nearestDomain('mechanic')).toBe('mechanics');
    expect(nearestDomain('Quantum')).toBe('quantum');
    expect(nearestDomain('electromagnetic')).toBe('electromagnetism');
    expect(nearestDomain('bio')).toBe('biology');
    expect(nearestDomain('thermo')).toBe('thermodynamics');
    expect(nearestDomain('finanse')).toBe('finance');
    expect(nearestDomain('')).toBe('fluids');
  });
});

describe('evaluateChain', () => {
  it('the §6 example: value is the primary S, KO42 line first, equations substituted, master sum', () => {
    const r = evaluateChain(
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY', 'MECH_POTENTIAL_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      MOD,
    );
    expect(r.value).toBe(9);
    expect(r.unit).toBe('J');
    expect(r.operator_id).toBe('MECH_KINETIC_ENERGY');
    expect(r.operators).toEqual(['KO42', 'MECH_KINETIC_ENERGY', 'MECH_POTENTIAL_ENERGY']);
    expect(r.equations).toEqual([
      'KO42: R(t) = S(t)[1 + 0.001·sin(2π·1.287·t + 0)] = S·1.000734 (svcond 2289461022)',
      'E = 1/2 m v^2 = 1/2 · 2 kg · (3 m/s)^2 = 9 J',
      'U = m g h = 2 kg · 9.80665 m/s^2 · 1 m = 19.6133 J',
    ]);
    expect(r.master_sum).toEqual({
      terms: [
        { operator: 'KO42', value: 1.000734, unit: '1' },
        { operator: 'MECH_KINETIC_ENERGY', value: 9, unit: 'J' },
        { operator: 'MECH_POTENTIAL_ENERGY', value: 2 * g0, unit: 'J' },
      ],
      total: 9,
      unit: 'J',
    });
    expect(r.resolved).toEqual([
      { operator: 'MECH_KINETIC_ENERGY', inputs: { mass_kg: 2, velocity_m_s: 3 } },
      { operator: 'MECH_POTENTIAL_ENERGY', inputs: { mass_kg: 2, gravity_m_s2: g0, height_m: 1 } },
    ]);
    expect([r.operator_count, r.domain_operator_count, r.protocol_step2_compliant]).toEqual([3, 2, true]);
  });

  it('value is never modulated and is bit-identical across ticks', () => {
    const req = { domain: 'finance', operators: ['KO42', 'FIN_BLACK_SCHOLES_CALL', 'FIN_BLACK_SCHOLES_PUT'], inputs: {} };
    const a = evaluateChain(req, MOD);
    const b = evaluateChain(req, { R_t: 0.9992657, svcond: 2289461023, phase: 0.6 });
    expect(a.value).toBe(10.450583572185565);
    expect(b.value).toBe(a.value);
    expect(b.master_sum.terms.slice(1)).toEqual(a.master_sum.terms.slice(1));
    expect(b.equations[0]).toBe('KO42: R(t) = S(t)[1 + 0.001·sin(2π·1.287·t + 0)] = S·0.999266 (svcond 2289461023)');
    expect(b.equations.slice(1)).toEqual(a.equations.slice(1));
    expect(a.equations[1]).toContain('= 10.450583572185565 USD');
    expect(a.master_sum.terms[2]).toEqual({ operator: 'FIN_BLACK_SCHOLES_PUT', value: 5.573526022256971, unit: 'USD' });
  });

  it('KO42 line prints φ0 when the kernel config sets it', () => {
    expect(ko42Equation({ R_t: 1, svcond: 5, phase: 0, phi0: 0.5 })).toBe('KO42: R(t) = S(t)[1 + 0.001·sin(2π·1.287·t + 0.5)] = S·1.000000 (svcond 5)');
  });

  it('missing inputs take defaults; every domain runs on {}', () => {
    for (const cat of categories()) {
      const r = evaluateChain({ domain: cat.domain, operators: cat.operators.slice(0, 4), inputs: {} }, MOD);
      expect(r.value).toBe(op(cat.operators[1]!).evaluate({}));
      expect(r.equations).toHaveLength(4);
      expect(r.equations[0]!.startsWith('KO42: ')).toBe(true);
    }
    expect(evaluateChain({ domain: 'biology', operators: ['KO42', 'BIO_HILL'] }, MOD).value).toBe(0.5);
  });

  it('protocol step 2: 1–3 domain operators comply; 4 … 9 are evaluated but do not', () => {
    const mech = categories()[0]!.operators; // KO42 + 8
    expect(evaluateChain({ domain: 'mechanics', operators: mech.slice(0, 4), inputs: {} }, MOD).protocol_step2_compliant).toBe(true);
    const five = evaluateChain({ domain: 'mechanics', operators: mech.slice(0, 5), inputs: {} }, MOD);
    expect([five.operator_count, five.protocol_step2_compliant]).toEqual([5, false]);
    const ten = [...mech, 'MECH_KINETIC_ENERGY'];
    const r = evaluateChain({ domain: 'mechanics', operators: ten, inputs: {} }, MOD);
    expect([r.operator_count, r.domain_operator_count, r.protocol_step2_compliant]).toEqual([10, 9, false]);
    expect(r.master_sum.terms).toHaveLength(10);
    expect(r.equations).toHaveLength(10);
  });

  describe('validation order and part-7 extra fields', () => {
    const run = (body: Record<string, unknown>) => catchError(() => evaluateChain(body as never, MOD));

    it('unknown domain → SVC_INVALID_DOMAIN {suggestion}, before any operator check', () => {
      const err = run({ domain: 'mechanic', operators: Array(20).fill('NOPE'), inputs: {} });
      expect([err.status, err.code, err.extra]).toEqual([400, 'SVC_INVALID_DOMAIN', { suggestion: 'mechanics' }]);
      expect(run({ domain: 'fluid', operators: ['KO42'] }).extra).toEqual({ suggestion: 'fluids' });
      expect(run({ domain: 'Finance', operators: ['KO42'] }).extra).toEqual({ suggestion: 'finance' });
      const missing = run({ operators: ['KO42'] });
      expect(missing.code).toBe('SVC_INVALID_DOMAIN');
      expect(DOMAINS).toContain(missing.extra.suggestion);
      expect(run({ domain: 42, operators: ['KO42'] }).code).toBe('SVC_INVALID_DOMAIN');
    });

    it('> 10 operators → SVC_TOO_MANY_OPERATORS {requested_operators, limit}, before operator ids', () => {
      const err = run({ domain: 'quantum', operators: ['X', ...Array(10).fill('QM_PHOTON_ENERGY')], inputs: {} });
      expect([err.status, err.code, err.extra]).toEqual([400, 'SVC_TOO_MANY_OPERATORS', { requested_operators: 11, limit: 10 }]);
      expect(run({ domain: 'quantum', operators: Array(25).fill('KO42') }).extra).toEqual({ requested_operators: 25, limit: 10 });
    });

    const similarOk = (err: ServiceError, domain: string) => {
      const list = err.extra.available_similar as string[];
      expect(Array.isArray(list)).toBe(true);
      expect(list.length).toBeGreaterThan(0);
      expect(list.length).toBeLessThanOrEqual(5);
      for (const id of list) expect(id === 'KO42' || op(id).domain === domain, id).toBe(true);
      return list;
    };

    it('operators[0] ≠ KO42 → SVC_INVALID_OPERATOR, KO42 first in available_similar', () => {
      const err = run({ domain: 'mechanics', operators: ['MECH_KINETIC_ENERGY', 'KO42'], inputs: {} });
      expect([err.status, err.code]).toEqual([400, 'SVC_INVALID_OPERATOR']);
      const list = similarOk(err, 'mechanics');
      expect(list[0]).toBe('KO42');
      expect(list[1]).toBe('MECH_KINETIC_ENERGY');
      expect(similarOk(run({ domain: 'fluids', operators: [], inputs: {} }), 'fluids')[0]).toBe('KO42');
      expect(similarOk(run({ domain: 'fluids', operators: ['ko42', 'FLUID_REYNOLDS'] }), 'fluids')[0]).toBe('KO42');
    });

    it('unknown id → SVC_INVALID_OPERATOR with up to 5 ids of this domain by edit distance', () => {
      const err = run({ domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFICIENCY'], inputs: {} });
      expect(err.code).toBe('SVC_INVALID_OPERATOR');
      const list = similarOk(err, 'thermodynamics');
      expect(list).toHaveLength(5);
      expect(list[0]).toBe('THERMO_CARNOT_EFFICIENCY');
      expect(list).not.toContain('KO42');
      expect(run({ domain: 'thermodynamics', operators: ['KO42', 7] }).code).toBe('SVC_INVALID_OPERATOR');
    });

    it('an id of another domain → SVC_INVALID_OPERATOR (unavailable in this domain)', () => {
      const err = run({ domain: 'biology', operators: ['KO42', 'BIO_HILL', 'QM_PHOTON_ENERGY'], inputs: {} });
      expect(err.code).toBe('SVC_INVALID_OPERATOR');
      expect(err.message).toContain('quantum');
      similarOk(err, 'biology');
    });

    it('a chain with only KO42, KO42 repeated, or a non-array → SVC_INVALID_OPERATOR', () => {
      const only = run({ domain: 'relativity', operators: ['KO42'], inputs: {} });
      expect(only.code).toBe('SVC_INVALID_OPERATOR');
      expect(similarOk(only, 'relativity')).toEqual(categories()[4]!.operators.slice(1, 6));
      expect(run({ domain: 'relativity', operators: ['KO42', 'REL_REST_ENERGY', 'KO42'] }).code).toBe('SVC_INVALID_OPERATOR');
      similarOk(run({ domain: 'relativity', operators: 'KO42' }), 'relativity');
    });

    it('non-numeric or non-finite input → SVC_INVALID_INPUT naming the operator and key', () => {
      const chain = { domain: 'electromagnetism', operators: ['KO42', 'EM_ELECTRIC_POWER', 'EM_OHM_CURRENT'] };
      for (const bad of ['12', null, true, [12], { v: 1 }, Number.NaN, Number.POSITIVE_INFINITY]) {
        const err = run({ ...chain, inputs: { resistance_ohm: bad } });
        expect([err.status, err.code], String(bad)).toEqual([400, 'SVC_INVALID_INPUT']);
        expect(err.extra).toMatchObject({ field: 'resistance_ohm', operator: 'EM_OHM_CURRENT' });
      }
      // A shared key is reported against the first operator of the chain that reads it.
      expect(run({ ...chain, inputs: { voltage_V: 'x' } }).extra).toMatchObject({ field: 'voltage_V', operator: 'EM_ELECTRIC_POWER' });
      // Type errors come before domain violations.
      expect(run({ ...chain, inputs: { resistance_ohm: 0, current_A: 'x' } }).extra.field).toBe('current_A');
    });

    it('inputs that are not an object, and keys no operator of the chain reads (numbers or not) → SVC_INVALID_INPUT', () => {
      const chain = { domain: 'quantum', operators: ['KO42', 'QM_HYDROGEN_LEVEL'] };
      for (const bad of [null, [1, 2], 3, 'x']) {
        const err = run({ ...chain, inputs: bad });
        expect([err.code, err.extra.field]).toEqual(['SVC_INVALID_INPUT', 'inputs']);
      }
      for (const extra of ['oops', 2]) {
        const err = run({ ...chain, inputs: { level_n: 2, extra_key: extra } });
        expect([err.code, err.extra.field, err.extra.closest]).toEqual(['SVC_INVALID_INPUT', 'extra_key', ['level_n']]);
      }
    });
  });
});
