// Physical constants, CODATA 2018, exactly as listed in solvers.md §1. The one place they are written:
// the closed-form operators, the kernel and the solvers import them from here.

/** Speed of light in vacuum, m/s (exact). */
export const C_LIGHT = 299_792_458;
/** Planck constant, J·s (exact). */
export const H_PLANCK = 6.626_070_15e-34;
/** Reduced Planck constant ħ = h/2π, J·s. */
export const HBAR = H_PLANCK / (2 * Math.PI);
/** Boltzmann constant, J/K (exact). */
export const K_BOLTZMANN = 1.380_649e-23;
/** Elementary charge, C (exact). */
export const E_CHARGE = 1.602_176_634e-19;
/** Avogadro constant, 1/mol (exact). */
export const N_AVOGADRO = 6.022_140_76e23;
/** Molar gas constant, J/(mol·K). */
export const R_GAS = 8.314_462_618;
/** Newtonian constant of gravitation, m³/(kg·s²). */
export const G_NEWTON = 6.674_30e-11;
/** Vacuum electric permittivity, F/m. */
export const EPSILON_0 = 8.854_187_8128e-12;
/** Vacuum magnetic permeability, N/A². */
export const MU_0 = 1.256_637_062_12e-6;
/** Electron mass, kg. */
export const M_ELECTRON = 9.109_383_7015e-31;
/** Atomic mass constant u, kg. */
export const ATOMIC_MASS_U = 1.660_539_066_60e-27;
/** Stefan–Boltzmann constant, W/(m²·K⁴). */
export const SIGMA_SB = 5.670_374_419e-8;
/** Wien wavelength displacement constant b, m·K. */
export const WIEN_B = 2.897_771_955e-3;
/** Rydberg energy E_R = hcR∞, J. */
export const RYDBERG_ENERGY_J = 2.179_872_361_1035e-18;
/** Faraday constant, C/mol. */
export const FARADAY = 96_485.332_12;
/** Nominal solar mass, kg. */
export const M_SUN = 1.988_47e30;
/** Standard acceleration of gravity, m/s² (exact). */
export const G0 = 9.806_65;

/**
 * Relative standard uncertainty of the values as listed above (CODATA 2018). Constants exact by definition and listed
 * in full (c, h, k_B, e, N_A, g0) have none; exact constants listed to fewer digits than they have (R, σ, b, F) carry
 * the rounding of the listing; the nominal solar mass is a convention and has none.
 */
export const RELATIVE_UNCERTAINTY = Object.freeze({
  R: 2e-11,
  G: 2.2e-5,
  epsilon0: 1.5e-10,
  mu0: 1.5e-10,
  me: 3.0e-10,
  u: 3.0e-10,
  sigmaSB: 4e-11,
  wienB: 7e-11,
  rydbergEnergy: 1.9e-12,
  F: 4e-11,
});

/** All of the above in one frozen object (for listings and for callers that want a single import). */
export const CODATA_2018 = Object.freeze({
  c: C_LIGHT,
  h: H_PLANCK,
  hbar: HBAR,
  kB: K_BOLTZMANN,
  e: E_CHARGE,
  NA: N_AVOGADRO,
  R: R_GAS,
  G: G_NEWTON,
  epsilon0: EPSILON_0,
  mu0: MU_0,
  me: M_ELECTRON,
  u: ATOMIC_MASS_U,
  sigmaSB: SIGMA_SB,
  wienB: WIEN_B,
  rydbergEnergy: RYDBERG_ENERGY_J,
  F: FARADAY,
  Msun: M_SUN,
  g0: G0,
});
