// The second evaluation of a closed-form operator (rule 7 steps 3 and 6): each operator writes its formula once more
// as an expression tree, which is evaluated two ways independent of the operator's implementation:
// - over SI dimensions (dimensional analysis): every sum adds like quantities, every exp/log/sin/Φ takes a pure
//   number, and the formula's dimension is the operator's unit;
// - in interval arithmetic with outward rounding: an enclosure of the formula's exact value on the resolved inputs,
//   against which the implementation's value is judged, and, with each measured constant widened by its CODATA
//   standard uncertainty, the result's uncertainty. Pure.
import * as CODATA from './constants.js';
import * as I from './interval.js';
import type { Interval } from './interval.js';

export type Expr =
  | { k: 'input'; key: string }
  | { k: 'const'; value: number; unit: string; rel_unc: number }
  | { k: 'add' | 'sub' | 'mul' | 'div' | 'max'; a: Expr; b: Expr }
  | { k: 'pow'; a: Expr; n: number }
  | { k: 'powr'; a: Expr; e: Expr }
  | { k: 'sqrt' | 'exp' | 'log' | 'log1p' | 'expm1' | 'sin' | 'cos' | 'Phi' | 'neg'; a: Expr }
  | { k: 'if_positive'; test: Expr; then: Expr; else: Expr };

// ---- builders ----

/** An operator input by key. */
export const x = (key: string): Expr => ({ k: 'input', key });
/** A constant with its unit and relative standard uncertainty (0: exact by definition, or a pure number). */
export const k = (value: number, unit = '1', rel_unc = 0): Expr => ({ k: 'const', value, unit, rel_unc });
export const add = (a: Expr, b: Expr): Expr => ({ k: 'add', a, b });
export const sub = (a: Expr, b: Expr): Expr => ({ k: 'sub', a, b });
export const mul = (...factors: Expr[]): Expr => factors.reduce((a, b) => ({ k: 'mul', a, b }));
export const div = (a: Expr, b: Expr): Expr => ({ k: 'div', a, b });
export const max = (a: Expr, b: Expr): Expr => ({ k: 'max', a, b });
/** a^n, n an integer ≥ 0. */
export const pow = (a: Expr, n: number): Expr => ({ k: 'pow', a, n });
/** a^e for a real exponent: a must be a pure number ≥ 0. */
export const powr = (a: Expr, e: Expr): Expr => ({ k: 'powr', a, e });
export const sqrt = (a: Expr): Expr => ({ k: 'sqrt', a });
export const exp = (a: Expr): Expr => ({ k: 'exp', a });
export const ln = (a: Expr): Expr => ({ k: 'log', a });
/** ln(1 + a), evaluated without rounding 1 + a. */
export const ln1p = (a: Expr): Expr => ({ k: 'log1p', a });
/** e^a − 1, evaluated without the cancellation. */
export const expm1 = (a: Expr): Expr => ({ k: 'expm1', a });
export const sin = (a: Expr): Expr => ({ k: 'sin', a });
export const cos = (a: Expr): Expr => ({ k: 'cos', a });
/** Φ, the standard normal distribution function. */
export const Phi = (a: Expr): Expr => ({ k: 'Phi', a });
export const neg = (a: Expr): Expr => ({ k: 'neg', a });
/** `then` where test > 0, else `else` (both must have the same dimension). */
export const ifPositive = (test: Expr, then: Expr, otherwise: Expr): Expr => ({ k: 'if_positive', test, then, else: otherwise });

/** π as a pure number. */
export const PI = k(Math.PI);

/** The constants of constants.ts with their units and uncertainties, for the operators' reference formulas. */
export const CONST = Object.freeze({
  c: k(CODATA.C_LIGHT, 'm/s'),
  h: k(CODATA.H_PLANCK, 'J*s'),
  hbar: k(CODATA.HBAR, 'J*s'),
  G: k(CODATA.G_NEWTON, 'm^3/(kg*s^2)', CODATA.RELATIVE_UNCERTAINTY.G),
  R: k(CODATA.R_GAS, 'J/(mol*K)', CODATA.RELATIVE_UNCERTAINTY.R),
  epsilon0: k(CODATA.EPSILON_0, 'F/m', CODATA.RELATIVE_UNCERTAINTY.epsilon0),
  mu0: k(CODATA.MU_0, 'N/A^2', CODATA.RELATIVE_UNCERTAINTY.mu0),
  me: k(CODATA.M_ELECTRON, 'kg', CODATA.RELATIVE_UNCERTAINTY.me),
  sigmaSB: k(CODATA.SIGMA_SB, 'W/(m^2*K^4)', CODATA.RELATIVE_UNCERTAINTY.sigmaSB),
  wienB: k(CODATA.WIEN_B, 'm*K', CODATA.RELATIVE_UNCERTAINTY.wienB),
  rydbergEnergy: k(CODATA.RYDBERG_ENERGY_J, 'J', CODATA.RELATIVE_UNCERTAINTY.rydbergEnergy),
  F: k(CODATA.FARADAY, 'C/mol', CODATA.RELATIVE_UNCERTAINTY.F),
});

