// The closed-form operator registry of solvers.md §6: KO42 plus the domain operators, lookups, and the shapes of
// GET /api/operators, GET /api/operators/categories and POST /api/svc/operator-spec. Pure.
import { InputError, ServiceError } from '../errors.js';
import { BIOLOGY_OPERATORS } from './biology.js';
import { ELECTROMAGNETISM_OPERATORS } from './electromagnetism.js';
import { FINANCE_OPERATORS } from './finance.js';
import { FLUIDS_OPERATORS } from './fluids.js';
import { MECHANICS_OPERATORS } from './mechanics.js';
import { QUANTUM_OPERATORS } from './quantum.js';
import { RELATIVITY_OPERATORS } from './relativity.js';
import { THERMODYNAMICS_OPERATORS } from './thermodynamics.js';
import type { PhysicalDomain } from './domains.js';
import { DOMAINS, type Domain, type OperatorDef, type OperatorInput } from './types.js';

/** KO42, the modulation operator: registered in every domain, always operators[0], no inputs. */
export const KO42 = Object.freeze({
  id: 'KO42' as const,
  formula: 'R(t) = S(t)[1 + a·sin(2π·f·t + φ0)]',
  unit: '1',
  inputs: [] as readonly OperatorInput[],
  domains: DOMAINS,
  /** Pulse frequency f, Hz (rule 2). */
  frequency_hz: 1.287,
  /** Modulation amplitude a (rule 2, exact). */
  amplitude: 1e-3,
});
export const KO42_ID = KO42.id;

const BY_DOMAIN: Readonly<Record<Domain, readonly OperatorDef[]>> = {
  mechanics: MECHANICS_OPERATORS,
  thermodynamics: THERMODYNAMICS_OPERATORS,
  electromagnetism: ELECTROMAGNETISM_OPERATORS,
  quantum: QUANTUM_OPERATORS,
  relativity: RELATIVITY_OPERATORS,
  fluids: FLUIDS_OPERATORS,
  finance: FINANCE_OPERATORS,
  biology: BIOLOGY_OPERATORS,
};

/** Every domain operator (KO42 excluded), in the order of the §6 table. */
export const OPERATORS: readonly OperatorDef[] = DOMAINS.flatMap((d) => BY_DOMAIN[d]);

const BY_ID: ReadonlyMap<string, OperatorDef> = new Map(OPERATORS.map((op) => [op.id, op]));

export function isDomain(name: unknown): name is Domain {
  return typeof name === 'string' && (DOMAINS as readonly string[]).includes(name);
}

/** A domain operator by id (KO42 is not a domain operator: see KO42). */
export function getOperator(id: string): OperatorDef | undefined {
  return BY_ID.get(id);
}

/** The domain operators of one domain, in table order. */
export function operatorsInDomain(domain: Domain): readonly OperatorDef[] {
  return BY_DOMAIN[domain];
}

/** Ids registered in a domain: KO42 first, then the domain operators. */
export function operatorIdsInDomain(domain: Domain): string[] {
  return [KO42_ID, ...BY_DOMAIN[domain].map((op) => op.id)];
}

// ---- similarity ----

/** Levenshtein distance (insert, delete, substitute, each cost 1). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * Candidates sorted by case-insensitive edit distance to `name`, where a candidate is also measured by its
 * prefix of the same length as `name` (so an abbreviation such as 'thermo' or 'MECH_KIN' finds its target
 * instead of the shortest unrelated word); ties by the full distance, then the candidates' order.
 */
function rankBySimilarity(name: string, candidates: readonly string[]): string[] {
  const target = name.toUpperCase();
  return candidates
    .map((c, index) => {
      const upper = c.toUpperCase();
      const full = editDistance(target, upper);
      const prefix = target.length < upper.length ? editDistance(target, upper.slice(0, target.length)) : full;
      return { c, index, d: Math.min(full, prefix), full };
    })
    .sort((x, y) => x.d - y.d || x.full - y.full || x.index - y.index)
    .map((x) => x.c);
}

/** Up to `limit` of `candidates` nearest to `name` (the ranking of operator ids, for input keys). */
export function similarNames(name: string, candidates: readonly string[], limit: number): string[] {
  return rankBySimilarity(name, candidates).slice(0, limit);
}

/** The recognised domain nearest to `name` by edit distance (case-insensitive; ties in DOMAINS order). */
export function nearestDomain(name: string): Domain {
  return rankBySimilarity(name, DOMAINS)[0] as Domain;
}

/** Up to `limit` ids registered in `domain` (KO42 included), nearest to `name` first. */
export function similarOperators(name: string, domain: Domain, limit = 5): string[] {
  return rankBySimilarity(name, operatorIdsInDomain(domain)).slice(0, limit);
}

/** Up to `limit` ids of the whole registry (KO42 included), nearest to `name` first. */
export function similarOperatorsAnyDomain(name: string, limit = 5): string[] {
  return rankBySimilarity(name, [KO42_ID, ...OPERATORS.map((op) => op.id)]).slice(0, limit);
}

export function invalidDomainError(domain: unknown): ServiceError {
  const shown = typeof domain === 'string' ? `'${domain}'` : domain === undefined ? '(missing)' : JSON.stringify(domain);
  const suggestion = nearestDomain(typeof domain === 'string' ? domain : '');
  return new ServiceError(400, 'SVC_INVALID_DOMAIN', `domain ${shown} is not recognised; did you mean '${suggestion}'? Domains: ${DOMAINS.join(', ')}`, {
    suggestion,
  });
}

