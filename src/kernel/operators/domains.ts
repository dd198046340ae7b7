// Physical domains of operator inputs and results (rule 7 step 3): the values a quantity can take in the physics the
// formula describes — a mass is never negative, an absolute temperature is above 0 K, a classical speed is below c,
// a probability lies in [0, 1]. An input outside its domain is refused before anything is computed. Pure.
import { C_LIGHT } from './constants.js';

/** The set of values a quantity may take: an interval, optionally integers only and without one excluded value. */
export interface PhysicalDomain {
  /** What the domain is, in words and symbols, e.g. 'mass ≥ 0' or '|v| < c = 299792458 m/s'. */
  text: string;
  min?: number;
  min_inclusive?: boolean;
  max?: number;
  max_inclusive?: boolean;
  integer?: boolean;
  /** A single value the domain leaves out (a valence of 0, a rate of 0 in a doubling time). */
  excludes?: number;
}

export function inDomain(x: number, d: PhysicalDomain): boolean {
  if (!Number.isFinite(x)) return false;
  if (d.min !== undefined && (d.min_inclusive === false ? !(x > d.min) : !(x >= d.min))) return false;
  if (d.max !== undefined && (d.max_inclusive === false ? !(x < d.max) : !(x <= d.max))) return false;
  if (d.integer === true && !Number.isInteger(x)) return false;
  if (d.excludes !== undefined && x === d.excludes) return false;
  return true;
}

/** Every finite real number (a signed charge, a height against a reference, a rate of return). */
export const REAL: PhysicalDomain = { text: 'any real number' };

export function atLeast(min: number, what: string): PhysicalDomain {
  return { text: `${what} ≥ ${min}`, min, min_inclusive: true };
}

export function above(min: number, what: string): PhysicalDomain {
  return { text: `${what} > ${min}`, min, min_inclusive: false };
}

export function between(min: number, max: number, what: string): PhysicalDomain {
  return { text: `${what} in [${min}, ${max}]`, min, min_inclusive: true, max, max_inclusive: true };
}

/** A mass, a length, an amount of substance, an area: never negative. */
export const nonNegative = (what: string): PhysicalDomain => atLeast(0, what);
/** A quantity that divides, or whose root or logarithm is taken: strictly positive. */
export const positive = (what: string): PhysicalDomain => above(0, what);

export const MASS = nonNegative('mass');
export const POSITIVE_MASS = positive('mass');
export const ABSOLUTE_TEMPERATURE: PhysicalDomain = { text: 'absolute temperature > 0 K', min: 0, min_inclusive: false };
export const PROBABILITY: PhysicalDomain = between(0, 1, 'probability');
/** A velocity component of a massive body: |v| < c (classical and relativistic mechanics alike). */
export const VELOCITY: PhysicalDomain = {
  text: `|v| < c = ${C_LIGHT} m/s`,
  min: -C_LIGHT,
  min_inclusive: false,
  max: C_LIGHT,
  max_inclusive: false,
};
/** A speed (magnitude) of a massive body: 0 ≤ v < c. */
export const SPEED: PhysicalDomain = { text: `speed 0 ≤ v < c = ${C_LIGHT} m/s`, min: 0, min_inclusive: true, max: C_LIGHT, max_inclusive: false };

export function integerAtLeast(min: number, what: string): PhysicalDomain {
  return { text: `${what}: integer ≥ ${min}`, min, min_inclusive: true, integer: true };
}

export function nonZero(what: string, integer = false): PhysicalDomain {
  return { text: `${what}: ${integer ? 'integer' : 'real number'} ≠ 0`, excludes: 0, ...(integer ? { integer: true } : {}) };
}
