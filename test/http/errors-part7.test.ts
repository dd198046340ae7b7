// Part 7 codes as the node renders them: SVC_SOLVER_ERROR with its listed fields (details, trace_id, status_page),
// the retryable codes' advice, the error catalogue documentation_url points into, the one 422 constructor, and the
// chain's 404 under the project's SVC_NOT_FOUND.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { ChainService } from '../../src/chain/service.js';
import { InputError, ServiceError, SolverFailure } from '../../src/kernel/errors.js';
import { toleranceGateError } from '../../src/kernel/gate.js';
import { timeoutError } from '../../src/compute/executor.js';
import { Store } from '../../src/store/db.js';
import * as solverErrors from '../../src/solvers/errors.js';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../src/kernel/error-catalogue.js';

// No catalogue input is meant to reach a SolverFailure any more (the ranges refuse them with 400), so the shape
// of SVC_SOLVER_ERROR is exercised with heat whose run fails as a non-converging method would.
const registry = defaultRegistry();
const failing = {
  ...registry.get('heat')!,
  id: 'heat_not_converging',
  endpoint: null,
  run: () => {
    throw new SolverFailure('did not converge', { iterations: 50 });
  },
};
/** A run that takes longer than the time limit of the node that runs it below. */
const slow = {
  ...registry.get('heat')!,
  id: 'heat_slow',
  endpoint: null,
  run: (inputs: Record<string, unknown>, state: unknown) => {
    for (const end = Date.now() + 120; Date.now() < end;);
    return registry.get('heat')!.run(inputs, state);
  },
};

let t: TestNode;
let key: string;

beforeAll(async () => {
  t = await startTestNode({}, { registry: registry.with([failing]), initialCredits: 1000 });
  key = (await zkIdentity(t.url, 'part7-errors')).key;
});
afterAll(async () => {
  await t.destroy();
});

describe('SVC_SOLVER_ERROR', () => {
  it('carries details, trace_id and status_page (part 7), and the status page answers', async () => {
    const r = await call(t.url, 'POST', '/api/svc/solve', { solver: 'heat_not_converging', inputs: {} }, bearer(key));
    const e = expectError(r, 500, 'SVC_SOLVER_ERROR');
    expect(e.details).toEqual({ iterations: 50 });
    expect(e.trace_id).toBe(r.headers.get('x-trace-id'));
    expect(e.status_page).toBe('/api/health');
    expect((await call(t.url, 'GET', e.status_page)).status).toBe(200);
  });

  it('is retryable (part 7) with retry_after_seconds in the body; no Retry-After header on a 500', async () => {
    const r = await call(t.url, 'POST', '/api/svc/solve', { solver: 'heat_not_converging', inputs: {} }, bearer(key));
    const e = expectError(r, 500, 'SVC_SOLVER_ERROR');
    expect(e.retryable).toBe(true);
    expect(e.retry_after_seconds).toBe(1);
    expect(r.headers.get('retry-after')).toBeNull();
  });

  it('is the one SolverFailure, also as solvers/ import it', () => {
    expect(solverErrors.SolverFailure).toBe(SolverFailure);
    expect(solverErrors.InputError).toBe(InputError);
    const f = new SolverFailure('did not converge', { iterations: 50 });
    expect({ status: f.status, code: f.code, extra: f.extra, details: f.details }).toEqual({
      status: 500,
      code: 'SVC_SOLVER_ERROR',
      extra: { details: { iterations: 50 }, status_page: '/api/health' },
      details: { iterations: 50 },
    });
  });
});

describe('SVC_TIMEOUT', () => {
  it('is retryable with retry_after_seconds beside the limit and the elapsed time; nothing sealed', async () => {
    const n = await startTestNode({}, { registry: registry.with([slow]), initialCredits: 1000, timeLimitSeconds: 0.05 });
    try {
      const id = await zkIdentity(n.url, 'part7-timeout');
      const r = await call(n.url, 'POST', '/api/svc/solve', { solver: 'heat_slow', inputs: {} }, bearer(id.key));
      const e = expectError(r, 500, 'SVC_TIMEOUT');
      expect(e.time_limit_seconds).toBe(0.05);
      expect(e.elapsed_seconds).toBeGreaterThan(0.05);
      expect(e.retryable).toBe(true);
      expect(e.retry_after_seconds).toBe(1);
      expect(r.headers.get('retry-after')).toBeNull();
      expect((await call(n.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key))).body.total).toBe(0);
    } finally {
      await n.destroy();
    }
  });

  it('a run that waited for a worker most of its time: retry after about that wait', () => {
    expect(timeoutError(2, 2.2, 'free', { queuedSeconds: 1.7, runSeconds: 0.5 }).extra.retry_after_seconds).toBe(2);
    expect(timeoutError(2, 2.2, 'free', { queuedSeconds: 0.2, runSeconds: 2 }).extra.retry_after_seconds).toBe(1);
  });
});

describe('codes that are not retryable', () => {
  it('carry neither retryable nor retry_after_seconds', async () => {
    const e = expectError(
      await call(t.url, 'POST', '/api/svc/compute', { domain: 'astrology', operators: ['KO42'], inputs: {} }, bearer(key)),
      400,
      'SVC_INVALID_DOMAIN',
    );
    expect(e.retryable).toBeUndefined();
    expect(e.retry_after_seconds).toBeUndefined();
  });
});

