// The closed-form operator contract of solvers.md §6.

export const DOMAINS = ['mechanics', 'thermodynamics', 'electromagnetism', 'quantum', 'relativity', 'fluids', 'finance', 'biology'] as const;
export type Domain = (typeof DOMAINS)[number];

export interface OperatorInput {
  key: string;
  unit: string;
  default: number;
}

export interface OperatorDef {
  id: string;
  domain: Domain;
  /** Formula as listed in solvers.md §6, e.g. 'E = ½mv²'. */
  formula: string;
  unit: string;
  inputs: OperatorInput[];
  /**
   * The standard result S from resolved inputs. Throws InputError (field = key) on a domain violation
   * (division by zero, v ≥ c, negative under a root, log of a non-positive number).
   */
  evaluate(values: Record<string, number>): number;
  /** Human-readable equation with inputs substituted, e.g. 'E = 1/2 m v^2 = 1/2 · 2 kg · (3 m/s)^2 = 9 J'. */
  equation(values: Record<string, number>, result: number): string;
}