// ---- dimensions ----

/** Exponents of m, kg, s, A, K, mol and the currency (USD). */
export type Dimension = readonly number[];
const BASE_NAMES = ['m', 'kg', 's', 'A', 'K', 'mol', 'USD'] as const;
const NONE: Dimension = [0, 0, 0, 0, 0, 0, 0];

function base(i: number): Dimension {
  return NONE.map((_, j) => (j === i ? 1 : 0));
}
const times = (a: Dimension, b: Dimension): Dimension => a.map((v, i) => v + b[i]!);
const scaled = (a: Dimension, n: number): Dimension => a.map((v) => v * n);
const same = (a: Dimension, b: Dimension): boolean => a.every((v, i) => Math.abs(v - b[i]!) < 1e-12);

const M = base(0);
const KG = base(1);
const S = base(2);
const A = base(3);
const N_ = times(times(KG, M), scaled(S, -2));
const J = times(N_, M);
const W = times(J, scaled(S, -1));
const C = times(A, S);
const V = times(W, scaled(A, -1));

/** Named units: SI base and derived units, and the time units of finance (yr) and biology (d). Dimension only. */
const UNITS: Readonly<Record<string, Dimension>> = {
  '1': NONE,
  rad: NONE,
  m: M,
  kg: KG,
  s: S,
  A,
  K: base(4),
  mol: base(5),
  USD: base(6),
  d: S,
  yr: S,
  Hz: scaled(S, -1),
  N: N_,
  J,
  W,
  Pa: times(N_, scaled(M, -2)),
  C,
  V,
  ohm: times(V, scaled(A, -1)),
  F: times(C, scaled(V, -1)),
  H: times(times(V, S), scaled(A, -1)),
  T: times(times(V, S), scaled(M, -2)),
};

/**
 * The dimension of a unit written as the operators write them: names joined by * and /, parentheses, and powers
 * ^n, ^-n or ^(p/q) — 'm^3/(kg*s^2)', 'W/(m^2*K^4)', '1/yr^(1/2)'. Throws on a name it does not know.
 */
