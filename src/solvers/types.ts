// The solver contract of solvers.md §1. Solvers are pure: a function of (id, resolved inputs, initialState).

import type { z } from 'zod';
import type { Check } from '../kernel/check.js';
import type { StateField } from '../kernel/state-field.js';

// Check (kernel/check.ts) and StateField (kernel/state-field.ts) live in the kernel, which judges and seals them.
export type { Check, CheckPart } from '../kernel/check.js';
export type { StateField } from '../kernel/state-field.js';

export type OutputClass = 'field' | 'spectrum' | 'profile' | 'scalar';

export interface SolverOutput {
  mode: string | null;
  value: number;
  unit: string;
  /** Defaults to check.rel_error × |value|; Monte Carlo solvers give their standard error. */
  uncertainty?: number;
  output_class: OutputClass;
  /**
   * The samples of the rule-8 array (solvers.md §2 `rule8_array`): a 1-D array for profiles and spectra,
   * a 2-D array (rows) for fields; null for scalar solvers. Already bounded (≤ 512, ≤ 64×64, ≤ 64).
   */
  rule8: number[] | number[][] | null;
  /** Name of the output that rule8 was taken from (e.g. 'temperature'); null for scalar. */
  rule8_array: string | null;
  outputs: Record<string, unknown>;
  check: Check;
  /** Stateful solvers only: accepted back as initialState. */
  state?: unknown;
  /** Explicit receipt state fields (react, fracture, evolve); unit-mapped fields are added by the kernel. */
  receipt_fields?: Record<string, StateField>;
}

export interface InputSpec {
  key: string;
  unit: string;
  default: unknown;
  range: string;
}

export interface SolverDef<I extends Record<string, unknown> = Record<string, unknown>> {
  id: string;
  /** The catalogue kind in words, e.g. 'heat diffusion (1-D and 2-D)'. */
  kind: string;
  /** Own endpoint path (e.g. '/api/svc/heat'), or null when reached only through /api/svc/solve. */
  endpoint: string | null;
  /** False only for `multibody` (the 27th id). */
  catalogue: boolean;
  modes: string[] | null;
  stateful: boolean;
  /** Accepted input keys with units, defaults and ranges, for discovery and operator-spec. */
  inputs: InputSpec[];
  /**
   * The zod schema `resolve` parses raw inputs with (a solver whose keys depend on a mode: the union of its mode
   * schemas). Its JSON Schema (zod 4's toJSONSchema) is the input description of the solver's MCP tool: written once.
   */
  schema?: z.ZodType;
  /**
   * Validate raw inputs (unknown key, wrong type, out of range, work limit) and fill defaults.
   * Throws InputError. Must do no numerical work beyond the work-limit estimate.
   */
  resolve(raw: unknown): I;
  /** Validate an initialState (throws InputError with field 'initialState'). Stateful solvers only. */
  resolveState?(raw: unknown, inputs: I): unknown;
  /** Run on resolved inputs. Pure and deterministic. May throw SolverFailure. */
  run(inputs: I, initialState?: unknown): SolverOutput;
}
