// The sat route with its default budgets: a 100-variable, 420-clause instance is accepted (its
// budgets were refused up front with 400 before), and a budget used up during the run is a 500 SVC_SOLVER_ERROR in
// the part-7 shape, with nothing charged as a result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, WITH_WORKERS, zkIdentity, type TestNode } from '../helpers/node.js';
import { WorkerPoolExecutor } from '../../src/compute/executor.js';

/** A satisfiable ("planted") 3-SAT instance: clauses drawn by an LCG, kept when x_v = (v odd) satisfies them. */
function planted(nVars: number, nClauses: number): number[][] {
  let state = 12345;
  const next = (m: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % m;
  };
  const truth = (l: number) => (Math.abs(l) % 2 === 1) === l > 0;
  const clauses: number[][] = [];
  while (clauses.length < nClauses) {
    const vars = new Set<number>();
    while (vars.size < 3) vars.add(1 + next(nVars));
    const clause = [...vars].map((v) => (next(2) === 0 ? v : -v));
    if (clause.some(truth)) clauses.push(clause);
  }
  return clauses;
}

let t: TestNode;
let key: string;

beforeAll(async () => {
  t = await startTestNode(WITH_WORKERS, { initialCredits: 1000 });
  key = (await zkIdentity(t.url, 'sat-budget')).key;
});
afterAll(async () => {
  await t.destroy();
});

describe('POST /api/svc/sat budgets', () => {
  it('accepts a 100-variable, 420-clause instance with the default budgets and seals a checked model', async () => {
    const clauses = planted(100, 420);
    const r = await call(t.url, 'POST', '/api/svc/sat', { clauses }, bearer(key));
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.body.inputs).toMatchObject({ n_vars: 100, n_clauses: 420, method: 'dpll', max_decisions: 1e6, max_flips: 1e5 });
    expect(r.body.value).toBe(1);
    expect(r.body.outputs.status).toBe('SAT');
    // The model satisfies every clause (checked here, independently of the solver's own check).
    const val = new Map<number, boolean>((r.body.outputs.assignment as number[]).map((l) => [Math.abs(l), l > 0]));
    for (const c of clauses) expect(c.some((l) => val.get(Math.abs(l)) === l > 0)).toBe(true);
    // The generated instance of the same size is accepted too (not refused as 400).
    const g = await call(t.url, 'POST', '/api/svc/sat', { n_vars: 100, n_clauses: 420, seed: 1 }, bearer(key));
    expect(g.status, g.text.slice(0, 300)).not.toBe(400);
  });

  it('a decision budget used up during the run is 500 SVC_SOLVER_ERROR with details, and nothing is counted', async () => {
    const usage = async () => (await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(key))).text;
    const before = await usage();
    const r = await call(t.url, 'POST', '/api/svc/sat', { n_vars: 100, n_clauses: 420, max_decisions: 5 }, bearer(key));
    const e = expectError(r, 500, 'SVC_SOLVER_ERROR');
    expect(e.message).toBe('DPLL decision budget exhausted');
    expect(e.details).toEqual({ max_decisions: 5 });
    // Part 7's status_page survives the solver worker thread (this node runs solvers on its pool).
    expect(e.status_page).toBe('/api/health');
    expect((t.node as unknown as { executor: unknown }).executor).toBeInstanceOf(WorkerPoolExecutor);
    expect(await usage()).toBe(before);
    // The same measure moves on a run that completes.
    expect((await call(t.url, 'POST', '/api/svc/sat', { clauses: [[1, 2], [-1]] }, bearer(key))).status).toBe(200);
    expect(await usage()).not.toBe(before);
  });
});
