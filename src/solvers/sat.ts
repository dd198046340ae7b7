// `sat` — 3-SAT (solvers.md §3.11): iterative DPLL (unit propagation, pure literals, DLIS branching) or WalkSAT.
// Check: a SAT answer is re-evaluated clause by clause by a separate evaluator; an UNSAT answer is certified by
// bit-parallel exhaustive enumeration (n_vars ≤ 22), otherwise it cannot be certified.
import { z } from 'zod';
import { rngForInputs, type Xoshiro128 } from './rng.js';
import { InputError, SolverFailure } from './errors.js';
import type { Check, SolverDef, SolverOutput } from './types.js';
import { intIn, makeCheck, parseInputs, refuseCheck, seedSchema } from './util.js';

const MAX_VARS = 1000;
/** Enumeration certifies UNSAT up to this many variables (2^22 assignments, 32 per machine word). */
const MAX_ENUMERATION_VARS = 22;
/**
 * Work of one run, counted as it goes: literal occurrences visited by assignments, undos, break counts and flips
 * (≈ 30 ns each: 1e9 took 29.5 s of DPLL at 1000 variables, so 1e8 keeps a run near 3–4 s). A run that reaches it
 * ends with SolverFailure (500 SVC_SOLVER_ERROR), like one that uses up max_decisions or max_flips; the budgets are
 * not refused up front, since the worst case (budget × all occurrences) is far above what typical instances use.
 */
export const WORK_LIMIT = 1e8;
/** WalkSAT's visits are cheaper (≈ 9 ns: 1e7 flips at 1000 variables spent ~3.4e8 in 3.1 s), so its own budget. */
export const WALKSAT_WORK_LIMIT = 4e8;
const WALKSAT_NOISE = 0.5;

const literal = z
  .number()
  .int()
  .min(-MAX_VARS)
  .max(MAX_VARS)
  .refine((v) => v !== 0, 'literal 0 is not allowed (DIMACS literals are ±1 … ±n_vars)');

const schema = z.strictObject({
  clauses: z.array(z.array(literal).min(1).max(10)).min(1).max(10_000).optional(),
  n_vars: intIn(1, MAX_VARS).optional(),
  n_clauses: intIn(1, 5000).optional(),
  method: z.enum(['dpll', 'walksat']).default('dpll'),
  max_decisions: intIn(1, 1e7).default(1e6),
  max_flips: intIn(1, 1e7).default(1e5),
  seed: seedSchema().optional(),
});

export interface SatInputs extends Record<string, unknown> {
  clauses?: number[][];
  n_vars: number;
  n_clauses: number;
  method: 'dpll' | 'walksat';
  max_decisions: number;
  max_flips: number;
  seed?: number;
}

/** Clauses in compressed form: literals of clause c are lits[start[c] … start[c+1]). */
export interface Cnf {
  nVars: number;
  start: Int32Array;
  lits: Int32Array;
}

/** Literal l (±v) → index 2v (positive) or 2v + 1 (negative). */
const litIndex = (l: number) => (l > 0 ? 2 * l : -2 * l + 1);

/** Drop duplicate literals and tautological clauses (they constrain nothing); keeps clause order. */
export function simplify(clauses: readonly (readonly number[])[], nVars: number): Cnf {
  const start: number[] = [0];
  const lits: number[] = [];
  for (const clause of clauses) {
    const kept: number[] = [];
    let tautology = false;
    for (const l of clause) {
      if (kept.includes(-l)) tautology = true;
      if (!kept.includes(l)) kept.push(l);
    }
    if (tautology) continue;
    lits.push(...kept);
    start.push(lits.length);
  }
  return { nVars, start: Int32Array.from(start), lits: Int32Array.from(lits) };
}

/** Literal → clauses containing it (CSR over literal indices 2 … 2n+1). */
function occurrences(cnf: Cnf): { occStart: Int32Array; occ: Int32Array } {
  const nClauses = cnf.start.length - 1;
  const counts = new Int32Array(2 * cnf.nVars + 3);
  for (let i = 0; i < cnf.lits.length; i++) counts[litIndex(cnf.lits[i]!) + 1]!++;
  const occStart = new Int32Array(2 * cnf.nVars + 3);
  for (let k = 1; k < occStart.length; k++) occStart[k] = occStart[k - 1]! + counts[k]!;
  const fill = occStart.slice();
  const occ = new Int32Array(cnf.lits.length);
  for (let c = 0; c < nClauses; c++) {
    for (let i = cnf.start[c]!; i < cnf.start[c + 1]!; i++) occ[fill[litIndex(cnf.lits[i]!)]!++] = c;
  }
  return { occStart, occ };
}

