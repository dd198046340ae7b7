// POST /api/svc/auto end to end, and a stateful solver continued through its own endpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
let key: string;
beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: 10_000 });
  key = (await zkIdentity(t.url, 'auto')).key;
});
afterAll(async () => t.destroy());

describe('POST /api/svc/auto', () => {
  it('routes a question in words to a solver and returns its sealed, checked result', async () => {
    const r = await call(
      t.url,
      'POST',
      '/api/svc/auto',
      { query: 'How long does an astronaut falling into a black hole from rest take to reach the horizon?', constants: { r0_rs: 20, colour: 'blue' } },
      bearer(key),
    );
    expect(r.status, r.text).toBe(200);
    expect(r.body.solver).toBe('blackhole');
    expect(r.body.matched).toContain('black hole');
    expect(r.body.ignored_constants).toEqual(['colour']);
    expect(r.body.confidence).toBeGreaterThan(0.5);
    expect(r.body.confidence).toBeLessThanOrEqual(1);
    const res = r.body.result;
    expect(res.solver).toBe('blackhole');
    expect(res.inputs.r0_rs).toBe(20);
    // Proper time of radial infall from rest at r0 to the horizon: τ = √(r0³/8GM)(η + sin η), η = arccos(2r/r0 − 1).
    const G = 6.6743e-11;
    const M = 1.98847e31;
    const rs = (2 * G * M) / 299792458 ** 2;
    const r0 = 20 * rs;
    const eta = Math.acos((2 * rs) / r0 - 1);
    expect(res.value).toBeCloseTo(Math.sqrt(r0 ** 3 / (8 * G * M)) * (eta + Math.sin(eta)), 6);
    expect(res.tally_charge.cost).toBe(10);
    expect((await call(t.url, 'POST', '/api/svc/verify', res, bearer(key))).body.valid).toBe(true);
  });

  it('a question about nothing it knows is 400 SVC_INVALID_DOMAIN with the 19 routable ids and examples', async () => {
    const e = expectError(
      await call(t.url, 'POST', '/api/svc/auto', { query: 'What should I cook for dinner tonight?' }, bearer(key)),
      400,
      'SVC_INVALID_DOMAIN',
    );
    expect(e.suggestion).toHaveLength(19);
    expect(e.suggestion[0]).toEqual({ solver: 'blackhole', example: expect.any(String) });
  });

  it("accepted constants are validated as on the solver's own route", async () => {
    const e = expectError(
      await call(t.url, 'POST', '/api/svc/auto', { query: 'price a European call option', constants: { volatility: -1 } }, bearer(key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(e.field).toBe('volatility');
    expectError(await call(t.url, 'POST', '/api/svc/auto', { query: '' }, bearer(key)), 400, 'SVC_INVALID_INPUT');
  });

  it('numbers in the query are not parsed: the defaults apply', async () => {
    const r = await call(t.url, 'POST', '/api/svc/auto', { query: 'the 1000th nontrivial zero of the zeta function' }, bearer(key));
    expect(r.body.solver).toBe('zeta');
    expect(r.body.result.inputs.n).toBe(1);
    expect(r.body.result.value).toBeCloseTo(14.134725141734693, 9);
  });
});

describe('stateful solvers over HTTP', () => {
  it('lorenz: two half runs fed through initialState equal one whole run, bit for bit', async () => {
    const whole = await call(t.url, 'POST', '/api/svc/lorenz', { t_end: 2 }, bearer(key));
    const half = await call(t.url, 'POST', '/api/svc/lorenz', { t_end: 1 }, bearer(key));
    expect(half.body.state).toBeTruthy();
    const rest = await call(t.url, 'POST', '/api/svc/lorenz', { t_end: 1, initialState: half.body.state }, bearer(key));
    expect(rest.status, rest.text).toBe(200);
    expect(Object.is(rest.body.value, whole.body.value)).toBe(true);
    expect(rest.body.state).toEqual(whole.body.state);
    // /solve takes the same initialState.
    const viaSolve = await call(t.url, 'POST', '/api/svc/solve', { solver: 'lorenz', inputs: { t_end: 1 }, initialState: half.body.state }, bearer(key));
    expect(Object.is(viaSolve.body.value, whole.body.value)).toBe(true);
  });

  it('initialState on a stateless solver, or a malformed state, is 400 naming initialState', async () => {
    const a = expectError(await call(t.url, 'POST', '/api/svc/heat', { initialState: { x: 1 } }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(a.field).toBe('initialState');
    const b = expectError(await call(t.url, 'POST', '/api/svc/lorenz', { initialState: { x: 'one' } }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(String(b.field)).toMatch(/^initialState/);
  });
});
