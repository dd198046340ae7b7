// Building blocks for the closed-form operators of solvers.md §6: a builder that turns a compact spec into an
// OperatorDef, the guarded arithmetic that reports domain violations as 400 SVC_INVALID_INPUT naming the
// operator and the key, and the number formatting of the equation strings. Pure.
import { InputError } from '../errors.js';
import { inDomain, type PhysicalDomain } from './domains.js';
import type { Expr } from './reference.js';
import type { Domain, OperatorDef, OperatorInput } from './types.js';

/**
 * SVC_INVALID_INPUT for one operator's key: `field` is the key (as for every InputError) and the extra fields
 * also carry `operator`, so the error names both (solvers.md §6 step 2).
 */
export class OperatorInputError extends InputError {
  readonly operator: string;
  constructor(operator: string, field: string, reason: string, allowed: unknown = null) {
    super(field, reason, allowed);
    this.operator = operator;
    this.extra.operator = operator;
    this.message = `invalid input ${field} for operator ${operator}: ${reason}`;
  }
}

/** Guarded arithmetic handed to each operator's compute(): every failure names the key that caused it. */
export interface Guard {
  /** a / b; b = 0 → division by zero, named after `key`. */
  div(a: number, b: number, key: string): number;
  /** √x; x < 0 → negative under a root. */
  sqrt(x: number, key: string): number;
  /** ln x; x ≤ 0 → log of a non-positive number. */
  log(x: number, key: string): number;
  /** base^exp; a negative base with a non-integer exponent (an even root of a negative number) is rejected. */
  pow(base: number, exp: number, key: string): number;
  /** x itself, or an error naming `key` when x is not finite (overflow of an intermediate such as exp). */
  finite(x: number, key: string): number;
  /** Throw unless cond holds. */
  require(cond: boolean, key: string, reason: string, allowed?: unknown): void;
}

function makeGuard(operator: string): Guard {
  const fail = (key: string, reason: string, allowed: unknown = null): never => {
    throw new OperatorInputError(operator, key, reason, allowed);
  };
  return {
    div(a, b, key) {
      if (b === 0) fail(key, 'division by zero', { not: 0 });
      return a / b;
    },
    sqrt(x, key) {
      if (!(x >= 0)) fail(key, `negative under a root (${num(x)})`, { min: 0 });
      return Math.sqrt(x);
    },
    log(x, key) {
      if (!(x > 0)) fail(key, `log of a non-positive number (${num(x)})`, { min: 0, inclusive: false });
      return Math.log(x);
    },
    pow(base, exp, key) {
      if (base < 0 && !Number.isInteger(exp)) {
        fail(key, `negative base ${num(base)} with non-integer exponent ${num(exp)}`, { min: 0 });
      }
      if (base === 0 && exp < 0) fail(key, 'division by zero (zero to a negative power)', { not: 0 });
      return Math.pow(base, exp);
    },
    finite(x, key) {
      if (!Number.isFinite(x)) fail(key, `result is not finite (${String(x)})`, null);
      return x;
    },
    require(cond, key, reason, allowed = null) {
      if (!cond) fail(key, reason, allowed);
    },
  };
}

/** One input: key, unit, default, physical domain. */
export type InputSpec = readonly [key: string, unit: string, defaultValue: number, domain: PhysicalDomain];

export interface OperatorSpecDef {
  id: string;
  domain: Domain;
  formula: string;
  unit: string;
  inputs: readonly InputSpec[];
  /** The values the result can take (rule 7 step 3). */
  result_domain: PhysicalDomain;
  /** The formula once more, independent of compute(): see reference.ts. */
  reference: Expr;
  /** The standard result S. Use the guard for every division, root and logarithm. */
  compute(v: Record<string, number>, g: Guard): number;
  /** The equation with the inputs substituted and the result, e.g. 'E = 1/2 m v^2 = 1/2 · 2 kg · (3 m/s)^2 = 9 J'. */
  equation(v: Record<string, number>, result: number): string;
}

/**
 * Resolve one operator's inputs from a shared inputs object: a missing key takes the default; a key present
 * but not a finite number, or a value outside the input's physical domain, is SVC_INVALID_INPUT naming the operator
 * and key (and the value and domain). Keys come out in the operator's order.
 */
