// One entry of the receipt's continuum state fields (spec 2.2). Solvers may give explicit ones
// (SolverOutput.receipt_fields); the receipt (kernel/receipt.ts) writes them.
export interface StateField {
  value: number;
  unit: string;
}