export function parseUnit(unit: string): Dimension {
  const tokens = unit.match(/[A-Za-z]+|\d+|[()*/^-]/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const next = () => tokens[at++];
  const expect = (t: string) => {
    if (next() !== t) throw new Error(`unit '${unit}': expected '${t}'`);
  };
  const exponent = (): number => {
    if (peek() === '(') {
      next();
      const sign = peek() === '-' ? (next(), -1) : 1;
      const p = Number(next());
      expect('/');
      const q = Number(next());
      expect(')');
      return (sign * p) / q;
    }
    const sign = peek() === '-' ? (next(), -1) : 1;
    return sign * Number(next());
  };
  const atom = (): Dimension => {
    const t = next();
    if (t === '(') {
      const inner = product();
      expect(')');
      return inner;
    }
    if (t === undefined || !Object.hasOwn(UNITS, t)) throw new Error(`unit '${unit}': unknown name '${t}'`);
    return UNITS[t]!;
  };
  const factor = (): Dimension => {
    const d = atom();
    if (peek() !== '^') return d;
    next();
    return scaled(d, exponent());
  };
  const product = (): Dimension => {
    let d = factor();
    while (peek() === '*' || peek() === '/') {
      const op = next();
      const f = factor();
      d = times(d, op === '*' ? f : scaled(f, -1));
    }
    return d;
  };
  const d = product();
  if (at !== tokens.length) throw new Error(`unit '${unit}': unexpected '${peek()}'`);
  return d;
}

export function dimensionText(d: Dimension): string {
  const parts = d.flatMap((e, i) => (Math.abs(e) < 1e-12 ? [] : [e === 1 ? BASE_NAMES[i]! : `${BASE_NAMES[i]}^${Number(e.toFixed(6))}`]));
  return parts.length === 0 ? '1' : parts.join('*');
}

/**
 * The dimension of an expression, given each input's unit. Throws an Error naming the first inconsistency: a sum
 * of unlike quantities, a function of a quantity with a dimension, a real power of one.
 */
export function dimensionOf(e: Expr, inputUnits: Readonly<Record<string, string>>): Dimension {
  const of = (n: Expr): Dimension => dimensionOf(n, inputUnits);
  const pure = (n: Expr, what: string): Dimension => {
    const d = of(n);
    if (!same(d, NONE)) throw new Error(`${what} of a quantity of dimension ${dimensionText(d)}`);
    return NONE;
  };
  switch (e.k) {
    case 'input': {
      const unit = inputUnits[e.key];
      if (unit === undefined) throw new Error(`no input '${e.key}'`);
      return parseUnit(unit);
    }
    case 'const':
      return parseUnit(e.unit);
    case 'add':
    case 'sub':
    case 'max': {
      const a = of(e.a);
      const b = of(e.b);
      if (!same(a, b)) throw new Error(`${e.k} of ${dimensionText(a)} and ${dimensionText(b)}`);
      return a;
    }
    case 'mul':
      return times(of(e.a), of(e.b));
    case 'div':
      return times(of(e.a), scaled(of(e.b), -1));
    case 'pow':
      return scaled(of(e.a), e.n);
    case 'powr':
      pure(e.e, 'a real exponent');
      return pure(e.a, 'a real power');
    case 'sqrt':
      return scaled(of(e.a), 0.5);
    case 'neg':
      return of(e.a);
    case 'exp':
    case 'log':
    case 'log1p':
    case 'expm1':
    case 'sin':
    case 'cos':
    case 'Phi':
      return pure(e.a, e.k);
    case 'if_positive': {
      of(e.test);
      const a = of(e.then);
      const b = of(e.else);
      if (!same(a, b)) throw new Error(`branches of ${dimensionText(a)} and ${dimensionText(b)}`);
      return a;
    }
  }
}

export function sameDimension(a: Dimension, b: Dimension): boolean {
  return same(a, b);
}

// ---- interval evaluation ----

/**
 * An enclosure of the expression's exact value on the given inputs. With `uncertain` true each constant spans its
 * relative standard uncertainty (the enclosure then bounds what the constants' uncertainty lets the result be).
 */
export function enclose(e: Expr, inputs: Readonly<Record<string, number>>, uncertain: boolean): Interval {
  const of = (n: Expr): Interval => enclose(n, inputs, uncertain);
  switch (e.k) {
    case 'input': {
      const v = inputs[e.key];
      return v === undefined ? I.WHOLE : I.point(v);
    }
    case 'const':
      return uncertain ? I.withRelativeUncertainty(e.value, e.rel_unc) : I.point(e.value);
    case 'add':
      return I.add(of(e.a), of(e.b));
    case 'sub':
      return I.sub(of(e.a), of(e.b));
    case 'mul':
      return I.mul(of(e.a), of(e.b));
    case 'div':
      return I.div(of(e.a), of(e.b));
    case 'max':
      return I.max(of(e.a), of(e.b));
    case 'pow':
      return I.powInt(of(e.a), e.n);
    case 'powr':
      return I.exp(I.mul(of(e.e), I.log(of(e.a))));
    case 'sqrt':
      return I.sqrt(of(e.a));
    case 'exp':
      return I.exp(of(e.a));
    case 'log':
      return I.log(of(e.a));
    case 'log1p':
      return I.log1p(of(e.a));
    case 'expm1':
      return I.expm1(of(e.a));
    case 'sin':
      return I.sin(of(e.a));
    case 'cos':
      return I.cos(of(e.a));
    case 'Phi':
      return I.normalCdf(of(e.a));
    case 'neg':
      return I.neg(of(e.a));
    case 'if_positive': {
      const t = of(e.test);
      if (t.lo > 0) return of(e.then);
      if (t.hi <= 0) return of(e.else);
      return I.hull(of(e.then), of(e.else));
    }
  }
}

/** Whether any constant of the expression carries an uncertainty (else the uncertain enclosure is the same). */
export function hasUncertainConstant(e: Expr): boolean {
  switch (e.k) {
    case 'input':
      return false;
    case 'const':
      return e.rel_unc > 0;
    case 'if_positive':
      return hasUncertainConstant(e.test) || hasUncertainConstant(e.then) || hasUncertainConstant(e.else);
    case 'add':
    case 'sub':
    case 'mul':
    case 'div':
    case 'max':
      return hasUncertainConstant(e.a) || hasUncertainConstant(e.b);
    case 'powr':
      return hasUncertainConstant(e.a) || hasUncertainConstant(e.e);
    default:
      return hasUncertainConstant(e.a);
  }
}
