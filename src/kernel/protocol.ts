// The seven-step protocol of rule 7, recorded in every result as {step, name, passed, detail}. Steps 3, 5 and 6 are
// checks computed from the result (chainChecks, solverChecks), each detail saying what was checked.
import type { Check } from './check.js';
import { TOLERANCE_GATE, withinModulationBound } from './modulation.js';
import type { OperatorCheck } from './operators/independent.js';

export interface ProtocolStep {
  step: number;
  name: string;
  passed: boolean;
  detail: string;
}

/** One computed step: whether it held, and what was checked. */
export interface StepCheck {
  passed: boolean;
  detail: string;
}

export interface ProtocolFacts {
  operatorChain: string[];
  domainOperatorCount: number;
  relError: number;
  /** Step 3: inputs and result against their physical domains and units. */
  scale: StepCheck;
  /** Step 5: the master sum (and the field terms, where there is a field). */
  master: StepCheck;
  /** Step 6: the result against its independent evaluation (closed form) or its reality check (solver). */
  execution: StepCheck;
  R_t: number;
  phase: number;
  svcond: number;
}

/** What the stamp gives the protocol: only step 7 depends on it. */
export type StampFacts = Pick<ProtocolFacts, 'R_t' | 'phase' | 'svcond'>;

export function protocolSteps(f: ProtocolFacts): ProtocolStep[] {
  return [...unstampedSteps(f), verifyStep(f)];
}

/** Steps 1–6: from the chain and its result alone. */
export function unstampedSteps(f: Omit<ProtocolFacts, keyof StampFacts>): ProtocolStep[] {
  const ko42First = f.operatorChain[0] === 'KO42';
  const countOk = f.domainOperatorCount >= 1 && f.domainOperatorCount <= 3;
  const precisionOk = f.relError <= TOLERANCE_GATE;
  return [
    { step: 1, name: 'KO42 included', passed: ko42First, detail: `chain ${f.operatorChain.join(' → ')}` },
    {
      step: 2,
      name: 'select 1-3 domain operators plus KO42',
      passed: countOk,
      detail: `${f.domainOperatorCount} domain operator(s), ${f.operatorChain.length} in all`,
    },
    { step: 3, name: 'match operator scale to domain', ...f.scale },
    { step: 4, name: 'target <= 0.1 % precision', passed: precisionOk, detail: `relative error ${f.relError.toExponential(3)}` },
    { step: 5, name: 'compile master field equation', ...f.master },
    { step: 6, name: 'execute functional equation', ...f.execution },
  ];
}

/** Step 7: the modulation at the stamp. */
export function verifyStep(f: StampFacts): ProtocolStep {
  const verifyOk = withinModulationBound(f.R_t) && f.phase >= 0 && f.phase < 1;
  return {
    step: 7,
    name: 'verify',
    passed: verifyOk,
    detail: `R_t ${f.R_t.toFixed(9)}, phase ${f.phase.toFixed(6)}, svcond ${f.svcond}, precision bound 1e-4, proof HMAC-SHA256`,
  };
}

/** What steps 3, 5 and 6 read of an evaluated closed-form chain (kernel/operators/chain.ts ChainResult). */
export interface CheckedChain {
  domain: string;
  value: number;
  unit: string;
  master_sum: { terms: { operator: string; value: number; unit: string }[]; total: number; unit: string };
  checks: OperatorCheck[];
}

