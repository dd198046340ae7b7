// Evaluating an operator chain, solvers.md §6 "Evaluating a chain" steps 1–5. Pure: the modulation (R_t at the
// stamping tick) is handed in by the caller, which also runs the step-6 gate, seals and stores.
import { InputError, ServiceError } from '../errors.js';
import { num, resolveOperatorInputs } from './define.js';
import { checkOperator, type OperatorCheck } from './independent.js';
import { invalidDomainError, isDomain, getOperator, KO42, KO42_ID, operatorsInDomain, similarNames, similarOperators } from './registry.js';
import type { Domain, OperatorDef } from './types.js';

/** Part 7/8: more than this many operators (KO42 included) → 400 SVC_TOO_MANY_OPERATORS. */
export const MAX_OPERATORS = 10;
/** Rule 7 step 2: 1–3 domain operators plus KO42. */
export const PROTOCOL_MIN_DOMAIN_OPERATORS = 1;
export const PROTOCOL_MAX_DOMAIN_OPERATORS = 3;

/** The body of POST /api/svc/compute. Typed loosely: this function does the validation of §6 step 1–2. */
export interface ChainRequest {
  domain: unknown;
  operators: unknown;
  inputs?: unknown;
}

/** KO42 at the stamping tick: R_t = 1 + a·sin(2π·phase + φ0), the tick number and the phase in [0, 1). */
export interface Modulation {
  R_t: number;
  svcond: number;
  phase: number;
  /** φ0 of the kernel config (rule 2); 0 when not set. Only printed in the KO42 equation line. */
  phi0?: number;
}

export interface MasterSumTerm {
  operator: string;
  value: number;
  unit: string;
}

export interface ChainResult {
  domain: Domain;
  /** The validated chain, KO42 first. */
  operators: string[];
  /** The primary operator's (operators[1]) standard result S — never multiplied by R(t) (rule 5). */
  value: number;
  unit: string;
  operator_id: string;
  /** Element 0 the KO42 line, then one line per domain operator with its inputs substituted. */
  equations: string[];
  master_sum: { terms: MasterSumTerm[]; total: number; unit: string };
  /** Each domain operator's resolved inputs (defaults filled in), in chain order. */
  resolved: { operator: string; inputs: Record<string, number> }[];
  /** Length of the chain, KO42 included. */
  operator_count: number;
  domain_operator_count: number;
  /** Rule 7 step 2: 1–3 domain operators (plus KO42). 4 … 9 domain operators are evaluated but not compliant. */
  protocol_step2_compliant: boolean;
  /** Rule 7 steps 3 and 6 for each domain operator, in chain order: domains, dimensions, independent evaluation. */
  checks: OperatorCheck[];
}

/** Where a chain's operator ids are looked up: the registry, or (in a test) a registry with one operator replaced. */
export type OperatorLookup = (id: string) => OperatorDef | undefined;

function invalidOperator(message: string, availableSimilar: string[]): ServiceError {
  return new ServiceError(400, 'SVC_INVALID_OPERATOR', message, { available_similar: availableSimilar });
}

/** Up to 5 domain operator ids (KO42 excluded) nearest to `name`. */
function similarDomainOperators(name: string, domain: Domain): string[] {
  return similarOperators(name, domain, 6)
    .filter((id) => id !== KO42_ID)
    .slice(0, 5);
}

function describe(x: unknown): string {
  return typeof x === 'string' ? `'${x}'` : x === undefined ? '(missing)' : (JSON.stringify(x) ?? String(x));
}

/**
 * Step 1: validation, in the order of §6. Returns the domain and the domain operators (operators[1…]).
 * Unknown domain → SVC_INVALID_DOMAIN {suggestion}; > 10 operators → SVC_TOO_MANY_OPERATORS
 * {requested_operators, limit}; operators[0] ≠ KO42, an unknown id, an id of another domain, KO42 repeated
 * after position 0, or no domain operator at all → SVC_INVALID_OPERATOR {available_similar}.
 */
export function validateChain(
  request: { domain: unknown; operators: unknown },
  lookup: OperatorLookup = getOperator,
): {
  domain: Domain;
  chain: OperatorDef[];
} {
  const { domain, operators } = request;
  if (!isDomain(domain)) throw invalidDomainError(domain);

  if (!Array.isArray(operators)) {
    throw invalidOperator(`operators must be an array of operator ids with ${KO42_ID} first, got ${describe(operators)}`, [
      KO42_ID,
      ...operatorsInDomain(domain)
        .slice(0, 4)
        .map((op) => op.id),
    ]);
  }
  if (operators.length > MAX_OPERATORS) {
    throw new ServiceError(400, 'SVC_TOO_MANY_OPERATORS', `${operators.length} operators requested; at most ${MAX_OPERATORS} are accepted (KO42 included)`, {
      requested_operators: operators.length,
      limit: MAX_OPERATORS,
    });
  }
  if (operators[0] !== KO42_ID) {
    const first = operators[0];
    throw invalidOperator(
      operators.length === 0 ? `operators is empty; ${KO42_ID} must be operators[0]` : `operators[0] must be ${KO42_ID}, got ${describe(first)}`,
      [KO42_ID, ...similarDomainOperators(typeof first === 'string' ? first : '', domain).slice(0, 4)],
    );
  }
  const chain: OperatorDef[] = [];
  for (let i = 1; i < operators.length; i++) {
    const id: unknown = operators[i];
    const name = typeof id === 'string' ? id : '';
    if (id === KO42_ID) {
      throw invalidOperator(`${KO42_ID} may appear only as operators[0] (found again at operators[${i}])`, similarDomainOperators(name, domain));
    }
    const op = typeof id === 'string' ? lookup(id) : undefined;
    if (!op) {
      throw invalidOperator(`operators[${i}] = ${describe(id)} is not a registered operator`, similarDomainOperators(name, domain));
    }
    if (op.domain !== domain) {
      throw invalidOperator(
        `operators[${i}] = '${op.id}' belongs to domain '${op.domain}' and is unavailable in domain '${domain}'`,
        similarDomainOperators(name, domain),
      );
    }
    chain.push(op);
  }
  if (chain.length === 0) {
    throw invalidOperator(
      `the chain has no domain operator: give ${KO42_ID} followed by 1–3 operators of domain '${domain}'`,
      operatorsInDomain(domain)
        .slice(0, 5)
        .map((op) => op.id),
    );
  }
  return { domain, chain };
}

