// Rule 7 steps 3 and 6 for one closed-form operator: its inputs and result against their physical domains, its
// formula's dimension against its unit, and its value against an independent evaluation of the same formula
// (reference.ts: interval arithmetic on the operator's reference expression, not its compute()). Pure.
import { TOLERANCE_GATE } from '../modulation.js';
import { inDomain } from './domains.js';
import { dimensionOf, dimensionText, enclose, hasUncertainConstant, parseUnit, sameDimension } from './reference.js';
import type { OperatorDef } from './types.js';

export interface OperatorCheck {
  operator: string;
  value: number;
  unit: string;
  /** Every resolved input within its physical domain. */
  inputs_in_domain: boolean;
  /** The value within the operator's result domain. */
  result_in_domain: boolean;
  /** The reference formula's dimension, e.g. 'm^2*kg*s^-2'. */
  dimension: string;
  /** That dimension is the operator's unit's, and the formula adds only like quantities. */
  dimension_ok: boolean;
  /** An enclosure of the formula's exact value on the inputs (constants as listed). */
  enclosure: [number, number];
  /** How far the value lies outside the enclosure, relative to the larger of its magnitude and the enclosure's. */
  rel_error: number;
  /**
   * max |value − y| over every y the formula can take with each measured constant anywhere within its CODATA
   * standard uncertainty: floating-point rounding and the constants' uncertainty, bounded by interval arithmetic.
   */
  uncertainty: number;
  passed: boolean;
  reason: string | null;
}

interface StaticFacts {
  dimension: string;
  dimension_ok: boolean;
  dimension_reason: string | null;
  uncertain: boolean;
}

const staticFacts = new WeakMap<OperatorDef, StaticFacts>();

/** What depends on the operator alone (its formula's dimension), worked out once per definition. */
function factsOf(op: OperatorDef): StaticFacts {
  const known = staticFacts.get(op);
  if (known) return known;
  const units = Object.fromEntries(op.inputs.map((i) => [i.key, i.unit]));
  let facts: StaticFacts;
  try {
    const d = dimensionOf(op.reference, units);
    const ok = sameDimension(d, parseUnit(op.unit));
    facts = {
      dimension: dimensionText(d),
      dimension_ok: ok,
      dimension_reason: ok ? null : `the formula has dimension ${dimensionText(d)}, the unit ${op.unit} is ${dimensionText(parseUnit(op.unit))}`,
      uncertain: hasUncertainConstant(op.reference),
    };
  } catch (err) {
    facts = { dimension: 'inconsistent', dimension_ok: false, dimension_reason: `dimensional analysis: ${(err as Error).message}`, uncertain: false };
  }
  staticFacts.set(op, facts);
  return facts;
}

/** The dimensional analysis of an operator's formula: its dimension, or the inconsistency found. */
export function operatorDimension(op: OperatorDef): { dimension: string; ok: boolean; reason: string | null } {
  const f = factsOf(op);
  return { dimension: f.dimension, ok: f.dimension_ok, reason: f.dimension_reason };
}

function relativeOutside(value: number, lo: number, hi: number): number {
  if (!(Number.isFinite(lo) && Number.isFinite(hi))) return Number.POSITIVE_INFINITY;
  const outside = value < lo ? lo - value : value > hi ? value - hi : 0;
  if (outside === 0) return 0;
  return outside / Math.max(Math.abs(value), Math.abs(lo), Math.abs(hi));
}

/** Check one operator's value on its resolved inputs (rule 7 steps 3 and 6). */
export function checkOperator(op: OperatorDef, inputs: Readonly<Record<string, number>>, value: number): OperatorCheck {
  const facts = factsOf(op);
  const inputsOk = op.inputs.every((i) => inDomain(inputs[i.key] ?? Number.NaN, i.domain));
  const resultOk = inDomain(value, op.result_domain);
  const exact = enclose(op.reference, inputs, false);
  const wide = facts.uncertain ? enclose(op.reference, inputs, true) : exact;
  const rel = relativeOutside(value, exact.lo, exact.hi);
  const uncertainty = Math.max(Math.abs(value - wide.lo), Math.abs(value - wide.hi));
  let reason: string | null = null;
  if (!inputsOk) reason = `${op.id}: an input is outside its physical domain`;
  else if (!facts.dimension_ok) reason = `${op.id}: ${facts.dimension_reason}`;
  else if (!resultOk) reason = `${op.id}: result ${value} ${op.unit} is outside its domain (${op.result_domain.text})`;
  else if (!Number.isFinite(rel)) reason = `${op.id}: the independent evaluation cannot enclose the result`;
  else if (!(rel <= TOLERANCE_GATE))
    reason = `${op.id}: result ${value} ${op.unit} disagrees with the independent evaluation [${exact.lo}, ${exact.hi}] (relative error ${rel.toExponential(3)})`;
  return {
    operator: op.id,
    value,
    unit: op.unit,
    inputs_in_domain: inputsOk,
    result_in_domain: resultOk,
    dimension: facts.dimension,
    dimension_ok: facts.dimension_ok,
    enclosure: [exact.lo, exact.hi],
    rel_error: rel,
    uncertainty: Number.isFinite(uncertainty) ? uncertainty : Number.POSITIVE_INFINITY,
    passed: reason === null,
    reason,
  };
}
