// The seven-step protocol of rule 7, recorded in every result as {step, name, passed, detail}.
import { TOLERANCE_GATE, withinModulationBound } from './modulation.js';

export interface ProtocolStep {
  step: number;
  name: string;
  passed: boolean;
  detail: string;
}

export interface ProtocolFacts {
  operatorChain: string[];
  domainOperatorCount: number;
  domain: string;
  relError: number;
  fieldTerms: boolean;
  value: number;
  unit: string;
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
    { step: 3, name: 'match operator scale to domain', passed: true, detail: `every operator belongs to ${f.domain}` },
    { step: 4, name: 'target <= 0.1 % precision', passed: precisionOk, detail: `relative error ${f.relError.toExponential(3)}` },
    {
      step: 5,
      name: 'compile master field equation',
      passed: true,
      detail: f.fieldTerms ? 'six terms computed from the returned field' : 'scalar result: field terms null (rule 8)',
    },
    { step: 6, name: 'execute functional equation', passed: true, detail: `S = ${f.value} ${f.unit}` },
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