// ---- listings ----

export interface OperatorListing {
  id: string;
  domain: Domain | 'all';
  /** Only on KO42: the domains it is registered in (all eight). */
  domains?: Domain[];
  formula: string;
  /** Each input with its unit, default and physical domain. */
  inputs: OperatorInput[];
  unit: string;
  /** The values the result can take (KO42: none, it has no result of its own). */
  result_domain: PhysicalDomain | null;
}

/** An operator's inputs as listed: key, unit, default and physical domain. */
function inputListing(op: OperatorDef): OperatorInput[] {
  return op.inputs.map((i) => ({ key: i.key, unit: i.unit, default: i.default, domain: { ...i.domain } }));
}

function listing(op: OperatorDef): OperatorListing {
  return {
    id: op.id,
    domain: op.domain,
    formula: op.formula,
    inputs: inputListing(op),
    unit: op.unit,
    result_domain: { ...op.result_domain },
  };
}

/** GET /api/operators: KO42 once (domain 'all', domains: all eight), then every domain operator in table order. */
export function listOperators(): OperatorListing[] {
  return [
    { id: KO42_ID, domain: 'all', domains: [...DOMAINS], formula: KO42.formula, inputs: [], unit: KO42.unit, result_domain: null },
    ...OPERATORS.map(listing),
  ];
}

/** GET /api/operators/categories: each domain with its registered ids (KO42 first, as it is registered in every domain). */
export function categories(): { domain: Domain; operators: string[] }[] {
  return DOMAINS.map((domain) => ({ domain, operators: operatorIdsInDomain(domain) }));
}

// ---- POST /api/svc/operator-spec ----

export type OperatorSpecRequest = { operator: string; domain?: string } | { domain: string; operator?: undefined };

export interface OperatorSpecForOperator {
  operator: string;
  domain: Domain | 'all';
  domains?: Domain[];
  formula: string;
  unit: string;
  inputs: OperatorInput[];
  result_domain: PhysicalDomain | null;
  accepted_keys: string[];
}

export interface OperatorSpecForDomain {
  domain: Domain;
  operators: string[];
  /** Every key some operator of the domain reads, in first-use order, with each reader's default. */
  inputs: { key: string; unit: string; operators: { operator: string; default: number; domain: PhysicalDomain }[] }[];
  accepted_keys: string[];
}

/**
 * POST /api/svc/operator-spec: the accepted input keys of one operator ({operator}) or of a domain ({domain}).
 * With both, the operator must be registered in that domain. Unknown domain → 400 SVC_INVALID_DOMAIN
 * (suggestion); unknown operator, or one of another domain → 400 SVC_INVALID_OPERATOR (available_similar);
 * neither given → 400 SVC_INVALID_INPUT.
 */
export function operatorSpec(request: unknown): OperatorSpecForOperator | OperatorSpecForDomain {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new InputError('operator', 'body must be an object with operator or domain', ['operator', 'domain']);
  }
  const body = request as Record<string, unknown>;
  const hasOperator = body.operator !== undefined;
  const hasDomain = body.domain !== undefined;
  if (!hasOperator && !hasDomain) {
    throw new InputError('operator', 'give operator or domain', ['operator', 'domain']);
  }
  let domain: Domain | undefined;
  if (hasDomain) {
    if (!isDomain(body.domain)) throw invalidDomainError(body.domain);
    domain = body.domain;
  }
  if (!hasOperator) return domainSpec(domain!);

  const id = body.operator;
  const name = typeof id === 'string' ? id : JSON.stringify(id);
  if (id === KO42_ID) {
    return {
      operator: KO42_ID,
      domain: domain ?? 'all',
      ...(domain ? {} : { domains: [...DOMAINS] }),
      formula: KO42.formula,
      unit: KO42.unit,
      inputs: [],
      result_domain: null,
      accepted_keys: [],
    };
  }
  const op = typeof id === 'string' ? getOperator(id) : undefined;
  if (!op || (domain && op.domain !== domain)) {
    const message = op
      ? `operator ${name} belongs to domain '${op.domain}', not '${domain}'`
      : `operator ${name} is not registered${domain ? ` in domain '${domain}'` : ''}`;
    throw new ServiceError(400, 'SVC_INVALID_OPERATOR', message, {
      available_similar: domain ? similarOperators(String(name), domain) : similarOperatorsAnyDomain(String(name)),
    });
  }
  return {
    operator: op.id,
    domain: op.domain,
    formula: op.formula,
    unit: op.unit,
    inputs: inputListing(op),
    result_domain: { ...op.result_domain },
    accepted_keys: op.inputs.map((i) => i.key),
  };
}

function domainSpec(domain: Domain): OperatorSpecForDomain {
  const inputs: OperatorSpecForDomain['inputs'] = [];
  const byKey = new Map<string, OperatorSpecForDomain['inputs'][number]>();
  for (const op of BY_DOMAIN[domain]) {
    for (const input of op.inputs) {
      let entry = byKey.get(input.key);
      if (!entry) {
        entry = { key: input.key, unit: input.unit, operators: [] };
        byKey.set(input.key, entry);
        inputs.push(entry);
      }
      entry.operators.push({ operator: op.id, default: input.default, domain: { ...input.domain } });
    }
  }
  return { domain, operators: operatorIdsInDomain(domain), inputs, accepted_keys: inputs.map((i) => i.key) };
}
