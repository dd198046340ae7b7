// The reality check a solver returns with its result (solvers.md §1) and the gate judges (kernel/gate.ts).
// Defined in the kernel so the gate does not import solvers/; solvers/types.ts re-exports it.

/** One gated comparison: computed vs an independently computed reference. */
export interface CheckPart {
  name: string;
  quantity: string;
  computed: number;
  reference: number;
  rel_error: number;
  tolerance: number;
  passed: boolean;
}

/**
 * The reality check. Where a check has several parts, `parts` lists them all and the top-level fields are
 * those of the worst part (rel_error is the largest). `refused` names a reason the check cannot certify the
 * result at all (e.g. "not finished: raise t_end_days"); a refused check never passes.
 */
export interface Check extends CheckPart {
  parts?: CheckPart[];
  refused?: string;
}

/**
 * |computed − reference| / |reference|, Infinity where that is not a number. Exact agreement is no error, also where
 * the reference is 0 (a fixed point, a conserved quantity that is 0): 0/0 would refuse a right answer. The one
 * reading of a part's error, for the solvers' checks and the gate that recomputes them.
 */
export function relativeError(computed: number, reference: number): number {
  if (Number.isFinite(computed) && computed === reference) return 0;
  const r = Math.abs(computed - reference) / Math.abs(reference);
  return Number.isFinite(r) ? r : Number.POSITIVE_INFINITY;
}
