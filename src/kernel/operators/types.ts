// The closed-form operator contract of solvers.md §6.
import type { PhysicalDomain } from './domains.js';
import type { Expr } from './reference.js';

export const DOMAINS = ['mechanics', 'thermodynamics', 'electromagnetism', 'quantum', 'relativity', 'fluids', 'finance', 'biology'] as const;
export type Domain = (typeof DOMAINS)[number];

export interface OperatorInput {
  key: string;
  unit: string;
  default: number;
  /** The values the input can take in the physics of the formula; anything else is 400 SVC_INVALID_INPUT. */
  domain: PhysicalDomain;
}

export interface OperatorDef {
  id: string;
  domain: Domain;
  /** Formula as listed in solvers.md §6, e.g. 'E = ½mv²'. */
  formula: string;
  unit: string;
  inputs: OperatorInput[];
  /** The values the result can take; a result outside it fails rule 7 step 3 (the implementation is wrong). */
  result_domain: PhysicalDomain;
  /** The formula once more, as an expression tree: evaluated over dimensions and in interval arithmetic (reference.ts). */
  reference: Expr;
  /**
   * The standard result S from resolved inputs. Throws InputError (field = key) on a domain violation
   * (division by zero, v ≥ c, negative under a root, log of a non-positive number).
   */
  evaluate(values: Record<string, number>): number;
  /** Human-readable equation with inputs substituted, e.g. 'E = 1/2 m v^2 = 1/2 · 2 kg · (3 m/s)^2 = 9 J'. */
  equation(values: Record<string, number>, result: number): string;
}