/** Uniform random 3-SAT: three distinct variables per clause (uniform), fair signs. */
function generateInstance(nVars: number, nClauses: number, rng: Xoshiro128): number[][] {
  const clauses: number[][] = [];
  for (let c = 0; c < nClauses; c++) {
    const vars: number[] = [];
    while (vars.length < 3) {
      const v = 1 + rng.int(nVars);
      if (!vars.includes(v)) vars.push(v);
    }
    clauses.push(vars.map((v) => (rng.uniform() < 0.5 ? -v : v)));
  }
  return clauses;
}

export type Outcome = { status: 'SAT'; model: Int8Array; work: number } | { status: 'UNSAT'; work: number };

/**
 * Iterative DPLL. Assignment values: 1 true, −1 false, 0 open. Per clause: counts of true and of false literals;
 * per literal: in how many open (not yet satisfied) clauses it occurs unassigned — all updated incrementally on
 * assign/undo, so that between decisions the pure literals (assigned without branching) and the most frequent open
 * literal (ties: lowest variable, positive first) come from one pass over the variables. The branch literal is
 * tried true first, then false.
 */
export function dpll(cnf: Cnf, maxDecisions: number, workLimit = WORK_LIMIT): Outcome {
  const search = new DpllSearch(cnf);
  if (!search.assignUnitClauses()) return { status: 'UNSAT', work: 0 };
  for (;;) {
    if (search.allSatisfied()) return { status: 'SAT', model: search.model(), work: search.decisions };
    const best = search.scanOpenLiterals();
    if (search.nPure > 0) {
      search.assignPureLiterals();
      continue;
    }
    if (search.decisions >= maxDecisions) {
      throw new SolverFailure('DPLL decision budget exhausted', { max_decisions: maxDecisions });
    }
    if (search.work > workLimit) {
      throw new SolverFailure('DPLL work budget exhausted', { work_limit: workLimit, work: search.work, decisions: search.decisions });
    }
    if (!search.decide(best)) return { status: 'UNSAT', work: search.decisions };
  }
}

/** The state of one DPLL search and its steps: assign, undo, propagate, backtrack, choose, decide. */
class DpllSearch {
  private readonly nVars: number;
  private readonly nClauses: number;
  private readonly start: Int32Array;
  private readonly lits: Int32Array;
  private readonly occStart: Int32Array;
  private readonly occ: Int32Array;
  private readonly value: Int8Array;
  private readonly nTrue: Int32Array;
  private readonly nFalse: Int32Array;
  private readonly litCount: Int32Array;
  private nSatisfied = 0;
  private readonly trail: Int32Array;
  private trailLen = 0;
  // Decision stack: trail position of each decision and whether its second branch is already taken.
  private readonly decisionPos: number[] = [];
  private readonly decisionFlipped: boolean[] = [];
  /** Pure literals found by the last scanOpenLiterals: pure[0 … nPure). */
  private readonly pure: Int32Array;
  nPure = 0;
  decisions = 0;
  /** Literal occurrences visited so far (the work budget's unit). */
  work = 0;

  constructor(cnf: Cnf) {
    const { nVars, start, lits } = cnf;
    this.nVars = nVars;
    this.nClauses = start.length - 1;
    this.start = start;
    this.lits = lits;
    const { occStart, occ } = occurrences(cnf);
    this.occStart = occStart;
    this.occ = occ;
    this.value = new Int8Array(nVars + 1);
    this.nTrue = new Int32Array(this.nClauses);
    this.nFalse = new Int32Array(this.nClauses);
    this.litCount = new Int32Array(2 * nVars + 2);
    for (let i = 0; i < lits.length; i++) this.litCount[litIndex(lits[i]!)]!++;
    this.trail = new Int32Array(nVars);
    this.pure = new Int32Array(nVars);
  }