/** The KO42 line of §6 step 4, e.g. 'KO42: R(t) = S(t)[1 + 0.001·sin(2π·1.287·t + 0)] = S·1.000734 (svcond 2289461022)'. */
export function ko42Equation(modulation: Modulation): string {
  const phi0 = modulation.phi0 ?? 0;
  return (
    `${KO42_ID}: R(t) = S(t)[1 + ${num(KO42.amplitude)}·sin(2π·${num(KO42.frequency_hz)}·t + ${num(phi0)})] = ` +
    `S·${modulation.R_t.toFixed(6)} (svcond ${modulation.svcond})`
  );
}

/**
 * Steps 1 and 2 without evaluating anything: the chain (validateChain) and its inputs — an object, every key read by
 * some operator of the chain, every value of its type and inside its physical domain. What evaluateChain checks
 * first, for a caller that takes a chain now and runs it later (a reactor).
 */
export function checkChainRequest(
  request: Pick<ChainRequest, 'domain' | 'operators' | 'inputs'>,
  lookup: OperatorLookup = getOperator,
): { domain: Domain; chain: OperatorDef[]; resolved: { operator: string; inputs: Record<string, number> }[] } {
  // Step 1.
  const { domain, chain } = validateChain(request, lookup);

  // Step 2: the inputs object is shared by the whole chain.
  const raw = request.inputs === undefined ? {} : request.inputs;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new InputError('inputs', `inputs must be an object of numbers, got ${describe(raw)}`, 'object');
  }
  const inputs = raw as Record<string, unknown>;

  // Every key must be one some operator of the chain reads: a key no operator reads is a misspelt name (a 'mass' for
  // 'mass_kg') whose value would otherwise be replaced by the default without a word. Refused, naming the nearest keys.
  const known = [...new Set(chain.flatMap((op) => op.inputs.map((i) => i.key)))];
  for (const key of Object.keys(inputs)) {
    if (known.includes(key)) continue;
    const closest = similarNames(key, known, 3);
    const err = new InputError(
      key,
      `unknown input '${key}': no operator of ${[KO42_ID, ...chain.map((op) => op.id)].join(' → ')} reads it; closest known: ${closest.join(', ')}`,
      known,
    );
    err.extra.closest = closest;
    throw err;
  }

  // Resolve every operator (type errors, then physical domains), in chain order.
  const resolved = chain.map((op) => ({ operator: op.id, inputs: resolveOperatorInputs(op, inputs) }));
  return { domain, chain, resolved };
}

/**
 * Evaluate a chain {domain, operators: ['KO42', P, S1?, …], inputs} (§6 steps 1–5).
 * Throws ServiceError (400 SVC_INVALID_DOMAIN / SVC_TOO_MANY_OPERATORS / SVC_INVALID_OPERATOR) or InputError
 * (400 SVC_INVALID_INPUT: an unknown key with the closest known ones, or a value of the wrong type or outside its
 * physical domain, naming the operator and key).
 */
export function evaluateChain(request: ChainRequest, modulation: Modulation, lookup: OperatorLookup = getOperator): ChainResult {
  if (
    !Number.isFinite(modulation.R_t) ||
    !Number.isSafeInteger(modulation.svcond) ||
    !Number.isFinite(modulation.phase) ||
    (modulation.phi0 !== undefined && !Number.isFinite(modulation.phi0))
  ) {
    throw new TypeError('evaluateChain: modulation needs a finite R_t and phase and an integer svcond');
  }

  const { domain, chain, resolved } = checkChainRequest(request, lookup);

  // Evaluate each domain operator on its resolved inputs; domain violations throw InputError.
  const values = chain.map((op, i) => op.evaluate(resolved[i]!.inputs));
  const checks = chain.map((op, i) => checkOperator(op, resolved[i]!.inputs, values[i]!));

  // Steps 3–5.
  const primary = chain[0]!;
  const value = values[0]!;
  const equations = [ko42Equation(modulation), ...chain.map((op, i) => op.equation(resolved[i]!.inputs, values[i]!))];
  const terms: MasterSumTerm[] = [
    { operator: KO42_ID, value: modulation.R_t, unit: KO42.unit },
    ...chain.map((op, i) => ({ operator: op.id, value: values[i]!, unit: op.unit })),
  ];
  return {
    domain,
    operators: [KO42_ID, ...chain.map((op) => op.id)],
    value,
    unit: primary.unit,
    operator_id: primary.id,
    equations,
    master_sum: { terms, total: value, unit: primary.unit },
    resolved,
    operator_count: chain.length + 1,
    domain_operator_count: chain.length,
    protocol_step2_compliant: chain.length >= PROTOCOL_MIN_DOMAIN_OPERATORS && chain.length <= PROTOCOL_MAX_DOMAIN_OPERATORS,
    checks,
  };
}
