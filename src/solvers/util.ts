// Helpers every solver uses: input parsing with zod, check construction, bounded arrays.
import { z } from 'zod';
import { C_LIGHT } from '../kernel/operators/constants.js';
import { relativeError } from '../kernel/check.js';
import { InputError } from './errors.js';
import type { Check, CheckPart } from './types.js';

export const GATE_TOLERANCE = 1e-3;

/**
 * Parse raw inputs with a strict zod object schema; the first issue becomes an InputError
 * (field, reason, allowed) — unknown keys, wrong types and out-of-range values alike.
 */
export function parseInputs<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const body = raw === undefined ? {} : raw;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InputError('inputs', 'inputs must be a JSON object', 'object');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw zodIssueToInputError(result.error.issues[0]!);
}

/**
 * Keys of another mode are refused (decisions.md "Solvers"): 400 naming the first key of the request `raw` (already
 * parsed as an object) that only another value of `selector` reads. A key silently ignored would seal a run the
 * caller did not ask for.
 */
export function refuseOtherModeKeys(raw: unknown, selector: string, mode: string, onlyFor: Readonly<Record<string, readonly string[]>>): void {
  if (raw === null || typeof raw !== 'object') return;
  for (const [other, keys] of Object.entries(onlyFor)) {
    if (other === mode) continue;
    for (const key of keys) {
      if (Object.hasOwn(raw, key)) throw new InputError(key, `${key} applies to ${selector} ${other} only`, { [selector]: other });
    }
  }
}

/**
 * Parse a stateful solver's initialState with its zod schema; the first issue becomes an InputError on
 * 'initialState' whose reason names the path inside the state (`x: …`, `bodies.0.mass_kg: …`).
 */
export function parseState<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const e = zodIssueToInputError(result.error.issues[0]!);
  throw new InputError('initialState', `${e.field}: ${e.reason}`, e.allowed);
}

export function zodIssueToInputError(issue: z.core.$ZodIssue, root = 'inputs'): InputError {
  const field = issue.path.length ? issue.path.map(String).join('.') : root;
  const anyIssue = issue as unknown as Record<string, unknown>;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const keys = (anyIssue.keys as string[]) ?? [];
      // Named with its path: `lines.0.extra`, not a bare `extra` that may be any object's.
      const first = keys[0] === undefined ? field : [...issue.path.map(String), keys[0]].join('.');
      return new InputError(first, `unknown key${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}`, null);
    }
    case 'invalid_union': {
      // The form whose required members are all there says what is wrong; none such: the members each form needs.
      const forms = (anyIssue.errors as z.core.$ZodIssue[][] | undefined) ?? [];
      const lacks = (form: z.core.$ZodIssue[]) => form.find((i) => i.code === 'invalid_type' && i.message.endsWith('received undefined'));
      const fitting = forms.filter((form) => lacks(form) === undefined && form.length > 0);
      if (fitting.length === 1) {
        const inner = fitting[0]![0]!;
        return zodIssueToInputError({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue, root);
      }
      const needs = forms.map((form) => lacks(form)?.path.map(String).join('.')).filter((k): k is string => k !== undefined);
      return new InputError(field, needs.length > 0 ? `none of its forms fits: give ${[...new Set(needs)].join(' or ')}` : issue.message, null);
    }
    case 'too_small':
      return new InputError(field, issue.message, { min: anyIssue.minimum, inclusive: anyIssue.inclusive ?? true });
    case 'too_big':
      return new InputError(field, issue.message, { max: anyIssue.maximum, inclusive: anyIssue.inclusive ?? true });
    case 'invalid_value':
      return new InputError(field, issue.message, anyIssue.values ?? null);
    case 'invalid_type':
      // A member left out: zod 4 says "Invalid input: expected …, received undefined" (or "expected nonoptional").
      if (issue.message.endsWith('received undefined')) {
        const expected = anyIssue.expected;
        const what = typeof expected === 'string' && expected !== 'nonoptional' ? `: ${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}` : '';
        return new InputError(field, `required${what}`, null);
      }
      return new InputError(field, issue.message, null);
    default:
      return new InputError(field, issue.message, null);
  }
}

/** Throw InputError when a work estimate exceeds its limit (checked before any numerical work). */
export function checkWorkLimit(name: string, work: number, limit: number): void {
  if (!(work <= limit)) {
    throw new InputError(name, `work limit exceeded: ${work.toExponential(3)} > ${limit.toExponential(3)}`, { max: limit });
  }
}

export function checkPart(name: string, quantity: string, computed: number, reference: number): CheckPart {
  const rel = relativeError(computed, reference);
  return { name, quantity, computed, reference, rel_error: rel, tolerance: GATE_TOLERANCE, passed: rel <= GATE_TOLERANCE };
}

/** A single-part check. */
export function makeCheck(name: string, quantity: string, computed: number, reference: number): Check {
  return checkPart(name, quantity, computed, reference);
}

/** A check of several parts: every part must pass; the top level is the worst part. */
export function combineChecks(parts: CheckPart[]): Check {
  let worst = parts[0]!;
  for (const p of parts) if (!(p.rel_error <= worst.rel_error)) worst = p;
  return { ...worst, passed: parts.every((p) => p.passed), parts };
}

/** A check that cannot certify the result: never passes, carries the reason. */
export function refuseCheck(check: Check, reason: string): Check {
  return { ...check, passed: false, refused: reason };
}

/** Uniform-stride indices over n samples, at most max of them, endpoints kept. */
export function strideIndices(n: number, max: number): number[] {
  if (n <= max) return Array.from({ length: n }, (_, i) => i);
  const out: number[] = [];
  for (let k = 0; k < max; k++) out.push(Math.round((k * (n - 1)) / (max - 1)));
  return out;
}

/** A profile bounded to ≤ max samples (uniform stride, endpoints kept). */
export function boundProfile(values: ArrayLike<number>, max = 512): number[] {
  return strideIndices(values.length, max).map((i) => values[i]!);
}

/** A field (rows) bounded to ≤ max × max (uniform stride in each direction). */
export function boundField(rows: ArrayLike<ArrayLike<number>>, max = 64): number[][] {
  const ri = strideIndices(rows.length, max);
  const ci = strideIndices(rows[0]?.length ?? 0, max);
  return ri.map((r) => ci.map((c) => rows[r]![c]!));
}

/** A spectrum bounded to ≤ max entries (the first ones). */
export function boundSpectrum(values: ArrayLike<number>, max = 64): number[] {
  return Array.from(values).slice(0, max);
}

/** zod helpers for the common key shapes. */
export const num = () => z.number().refine(Number.isFinite, 'must be a finite number');
export const positive = () => z.number().positive().refine(Number.isFinite, 'must be finite');
export const intIn = (min: number, max: number) => z.number().int().min(min).max(max);
export const numIn = (min: number, max: number) => z.number().min(min).max(max);
/** A massive body's velocity vector: finite components and a speed |v| below c (its physical domain). */
export const velocityBelowC = () =>
  z
    .tuple([num(), num(), num()])
    .refine((v) => Math.hypot(v[0], v[1], v[2]) < C_LIGHT, `speed |v| must be below c = ${C_LIGHT} m/s (classical mechanics of massive bodies)`);
export const seedSchema = () => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