  /** Assign literal l true; returns false on a conflict (some clause has all literals false). */
  assign(l: number): boolean {
    const { occStart, occ, nTrue, nFalse, start, lits, value, litCount } = this;
    const pos = litIndex(l);
    for (let k = occStart[pos]!; k < occStart[pos + 1]!; k++) {
      const c = occ[k]!;
      if (nTrue[c]!++ !== 0) continue;
      this.nSatisfied++;
      // c leaves the open set: its unassigned literals (l among them) lose one occurrence.
      for (let i = start[c]!; i < start[c + 1]!; i++) {
        const li = lits[i]!;
        if (value[Math.abs(li)] === 0) litCount[litIndex(li)]!--;
      }
    }
    const neg = pos ^ 1;
    this.work += occStart[pos + 1]! - occStart[pos]! + occStart[neg + 1]! - occStart[neg]!;
    let ok = true;
    for (let k = occStart[neg]!; k < occStart[neg + 1]!; k++) {
      const c = occ[k]!;
      nFalse[c]!++;
      if (nTrue[c] === 0) {
        litCount[neg]!--;
        if (nFalse[c] === start[c + 1]! - start[c]!) ok = false;
      }
    }
    value[Math.abs(l)] = l > 0 ? 1 : -1;
    this.trail[this.trailLen++] = l;
    return ok;
  }

  /** Undo assignments down to trail length `target`. */
  unassignTo(target: number): void {
    const { occStart, occ, nTrue, nFalse, start, lits, value, litCount, trail } = this;
    while (this.trailLen > target) {
      const l = trail[--this.trailLen]!;
      value[Math.abs(l)] = 0;
      const pos = litIndex(l);
      const neg = pos ^ 1;
      this.work += occStart[pos + 1]! - occStart[pos]! + occStart[neg + 1]! - occStart[neg]!;
      for (let k = occStart[neg]!; k < occStart[neg + 1]!; k++) {
        const c = occ[k]!;
        nFalse[c]!--;
        if (nTrue[c] === 0) litCount[neg]!++;
      }
      for (let k = occStart[pos]!; k < occStart[pos + 1]!; k++) {
        const c = occ[k]!;
        if (--nTrue[c]! !== 0) continue;
        this.nSatisfied--;
        for (let i = start[c]!; i < start[c + 1]!; i++) {
          const li = lits[i]!;
          if (value[Math.abs(li)] === 0) litCount[litIndex(li)]!++;
        }
      }
    }
  }

  /** Unit propagation of the trail from position `from` on; false on conflict. */
  propagate(from: number): boolean {
    const { occStart, occ, nTrue, nFalse, start, lits, value, trail } = this;
    let head = from;
    while (head < this.trailLen) {
      const neg = litIndex(trail[head++]!) ^ 1;
      for (let k = occStart[neg]!; k < occStart[neg + 1]!; k++) {
        const c = occ[k]!;
        if (nTrue[c] !== 0) continue;
        const open = start[c + 1]! - start[c]! - nFalse[c]!;
        if (open === 0) return false;
        if (open === 1) {
          let unit = 0;
          for (let i = start[c]!; i < start[c + 1]!; i++) {
            if (value[Math.abs(lits[i]!)] === 0) {
              unit = lits[i]!;
              break;
            }
          }
          if (!this.assign(unit)) return false;
        }
      }
    }
    return true;
  }

  /** Undo to the last decision with an untried branch and take it; false when none is left (UNSAT). */
  backtrack(): boolean {
    const { decisionPos, decisionFlipped } = this;
    for (;;) {
      const d = decisionPos.length - 1;
      if (d < 0) return false;
      const pos = decisionPos[d]!;
      const lit = this.trail[pos]!;
      this.unassignTo(pos);
      if (!decisionFlipped[d]) {
        decisionFlipped[d] = true;
        // The second branch stays at this level: undone with it if it fails too.
        if (this.assign(-lit) && this.propagate(pos)) return true;
        continue;
      }
      decisionPos.pop();
      decisionFlipped.pop();
    }
  }

  /** Level 0: unit clauses and their consequences; false when they conflict (UNSAT). */
  assignUnitClauses(): boolean {
    const { start, lits, value } = this;
    for (let c = 0; c < this.nClauses; c++) {
      if (start[c + 1]! - start[c]! !== 1) continue;
      const l = lits[start[c]!]!;
      const v = value[Math.abs(l)]!;
      if (v === 0) {
        const from = this.trailLen;
        if (!(this.assign(l) && this.propagate(from))) return false;
      } else if (v !== (l > 0 ? 1 : -1)) {
        return false;
      }
    }
    return true;
  }

