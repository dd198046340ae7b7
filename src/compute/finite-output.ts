// A solver result that passed its reality check can still hold a number no JSON body can carry (NaN, ±Infinity),
// or a rule-8 array too small to normalise (its field terms would be NaN). Such a result cannot be sealed: it is
// caught here, once for every solver, before anything is charged or written, and answered 422 as a check that
// cannot pass, not left to fail inside the sealer as a 500.
import type { SolverOutput } from '../solvers/types.js';

/** The field terms divide a rule-8 array by its largest magnitude; below this its reciprocal overflows. */
const SMALLEST_NORMALISABLE = 1 / Number.MAX_VALUE;

/** Where `value` holds a number that is not finite (a path such as outputs.rate[3]), or null. Iterative. */
function nonFiniteAt(value: unknown, root: string): string | null {
  const values: unknown[] = [value];
  const paths: string[] = [root];
  while (values.length > 0) {
    const v = values.pop();
    const path = paths.pop()!;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return path;
    } else if (v !== null && typeof v === 'object') {
      if (ArrayBuffer.isView(v) || Array.isArray(v)) {
        const a = v as unknown as ArrayLike<unknown>;
        for (let i = 0; i < a.length; i++) {
          values.push(a[i]);
          paths.push(`${path}[${i}]`);
        }
      } else {
        for (const k in v) {
          values.push((v as Record<string, unknown>)[k]);
          paths.push(`${path}.${k}`);
        }
      }
    }
  }
  return null;
}

/** The largest finite magnitude of a rule-8 array (1-D or rows). */
function largestMagnitude(rule8: number[] | number[][]): number {
  let max = 0;
  for (const row of rule8) {
    if (typeof row === 'number') {
      if (Number.isFinite(row)) max = Math.max(max, Math.abs(row));
    } else {
      for (const x of row) if (Number.isFinite(x)) max = Math.max(max, Math.abs(x));
    }
  }
  return max;
}

/** Why a solver result cannot be sealed, or null when every number in it is finite and its field normalisable. */
export function unsealableOutput(out: SolverOutput): string | null {
  const at =
    nonFiniteAt(out.value, 'value') ??
    nonFiniteAt(out.uncertainty, 'uncertainty') ??
    nonFiniteAt(out.receipt_fields, 'receipt_fields') ??
    nonFiniteAt(out.outputs, 'outputs') ??
    nonFiniteAt(out.state, 'state') ??
    (out.rule8 !== null ? nonFiniteAt(out.rule8, out.rule8_array ?? 'rule8') : null);
  if (at !== null) return `${at} is not a finite number`;
  if (out.rule8 !== null) {
    const max = largestMagnitude(out.rule8);
    if (max > 0 && max < SMALLEST_NORMALISABLE) return `${out.rule8_array ?? 'rule8'} is too small to normalise (largest magnitude ${max})`;
  }
  return null;
}
