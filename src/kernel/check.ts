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