  allSatisfied(): boolean {
    return this.nSatisfied === this.nClauses;
  }

  /** The satisfying assignment (open variables false). */
  model(): Int8Array {
    const model = new Int8Array(this.nVars + 1);
    for (let v = 1; v <= this.nVars; v++) model[v] = this.value[v] === 0 ? -1 : this.value[v]!;
    return model;
  }

  /** Pure literals (into pure[0 … nPure)) and the most frequent open literal (returned), in one pass. */
  scanOpenLiterals(): number {
    const { value, litCount, pure } = this;
    let nPure = 0;
    let best = 0;
    let bestCount = 0;
    for (let v = 1; v <= this.nVars; v++) {
      if (value[v] !== 0) continue;
      const p = litCount[2 * v]!;
      const n = litCount[2 * v + 1]!;
      if (p > 0 && n === 0) pure[nPure++] = v;
      else if (n > 0 && p === 0) pure[nPure++] = -v;
      if (p > bestCount) {
        bestCount = p;
        best = v;
      }
      if (n > bestCount) {
        bestCount = n;
        best = -v;
      }
    }
    this.nPure = nPure;
    return best;
  }

  /** Pure literals only satisfy clauses: they cannot cause a conflict. */
  assignPureLiterals(): void {
    for (let i = 0; i < this.nPure; i++) this.assign(this.pure[i]!);
  }

  /** Branch on `lit` (true first); on conflict backtrack. False when the search space is used up (UNSAT). */
  decide(lit: number): boolean {
    this.decisions++;
    this.decisionPos.push(this.trailLen);
    this.decisionFlipped.push(false);
    const from = this.trailLen;
    return (this.assign(lit) && this.propagate(from)) || this.backtrack();
  }
}

/**
 * WalkSAT with noise p: pick a random unsatisfied clause; flip a variable with zero break count if there is one,
 * otherwise with probability p a random variable of the clause, else the one with the smallest break count
 * (first in clause order). Random start assignment. Cannot prove UNSAT.
 */
export function walksat(cnf: Cnf, maxFlips: number, rng: Xoshiro128, workLimit = WORK_LIMIT): Outcome {
  const { nVars, start, lits } = cnf;
  const nClauses = start.length - 1;
  const { occStart, occ } = occurrences(cnf);
  const value = new Int8Array(nVars + 1);
  for (let v = 1; v <= nVars; v++) value[v] = rng.uniform() < 0.5 ? 1 : -1;
  const isTrue = (l: number) => (l > 0 ? value[l] === 1 : value[-l] === -1);
  const nTrue = new Int32Array(nClauses);
  const unsat = new Int32Array(nClauses);
  const unsatPos = new Int32Array(nClauses).fill(-1);
  let nUnsat = 0;
  const addUnsat = (c: number) => {
    unsatPos[c] = nUnsat;
    unsat[nUnsat++] = c;
  };
  const removeUnsat = (c: number) => {
    const p = unsatPos[c]!;
    const last = unsat[--nUnsat]!;
    unsat[p] = last;
    unsatPos[last] = p;
    unsatPos[c] = -1;
  };
  for (let c = 0; c < nClauses; c++) {
    for (let i = start[c]!; i < start[c + 1]!; i++) if (isTrue(lits[i]!)) nTrue[c]!++;
    if (nTrue[c] === 0) addUnsat(c);
  }
  /** Clauses that become unsatisfied when v flips: those where v's true literal is the only true one. */
  let work = 0;
  const breakCount = (v: number) => {
    const p = litIndex(value[v] === 1 ? v : -v);
    work += occStart[p + 1]! - occStart[p]!;
    let b = 0;
    for (let k = occStart[p]!; k < occStart[p + 1]!; k++) if (nTrue[occ[k]!] === 1) b++;
    return b;
  };
  const flip = (v: number) => {
    const oldTrue = litIndex(value[v] === 1 ? v : -v);
    const newTrue = oldTrue ^ 1;
    work += occStart[oldTrue + 1]! - occStart[oldTrue]! + occStart[newTrue + 1]! - occStart[newTrue]!;
    value[v] = value[v] === 1 ? -1 : 1;
    for (let k = occStart[newTrue]!; k < occStart[newTrue + 1]!; k++) {
      const c = occ[k]!;
      if (nTrue[c]!++ === 0) removeUnsat(c);
    }
    for (let k = occStart[oldTrue]!; k < occStart[oldTrue + 1]!; k++) {
      const c = occ[k]!;
      if (--nTrue[c]! === 0) addUnsat(c);
    }
  };

  let flips = 0;
  while (nUnsat > 0) {
    if (flips >= maxFlips) {
      throw new SolverFailure('WalkSAT flip budget exhausted (instance may be unsatisfiable)', { max_flips: maxFlips });
    }
    if (work > workLimit) {
      throw new SolverFailure('WalkSAT work budget exhausted', { work_limit: workLimit, work, flips });
    }
    const c = unsat[rng.int(nUnsat)]!;
    let chosen = 0;
    let bestBreak = Number.POSITIVE_INFINITY;
    for (let i = start[c]!; i < start[c + 1]!; i++) {
      const v = Math.abs(lits[i]!);
      const b = breakCount(v);
      if (b < bestBreak) {
        bestBreak = b;
        chosen = v;
      }
    }
    if (bestBreak > 0 && rng.uniform() < WALKSAT_NOISE) {
      chosen = Math.abs(lits[start[c]! + rng.int(start[c + 1]! - start[c]!)]!);
    }
    flip(chosen);
    flips++;
  }
  return { status: 'SAT', model: value, work: flips };
}