/** Steps 3, 5 and 6 of a closed-form chain, computed from its operators' checks and its master sum. */
export function chainChecks(chain: CheckedChain): Pick<ProtocolFacts, 'scale' | 'master' | 'execution'> {
  const { checks } = chain;
  const outOfDomain = checks.filter((c) => !c.inputs_in_domain || !c.result_in_domain);
  const badDimension = checks.filter((c) => !c.dimension_ok);
  const scale: StepCheck = {
    passed: checks.length > 0 && outOfDomain.length === 0 && badDimension.length === 0,
    detail:
      `${domainVerdict(outOfDomain, chain.domain)}; dimensional analysis: ` +
      (badDimension.length === 0
        ? checks.map((c) => `${c.operator} ${c.dimension} = ${c.unit}`).join(', ')
        : badDimension.map((c) => `${c.operator} ${c.dimension} ≠ ${c.unit}`).join(', ')),
  };
  const terms = chain.master_sum.terms;
  const primary = terms[1];
  const sumOk =
    primary !== undefined &&
    terms[0]?.operator === 'KO42' &&
    withinModulationBound(terms[0].value) &&
    terms.length === checks.length + 1 &&
    terms.slice(1).every((t, i) => t.operator === checks[i]!.operator && Object.is(t.value, checks[i]!.value) && t.unit === checks[i]!.unit) &&
    Object.is(chain.master_sum.total, primary.value) &&
    chain.master_sum.unit === primary.unit;
  const master: StepCheck = {
    passed: sumOk,
    detail: sumOk
      ? `master sum: KO42 factor and ${terms.length - 1} operator term(s), total = S of ${primary!.operator} (${chain.value} ${chain.unit}); field terms null: scalar result (rule 8)`
      : 'master sum: its terms do not match the evaluated operators, or its total is not the primary operator S',
  };
  const disagreeing = checks.filter((c) => !(c.rel_error <= TOLERANCE_GATE));
  const execution: StepCheck = {
    passed: checks.length > 0 && disagreeing.length === 0,
    detail:
      `S = ${chain.value} ${chain.unit}; independent interval evaluation of each formula: ` +
      checks.map((c) => `${c.operator} in [${c.enclosure[0]}, ${c.enclosure[1]}] (rel. error ${c.rel_error.toExponential(3)})`).join(', '),
  };
  return { scale, master, execution };
}

function domainVerdict(outOfDomain: OperatorCheck[], domain: string): string {
  if (outOfDomain.length === 0) return `every operator of ${domain}: inputs and result within their physical domains`;
  return `outside the physical domain: ${outOfDomain.map((c) => (c.inputs_in_domain ? `${c.operator} result ${c.value} ${c.unit}` : `${c.operator} inputs`)).join(', ')}`;
}

/** What steps 3, 5 and 6 read of a solver's run. */
export interface CheckedRun {
  solver: string;
  value: number;
  unit: string;
  uncertainty: number;
  check: Check;
  /** The six master-equation terms at the stamp, or null for a scalar result (rule 8). */
  fieldTerms: number[] | null;
  /** The run's verdict at the gate (rel_error recomputed from the check's parts). */
  gate: { passed: boolean; rel_error: number };
}

/** Steps 3, 5 and 6 of a solver's run. Its inputs were validated against the solver's declared ranges by resolve(). */
export function solverChecks(run: CheckedRun): Pick<ProtocolFacts, 'scale' | 'master' | 'execution'> {
  const finite = Number.isFinite(run.value) && Number.isFinite(run.uncertainty) && run.uncertainty >= 0;
  const scale: StepCheck = {
    passed: finite && run.unit.length > 0,
    detail: `inputs within ${run.solver}'s declared ranges (checked before the run); result ${run.value} ${run.unit}, uncertainty ${run.uncertainty}${finite ? '' : ' (not finite)'}`,
  };
  const termsOk = run.fieldTerms === null || (run.fieldTerms.length === 6 && run.fieldTerms.every(Number.isFinite));
  const master: StepCheck = {
    passed: termsOk,
    detail:
      run.fieldTerms === null
        ? 'scalar result: field terms null (rule 8)'
        : `six terms computed from the returned field${termsOk ? ', all finite' : ': a term is not finite'}`,
  };
  const execution: StepCheck = {
    passed: run.gate.passed,
    detail: `${run.check.name}: ${run.check.quantity} ${run.check.computed} against reference ${run.check.reference} (rel. error ${run.gate.rel_error.toExponential(3)})`,
  };
  return { scale, master, execution };
}