describe('the error catalogue', () => {
  it('has one entry per code of the closed union in kernel/errors.ts, each with a status and a meaning', () => {
    const source = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'kernel', 'errors.ts'), 'utf8');
    const union = source.slice(source.indexOf('export type ErrorCode'), source.indexOf("';\n", source.indexOf('export type ErrorCode')) + 1);
    const codes = [...union.matchAll(/\|\s*'([A-Z_]+)'/g)].map((m) => m[1]);
    expect(codes.length).toBeGreaterThan(40);
    expect([...ERROR_CODES].sort()).toEqual([...codes].sort());
    for (const code of ERROR_CODES) {
      const entry = ERROR_CATALOGUE[code];
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      expect(entry.meaning.length, code).toBeGreaterThan(10);
    }
  });

  it('documentation_url points at the node’s own catalogue, at an anchor that names the code, its status and meaning', async () => {
    const r = await call(t.url, 'GET', '/api/tally/balance');
    const e = expectError(r, 401, 'SVC_NO_KEY');
    expect(e.documentation_url).toBe('/api/errors#svc_no_key');
    expect(e.docs_url).toBe('/api/errors#svc_no_key');
    const page = await fetch(new URL(e.documentation_url, `${t.url}/api/tally/balance`));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    for (const code of ERROR_CODES) {
      const section = new RegExp(
        `<section id="${code.toLowerCase()}"><h2><a href="#${code.toLowerCase()}">${code}</a></h2><p>HTTP ${ERROR_CATALOGUE[code].status}\\b`,
      );
      expect(html, code).toMatch(section);
    }
    expect(html).toContain('retryable');
    expect(html).not.toContain('svc.local');
  });

  it('answers JSON to a client that asks for it, and the OpenAPI document lists the route', async () => {
    const r = await call(t.url, 'GET', '/api/errors', undefined, { accept: 'application/json' });
    expect(r.status).toBe(200);
    expect(r.body.count).toBe(ERROR_CODES.length);
    const timeout = r.body.errors.find((x: { code: string }) => x.code === 'SVC_TIMEOUT');
    expect(timeout).toMatchObject({ code: 'SVC_TIMEOUT', anchor: 'svc_timeout', status: 500, origin: 'part 7', retryable: true, retryAfterSeconds: 1 });
    expect(r.body.errors.find((x: { code: string }) => x.code === 'SVC_INVALID_INPUT')).toMatchObject({ status: 400, retryable: false });
    const doc = await call(t.url, 'GET', '/api/openapi.json');
    expect(Object.keys(doc.body.paths['/api/errors'])).toContain('get');
  });
});

describe('the 422 of the tolerance gate', () => {
  it('closed form: code, rel_error and the reason', () => {
    const e = toleranceGateError({ passed: false, rel_error: 0.5, reason: 'tick average does not recover S' });
    expect(e).toBeInstanceOf(ServiceError);
    expect({ status: e.status, code: e.code, message: e.message, extra: e.extra, details: e.details }).toEqual({
      status: 422,
      code: 'SVC_TOLERANCE_GATE',
      message: 'tolerance gate failed: tick average does not recover S',
      extra: { rel_error: 0.5 },
      details: { reason: 'tick average does not recover S' },
    });
  });

  it('solver: names the solver and carries its check with the recomputed rel_error, marked not passed', () => {
    const check = { name: 'energy', quantity: 'E', computed: 1.01, reference: 1, rel_error: 0, tolerance: 1e-3, passed: true };
    const e = toleranceGateError({ passed: false, rel_error: 0.01, reason: 'energy: relative error 1.000e-2 exceeds 0.001' }, { id: 'heat', check });
    expect(e.status).toBe(422);
    expect(e.code).toBe('SVC_TOLERANCE_GATE');
    expect(e.extra).toEqual({ rel_error: 0.01, solver: 'heat' });
    expect(e.details).toEqual({ check: { ...check, rel_error: 0.01, passed: false }, reason: 'energy: relative error 1.000e-2 exceeds 0.001' });
  });
  it('unsealable output: names the solver and says the check cannot pass, with the reason', () => {
    const e = toleranceGateError({ passed: false, rel_error: 0, reason: 'outputs.u: not a finite number' }, { id: 'heat', unsealable: true });
    expect({ status: e.status, code: e.code, message: e.message, extra: e.extra, details: e.details }).toEqual({
      status: 422,
      code: 'SVC_TOLERANCE_GATE',
      message: 'reality check cannot pass: outputs.u: not a finite number',
      extra: { rel_error: 0, solver: 'heat' },
      details: { reason: 'outputs.u: not a finite number' },
    });
  });

  it('is built by toleranceGateError only: no other file of src makes a 422 or a SVC_TOLERANCE_GATE error', () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const found: string[] = [];
    for (const file of files(src)) {
      const rel = relative(src, file);
      if (rel === join('kernel', 'gate.ts')) continue;
      const text = readFileSync(file, 'utf8');
      // A ServiceError (or a subclass) constructed with 422 or with the gate's code.
      for (const m of text.matchAll(/new [A-Za-z]*Error\(\s*(422\b|[^)]*'SVC_TOLERANCE_GATE')/g)) found.push(`${rel}: ${m[0].slice(0, 60)}`);
    }
    expect(found).toEqual([]);
  });
});

describe('ChainService.validate of an unknown machine', () => {
  it('is 404 SVC_NOT_FOUND (not the stray NOT_FOUND)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-chain-'));
    const store = await Store.open(join(dir, 'db'), { sync: false });
    try {
      const err = await new ChainService(store).validate('no-such-machine').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect({ status: (err as ServiceError).status, code: (err as ServiceError).code }).toEqual({ status: 404, code: 'SVC_NOT_FOUND' });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