/** Separate evaluator for the check: fraction of the original clauses satisfied by the assignment. */
function satisfiedFraction(clauses: readonly (readonly number[])[], assignment: readonly number[]): number {
  const truth = new Map<number, boolean>();
  for (const l of assignment) truth.set(Math.abs(l), l > 0);
  let satisfied = 0;
  for (const clause of clauses) {
    if (clause.some((l) => truth.get(Math.abs(l)) === l > 0)) satisfied++;
  }
  return satisfied / clauses.length;
}

/**
 * Number of satisfying assignments by exhaustive enumeration, 32 at a time: variables 1 … 5 vary across the bits of
 * a 32-bit word, variables 6 … n across the word index w. Per clause, the literals on variables 6 … n are true for
 * the whole word or for none of it (two index masks), and those on variables 1 … 5 give one fixed bit mask.
 * Clauses are tried shortest first so that words die early.
 */
export function countModels(clauses: readonly (readonly number[])[], nVars: number): number {
  if (nVars > 30) throw new RangeError('countModels: at most 30 variables');
  const inWord = [0xaaaaaaaa | 0, 0xcccccccc | 0, 0xf0f0f0f0 | 0, 0xff00ff00 | 0, 0xffff0000 | 0];
  const lowVars = Math.min(nVars, 5);
  const validMask = lowVars === 5 ? -1 : 2 ** (2 ** lowVars) - 1;
  const words = 2 ** Math.max(nVars - 5, 0);
  const ordered = [...clauses].sort((p, q) => p.length - q.length);
  const m = ordered.length;
  const lowMask = new Int32Array(m);
  const highPos = new Int32Array(m);
  const highNeg = new Int32Array(m);
  for (let c = 0; c < m; c++) {
    for (const l of ordered[c]!) {
      const v = Math.abs(l);
      if (v <= 5) lowMask[c]! |= l > 0 ? inWord[v - 1]! : ~inWord[v - 1]!;
      else if (l > 0) highPos[c]! |= 1 << (v - 6);
      else highNeg[c]! |= 1 << (v - 6);
    }
  }
  let count = 0;
  for (let w = 0; w < words; w++) {
    const notW = ~w;
    let alive = validMask;
    for (let c = 0; c < m; c++) {
      if ((w & highPos[c]!) !== 0 || (notW & highNeg[c]!) !== 0) continue; // clause true on the whole word
      alive &= lowMask[c]!;
      if (alive === 0) break;
    }
    for (let x = alive; x !== 0; x &= x - 1) count++;
  }
  return count;
}