export function resolveOperatorInputs(def: Pick<OperatorDef, 'id' | 'inputs'>, inputs: Readonly<Record<string, unknown>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const input of def.inputs) {
    const raw = Object.prototype.hasOwnProperty.call(inputs, input.key) ? inputs[input.key] : undefined;
    if (raw === undefined) {
      out[input.key] = input.default;
      continue;
    }
    if (typeof raw !== 'number') {
      throw new OperatorInputError(def.id, input.key, `must be a number, got ${describe(raw)}`, 'finite number');
    }
    if (!Number.isFinite(raw)) {
      throw new OperatorInputError(def.id, input.key, `must be finite, got ${String(raw)}`, 'finite number');
    }
    if (!inDomain(raw, input.domain)) throw outsideDomain(def.id, input, raw);
    out[input.key] = raw;
  }
  return out;
}

/** 400 naming the input, its value and its domain. */
export function outsideDomain(operator: string, input: OperatorInput, value: number): OperatorInputError {
  const err = new OperatorInputError(operator, input.key, `${input.key} = ${q(value, input.unit)} is outside its domain: ${input.domain.text}`, input.domain);
  err.extra.value = value;
  err.extra.domain = input.domain;
  return err;
}

function describe(raw: unknown): string {
  if (raw === null) return 'null';
  if (Array.isArray(raw)) return 'array';
  return typeof raw;
}

/**
 * Build an OperatorDef. evaluate() resolves its argument like the chain does (missing keys take defaults,
 * non-numbers are rejected), runs compute() and rejects a non-finite result. A non-finite result with finite
 * inputs is an overflow (or an indeterminate form) that no guard above caught; it is reported on the input of
 * largest magnitude, the usual cause.
 */
export function defineOperator(spec: OperatorSpecDef): OperatorDef {
  const inputs: OperatorInput[] = spec.inputs.map(([key, unit, def, domain]) => ({ key, unit, default: def, domain }));
  const guard = makeGuard(spec.id);
  const resolve = (values: Record<string, number>) => resolveOperatorInputs({ id: spec.id, inputs }, values);
  return {
    id: spec.id,
    domain: spec.domain,
    formula: spec.formula,
    unit: spec.unit,
    inputs,
    result_domain: spec.result_domain,
    reference: spec.reference,
    evaluate(values) {
      const v = resolve(values);
      const result = spec.compute(v, guard);
      if (!Number.isFinite(result)) {
        let culprit = inputs[0]!.key;
        for (const input of inputs) if (Math.abs(v[input.key]!) > Math.abs(v[culprit]!)) culprit = input.key;
        throw new OperatorInputError(spec.id, culprit, `result is not finite (${String(result)})`, null);
      }
      // −0 and +0 are the same physical value; keep one of them so equal results serialise identically.
      return result === 0 ? 0 : result;
    },
    equation(values, result) {
      return spec.equation(resolve(values), result);
    },
  };
}

// ---- formatting of equation strings ----

/**
 * A number as written in equations: the shortest digits that round-trip (so the printed inputs are exactly the
 * resolved ones), in exponent form below 1e-3 and from 1e6 on (1.5e8, 7.2e-5), exponent without '+'.
 */
export function num(x: number): string {
  if (x === 0) return '0';
  const a = Math.abs(x);
  const text = a < 1e-3 || a >= 1e6 ? x.toExponential() : String(x);
  return text.replace('e+', 'e');
}

/** A quantity: number and unit ('1' = dimensionless, printed bare); negatives in parentheses for use in products. */
export function q(x: number, unit: string): string {
  const body = unit === '1' || unit === '' ? num(x) : `${num(x)} ${unit}`;
  return x < 0 ? `(${body})` : body;
}

/** A quantity raised to a power: (3 m/s)^2, 3^2, (-3)^2. */
export function pw(x: number, unit: string, power: number | string): string {
  const bare = unit === '1' || unit === '';
  const base = bare && x >= 0 ? num(x) : `(${bare ? num(x) : `${num(x)} ${unit}`})`;
  return `${base}^${typeof power === 'number' ? num(power) : power}`;
}

/** The result at the end of an equation line: '9 J', '0.5' for dimensionless. */
export function res(x: number, unit: string): string {
  return unit === '1' || unit === '' ? num(x) : `${num(x)} ${unit}`;
}

/** The first of `keys` whose value is negative (the one that made a root or log argument negative), else keys[0]. */
export function negKey(v: Record<string, number>, ...keys: string[]): string {
  for (const key of keys) if (v[key]! < 0) return key;
  return keys[0]!;
}