export const sat: SolverDef<SatInputs> = {
  id: 'sat',
  kind: '3-SAT',
  endpoint: '/api/svc/sat',
  catalogue: true,
  modes: ['dpll', 'walksat'],
  stateful: false,
  inputs: [
    { key: 'clauses', unit: '—', default: 'generated', range: '≤ 10000 clauses, each 1 … 10 literals ±(1 … n_vars)' },
    { key: 'n_vars', unit: '1', default: '50 (or max |literal|)', range: '1 … 1000 (≥ 3 for generated instances)' },
    { key: 'n_clauses', unit: '1', default: 200, range: '1 … 5000 (generated instances)' },
    { key: 'method', unit: '—', default: 'dpll', range: 'dpll, walksat' },
    { key: 'max_decisions', unit: '1', default: 1e6, range: '1 … 1e7 (a run also ends after 1e8 literal visits)' },
    { key: 'max_flips', unit: '1', default: 1e5, range: '1 … 1e7 (a run also ends after 4e8 literal visits)' },
    { key: 'seed', unit: '1', default: 'from inputs', range: 'integer 0 … 2^53−1' },
  ],

  schema,
  resolve(raw: unknown): SatInputs {
    const p = parseInputs(schema, raw);
    let resolved: SatInputs;
    if (p.clauses) {
      let maxVar = 0;
      for (const clause of p.clauses) for (const l of clause) maxVar = Math.max(maxVar, Math.abs(l));
      const nVars = p.n_vars ?? maxVar;
      if (maxVar > nVars) throw new InputError('clauses', `literal ±${maxVar} exceeds n_vars = ${nVars}`, { max: nVars });
      if (p.n_clauses !== undefined && p.n_clauses !== p.clauses.length) {
        throw new InputError('n_clauses', 'n_clauses must equal the number of clauses given', p.clauses.length);
      }
      resolved = { clauses: p.clauses, n_vars: nVars, n_clauses: p.clauses.length, method: p.method, max_decisions: p.max_decisions, max_flips: p.max_flips };
    } else {
      const nVars = p.n_vars ?? 50;
      if (nVars < 3) throw new InputError('n_vars', 'generated 3-SAT needs at least 3 variables', { min: 3 });
      resolved = { n_vars: nVars, n_clauses: p.n_clauses ?? 200, method: p.method, max_decisions: p.max_decisions, max_flips: p.max_flips };
    }
    if (p.seed !== undefined) resolved.seed = p.seed;
    return resolved;
  },

  run(inputs: SatInputs): SolverOutput {
    const rng = rngForInputs(inputs);
    const generated = inputs.clauses === undefined;
    const clauses = inputs.clauses ?? generateInstance(inputs.n_vars, inputs.n_clauses, rng);
    const cnf = simplify(clauses, inputs.n_vars);
    const outcome = inputs.method === 'dpll' ? dpll(cnf, inputs.max_decisions) : walksat(cnf, inputs.max_flips, rng, WALKSAT_WORK_LIMIT);

    let check: Check;
    let assignment: number[] = [];
    if (outcome.status === 'SAT') {
      for (let v = 1; v <= inputs.n_vars; v++) assignment.push(outcome.model[v] === 1 ? v : -v);
      check = makeCheck('clause re-evaluation', 'satisfied clause fraction', satisfiedFraction(clauses, assignment), 1);
    } else if (inputs.n_vars <= MAX_ENUMERATION_VARS) {
      // Claimed model count 0, compared as (count + 1) so that a single missed model is a 100 % disagreement.
      const models = countModels(clauses, inputs.n_vars);
      check = makeCheck('exhaustive enumeration', 'model count + 1', 1, models + 1);
    } else {
      assignment = [];
      check = refuseCheck(
        makeCheck('exhaustive enumeration', 'enumerated fraction of the assignment space', 0, 1),
        `UNSAT cannot be certified for n_vars > ${MAX_ENUMERATION_VARS}`,
      );
    }

    const outputs: Record<string, unknown> = {
      status: outcome.status,
      assignment,
      n_vars: inputs.n_vars,
      n_clauses: clauses.length,
    };
    if (inputs.method === 'dpll') outputs.decisions = outcome.work;
    else outputs.flips = outcome.work;
    if (generated) outputs.clauses = clauses;
    return {
      mode: inputs.method,
      value: outcome.status === 'SAT' ? 1 : 0,
      unit: '1',
      output_class: 'scalar',
      rule8: null,
      rule8_array: null,
      outputs,
      check,
    };
  },
};
