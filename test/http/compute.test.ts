// POST /api/svc/compute, verify, prove, shift, lattice, playground against a real node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, WITH_WORKERS, zkIdentity, type TestNode } from '../helpers/node.js';
import { TICK_NS } from '../../src/kernel/clock.js';

let t: TestNode;
let key: string;
let zid: string;

beforeAll(async () => {
  t = await startTestNode(WITH_WORKERS);
  ({ key, zid } = await zkIdentity(t.url, 'compute-suite'));
});
afterAll(async () => t.destroy());

const ke = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

describe('POST /api/svc/compute', () => {
  it('returns every field of spec 2.2 with the closed-form value', async () => {
    const r = await call(t.url, 'POST', '/api/svc/compute', ke, bearer(key));
    expect(r.status).toBe(200);
    const b = r.body;
    expect(b.value).toBe(9); // ½·2·3² exactly
    expect(b.unit).toBe('J');
    // uncertainty: the interval bound on |S − exact ½mv²| (rounding only: no measured constant in the formula).
    expect(b.uncertainty).toBeGreaterThan(0);
    expect(b.uncertainty).toBeLessThan(9e-14);
    expect(b.uncertainty_basis).toMatch(/^interval arithmetic: /);
    expect(b.operator_id).toBe('MECH_KINETIC_ENERGY');
    expect(b.equations[0]).toMatch(
      /^KO42: R\(t\) = S\(t\)\[1 \+ 0\.001·sin\(2π·1\.287·t \+ 0\)\] = S·1\.\d{6}|^KO42: R\(t\) = S\(t\)\[1 \+ 0\.001·sin\(2π·1\.287·t \+ 0\)\] = S·0\.\d{6}/,
    );
    expect(b.equations[0]).toContain(`svcond ${b.svcond}`);
    expect(b.equations[1]).toContain('9 J');
    expect(b.master_sum.terms).toEqual([
      { operator: 'KO42', value: b.R_t, unit: '1' },
      { operator: 'MECH_KINETIC_ENERGY', value: 9, unit: 'J' },
    ]);
    expect(b.master_sum.total).toBe(9);
    expect(b.master_sum.unit).toBe('J');
    expect(typeof b.masterEquation).toBe('string');
    expect(Math.abs(b.R_t - 1)).toBeLessThanOrEqual(1e-3);
    expect(b.phase).toBeGreaterThanOrEqual(0);
    expect(b.phase).toBeLessThan(1);
    expect(Number.isInteger(b.svcond)).toBe(true);
    // svcond is floor(unix_ns / T) and phase the position inside the tick.
    expect(BigInt(b.unix_ns) / TICK_NS).toBe(BigInt(b.svcond));
    expect(b.svcProof).toMatch(/^[0-9a-f]{64}$/);
    // R_t = 1 + 1e-3 sin(2π phase).
    expect(b.R_t).toBeCloseTo(1 + 1e-3 * Math.sin(2 * Math.PI * b.phase), 12);
    // Rule 8: scalar result → field terms null.
    expect(b.master_equation).toBeNull();
    expect(b.functional_equation).toBeNull();
    expect(b.spectral_propagator).toBeNull();
    // Rule 9: the CKO.
    expect(Object.keys(b.cko).sort()).toEqual(['R_t', 'masterSum', 'metric_shift', 'operatorChain', 'phase', 'precisionBound', 'svcProof', 'svcond'].sort());
    expect(b.cko.operatorChain).toEqual(['KO42', 'MECH_KINETIC_ENERGY']);
    expect(b.cko.svcProof).toBe(b.svcProof);
    expect(b.cko.precisionBound).toBe(1e-4);
    expect(b.cko.metric_shift.threshold).toBe(0.0091);
    // Seven protocol steps, all passed.
    expect(b.protocol.map((s: { step: number }) => s.step)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(b.protocol.every((s: { passed: boolean }) => s.passed)).toBe(true);
    // Steps 3, 5 and 6 say what they checked.
    expect(b.protocol[2].detail).toBe(
      'every operator of mechanics: inputs and result within their physical domains; dimensional analysis: MECH_KINETIC_ENERGY m^2*kg*s^-2 = J',
    );
    expect(b.protocol[4].detail).toContain('total = S of MECH_KINETIC_ENERGY (9 J)');
    expect(b.protocol[5].detail).toMatch(/^S = 9 J; independent interval evaluation of each formula: MECH_KINETIC_ENERGY in \[/);
    // Tick receipt and average.
    expect(b.svcond_receipt).toMatchObject({ pulse_hz: 1.287, tick_period_s: 0.777000777, zeqond_ns: 777000777, svcond: b.svcond });
    expect(b.svcond_receipt.hmac).toMatch(/^[0-9a-f]{64}$/);
    expect(b.svcond_receipt.fields).toEqual({}); // bare J maps to no continuum field
    expect(Math.abs(b.svcond_averaged.value - 9) / 9).toBeLessThan(1e-12);
    // Charge: 1 domain operator → 1 credit, 80/20 split in integers.
    expect(b.tally_charge).toEqual({
      action: 'compute',
      cost: 1,
      charged: 1,
      burned: 1,
      foundation: 0,
      funded_by: 'free',
      balance_after: { free: 127, paid: 0 },
    });
    expect(b.envelope).toMatchObject({ face_value: 1, folder: 'inbox', funding: 'free', soulbound: true, tick: b.svcond });
    expect(b.envelope.token_id).toMatch(/^env_[0-9a-f]{24}$/);
    expect(b.result_id).toMatch(new RegExp(`^res_${b.svcond}_[0-9a-f]{16}$`));
    expect(b.audit.seq).toBeGreaterThanOrEqual(1);
  });

  it('maps result units to receipt continuum fields (Pa → pressure)', async () => {
    const r = await call(t.url, 'POST', '/api/svc/compute', { domain: 'fluids', operators: ['KO42', 'FLUID_HYDROSTATIC_PRESSURE'], inputs: {} }, bearer(key));
    expect(r.status).toBe(200);
    expect(r.body.value).toBeCloseTo(101325 + 1000 * 9.80665 * 10, 9);
    expect(r.body.svcond_receipt.fields).toEqual({ pressure: { value: r.body.value, unit: 'Pa' } });
  });

  it('is deterministic: the same request twice gives identical value bits and a new stamp and proof', async () => {
    const req = { domain: 'relativity', operators: ['KO42', 'REL_LORENTZ_FACTOR', 'REL_REST_ENERGY'], inputs: { velocity_m_s: 2.5e8, mass_kg: 0.3 } };
    const a = await call(t.url, 'POST', '/api/svc/compute', req, bearer(key));
    await new Promise((r) => setTimeout(r, 5));
    const b = await call(t.url, 'POST', '/api/svc/compute', req, bearer(key));
    expect(Object.is(a.body.value, b.body.value)).toBe(true);
    expect(a.body.value).toBeCloseTo(1 / Math.sqrt(1 - (2.5e8 / 299792458) ** 2), 12);
    expect(a.body.result_digest).toBe(b.body.result_digest);
    expect(a.body.unix_ns).not.toBe(b.body.unix_ns);
    expect(a.body.svcProof).not.toBe(b.body.svcProof);
  });

  it('a repeated request (its evaluation kept) is stamped afresh in every stamped field', async () => {
    const req = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 7, velocity_m_s: 0.5 } };
    const a = (await call(t.url, 'POST', '/api/svc/compute', req, bearer(key))).body;
    // More than one tick (0.777 s) later: another svcond and phase.
    await new Promise((r) => setTimeout(r, 800));
    const b = (await call(t.url, 'POST', '/api/svc/compute', req, bearer(key))).body;
    expect(b.svcond).toBeGreaterThan(a.svcond);
    for (const r of [a, b]) {
      expect(r.value).toBe(0.875);
      expect(r.equations[0]).toContain(`S·${r.R_t.toFixed(6)} (svcond ${r.svcond})`);
      expect(r.master_sum.terms[0].value).toBe(r.R_t);
      expect(r.cko).toMatchObject({ R_t: r.R_t, phase: r.phase, svcond: r.svcond });
      expect(r.cko.masterSum.terms[0].value).toBe(r.R_t);
      expect(r.protocol[6].detail).toBe(`R_t ${r.R_t.toFixed(9)}, phase ${r.phase.toFixed(6)}, svcond ${r.svcond}, precision bound 1e-4, proof HMAC-SHA256`);
      expect(r.svcond_receipt).toMatchObject({ svcond: r.svcond, phase: r.phase, R_t: r.R_t });
      expect(BigInt(r.unix_ns) / TICK_NS).toBe(BigInt(r.svcond));
      const v = await call(t.url, 'POST', '/api/svc/verify', r, bearer(key));
      expect(v.body).toMatchObject({ valid: true, proof_valid: true, receipt_valid: true });
    }
    expect(a.result_digest).toBe(b.result_digest);
    expect(a.result_id).not.toBe(b.result_id);
    // A string where a number goes is refused even after the number was served.
    const strings = await call(t.url, 'POST', '/api/svc/compute', { ...req, inputs: { mass_kg: '7', velocity_m_s: 0.5 } }, bearer(key));
    expectError(strings, 400, 'SVC_INVALID_INPUT');
  });

  it('a request too large to keep (a number written with 5000 digits) is sealed the same way', async () => {
    const text = `{"domain":"mechanics","operators":["KO42","MECH_KINETIC_ENERGY"],"inputs":{"mass_kg":2.${'0'.repeat(5000)},"velocity_m_s":3}}`;
    for (let k = 0; k < 2; k++) {
      const r = await call(t.url, 'POST', '/api/svc/compute', text, { ...bearer(key), 'content-type': 'application/json' });
      expect(r.status, r.text).toBe(200);
      expect(r.body.value).toBe(9);
      const v = await call(t.url, 'POST', '/api/svc/verify', r.body, bearer(key));
      expect(v.body.valid).toBe(true);
    }
  });

  it('an unknown input name or a value outside its physical domain is a 400, nothing sealed or charged', async () => {
    const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total as number;
    const beforeBalance = await balance();
    const beforeSealed = t.node.counters.get('sealed_total');

    const unknown = expectError(
      await call(t.url, 'POST', '/api/svc/compute', { ...ke, inputs: { mass: 2, velocity: 3 } }, bearer(key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(unknown.field).toBe('mass');
    expect(unknown.closest).toEqual(['mass_kg', 'velocity_m_s']);
    expect(unknown.message).toContain('closest known: mass_kg, velocity_m_s');

    const negative = expectError(
      await call(t.url, 'POST', '/api/svc/compute', { ...ke, inputs: { mass_kg: -2, velocity_m_s: 3 } }, bearer(key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(negative).toMatchObject({ field: 'mass_kg', operator: 'MECH_KINETIC_ENERGY', value: -2, domain: { text: 'mass ≥ 0', min: 0 } });
    expect(negative.message).toContain('mass_kg = (-2 kg) is outside its domain: mass ≥ 0');

    const fast = expectError(
      await call(t.url, 'POST', '/api/svc/compute', { ...ke, inputs: { mass_kg: 2, velocity_m_s: 4e8 } }, bearer(key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(fast).toMatchObject({ field: 'velocity_m_s', value: 4e8, domain: { text: '|v| < c = 299792458 m/s' } });

    const cold = expectError(
      await call(
        t.url,
        'POST',
        '/api/svc/compute',
        { domain: 'thermodynamics', operators: ['KO42', 'THERMO_WIEN_PEAK'], inputs: { temperature_K: 0 } },
        bearer(key),
      ),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(cold.domain.text).toBe('absolute temperature > 0 K');

    expect(await balance()).toBe(beforeBalance);
    expect(t.node.counters.get('sealed_total')).toBe(beforeSealed);
    // The same node seals the valid request, so the counters above can move.
    expect((await call(t.url, 'POST', '/api/svc/compute', ke, bearer(key))).status).toBe(200);
    expect(t.node.counters.get('sealed_total')).toBe(beforeSealed + 1);
    expect(await balance()).toBe(beforeBalance - 1);
  });

  it('GET /api/operators lists each input with its physical domain and each result domain', async () => {
    const r = await call(t.url, 'GET', '/api/operators');
    expect(r.status).toBe(200);
    const ke = r.body.operators.find((o: { id: string }) => o.id === 'MECH_KINETIC_ENERGY');
    expect(ke.inputs[0]).toEqual({ key: 'mass_kg', unit: 'kg', default: 1, domain: { text: 'mass ≥ 0', min: 0, min_inclusive: true } });
    expect(ke.result_domain).toEqual({ text: 'energy ≥ 0', min: 0, min_inclusive: true });
    const hw = r.body.operators.find((o: { id: string }) => o.id === 'BIO_HARDY_WEINBERG_HET');
    expect(hw.inputs[0].domain).toEqual({ text: 'probability in [0, 1]', min: 0, min_inclusive: true, max: 1, max_inclusive: true });
  });

  it('rejects an unknown domain with SVC_INVALID_DOMAIN and a suggestion', async () => {
    const e = expectError(await call(t.url, 'POST', '/api/svc/compute', { ...ke, domain: 'mechanic' }, bearer(key)), 400, 'SVC_INVALID_DOMAIN');
    expect(e.suggestion).toBe('mechanics');
  });

  it('rejects an unknown operator with SVC_INVALID_OPERATOR and similar ids', async () => {
    const e = expectError(
      await call(t.url, 'POST', '/api/svc/compute', { ...ke, operators: ['KO42', 'MECH_KINETIC_ENERGI'] }, bearer(key)),
      400,
      'SVC_INVALID_OPERATOR',
    );
    expect(e.available_similar).toContain('MECH_KINETIC_ENERGY');
    expect(e.available_similar.length).toBeLessThanOrEqual(5);
  });

  it('refuses a request without inputs (required, part 2.1), charging nothing; {} takes every default', async () => {
    const balance = async () => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total;
    const before = await balance();
    for (const path of ['/api/svc/compute', '/api/playground/compute', '/api/svc/streams']) {
      const e = expectError(await call(t.url, 'POST', path, { domain: 'mechanics', operators: ke.operators }, bearer(key)), 400, 'SVC_INVALID_INPUT');
      expect(e, path).toMatchObject({ field: 'inputs' });
    }
    // A batch's chain item too (the batch is refused whole, as for any malformed item).
    const batch = expectError(
      await call(t.url, 'POST', '/api/svc/batch', { items: [{ domain: 'mechanics', operators: ke.operators }] }, bearer(key)),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(batch.field).toBe('items.0.inputs');
    // A member left out is named as required, not in the validator's words.
    const noDomain = expectError(await call(t.url, 'POST', '/api/svc/compute', { operators: ke.operators, inputs: {} }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(noDomain).toMatchObject({ field: 'domain', reason: 'required', message: 'invalid input domain: required' });
    const noSolver = expectError(await call(t.url, 'POST', '/api/svc/solve', { inputs: {} }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(noSolver).toMatchObject({ field: 'solver', reason: 'required: a string' });
    // A solver's inputs may be left out (its defaults), but null is no inputs object.
    expect(expectError(await call(t.url, 'POST', '/api/svc/solve', { solver: 'heat', inputs: null }, bearer(key)), 400, 'SVC_INVALID_INPUT').field).toBe(
      'inputs',
    );
    expect(await balance()).toBe(before);
    const defaults = await call(t.url, 'POST', '/api/svc/compute', { domain: 'mechanics', operators: ke.operators, inputs: {} }, bearer(key));
    expect(defaults.status, defaults.text).toBe(200);
  });

  it('rejects a chain without KO42 first', async () => {
    expectError(await call(t.url, 'POST', '/api/svc/compute', { ...ke, operators: ['MECH_KINETIC_ENERGY', 'KO42'] }, bearer(key)), 400, 'SVC_INVALID_OPERATOR');
  });

  it('rejects more than 10 operators with SVC_TOO_MANY_OPERATORS on every route that takes a chain', async () => {
    const ops = ['KO42', ...Array(10).fill('MECH_KINETIC_ENERGY')];
    const routes: [string, unknown][] = [
      ['/api/svc/compute', { ...ke, operators: ops }],
      ['/api/playground/compute', { ...ke, operators: ops }],
      ['/api/svc/prove', { domain: 'mechanics', operators: ops }],
      ['/api/svc/lattice', { ...ke, operators: ops, sweep: { key: 'mass_kg', from: 1, to: 2, points: 2 } }],
      ['/api/svc/streams', { ...ke, operators: ops }],
      ['/api/svc/reactor', { chain: { ...ke, operators: ops }, feedback: { mass_kg: '{{result.value}}' } }],
    ];
    for (const [path, body] of routes) {
      const e = expectError(await call(t.url, 'POST', path, body, bearer(key)), 400, 'SVC_TOO_MANY_OPERATORS');
      expect(e, path).toMatchObject({ requested_operators: 11, limit: 10 });
    }
  });

  it('accepts 5 … 10 operators but reports protocol step 2 as not passed', async () => {
    const ops = ['KO42', 'MECH_KINETIC_ENERGY', 'MECH_POTENTIAL_ENERGY', 'MECH_PENDULUM_PERIOD', 'MECH_SPRING_PERIOD'];
    const r = await call(t.url, 'POST', '/api/svc/compute', { ...ke, operators: ops }, bearer(key));
    expect(r.status).toBe(200);
    expect(r.body.protocol[1]).toMatchObject({ step: 2, passed: false });
    expect(r.body.master_sum.terms).toHaveLength(5);
  });

  it('rejects non-numeric and domain-violating inputs with SVC_INVALID_INPUT', async () => {
    const a = expectError(await call(t.url, 'POST', '/api/svc/compute', { ...ke, inputs: { mass_kg: 'heavy' } }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(a.field).toBe('mass_kg');
    const b = expectError(
      await call(
        t.url,
        'POST',
        '/api/svc/compute',
        { domain: 'relativity', operators: ['KO42', 'REL_LORENTZ_FACTOR'], inputs: { velocity_m_s: 3.1e8 } },
        bearer(key),
      ),
      400,
      'SVC_INVALID_INPUT',
    );
    expect(b.field).toBe('velocity_m_s');
  });

  it('rejects unknown body fields, malformed JSON and non-object bodies with a part-7 400, never a 500', async () => {
    expectError(await call(t.url, 'POST', '/api/svc/compute', { ...ke, extra: 1 }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/svc/compute', '{"domain": "mechanics", ', bearer(key)), 400, 'SVC_INVALID_JSON');
    // A body that is not an object is named as the body, not as a field of it.
    const whole = expectError(await call(t.url, 'POST', '/api/svc/compute', '[1,2]', bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(whole.field).toBe('body');
    expect(whole.message).toMatch(/^invalid input body: .*object/);
    const extra = expectError(await call(t.url, 'POST', '/api/svc/compute', { ...ke, extra: 1 }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expect(extra.field).toBe('extra');
  });

  it('rejects a present but bad key with SVC_INVALID_KEY, never falling back to anonymous', async () => {
    const malformed = expectError(await call(t.url, 'POST', '/api/svc/compute', ke, bearer('not-a-key')), 401, 'SVC_INVALID_KEY');
    expect(malformed.reason).toBe('malformed');
    expect(malformed).toHaveProperty('key_id');
    expect(malformed).toHaveProperty('revoked_at');
    const unknown = expectError(await call(t.url, 'POST', '/api/svc/compute', ke, bearer(`sk_${'A'.repeat(32)}`)), 401, 'SVC_INVALID_KEY');
    expect(unknown.reason).toBe('unknown');
    expect(unknown.key_id).toMatch(/^sk_[0-9a-f]{8}$/);
    // The key may also come as ?key=.
    const viaQuery = await call(t.url, 'POST', `/api/svc/compute?key=${encodeURIComponent(key)}`, ke);
    expect(viaQuery.status).toBe(200);
    expect(viaQuery.body.envelope).not.toBeNull();
  });
});

describe('POST /api/svc/verify', () => {
  it('says valid for a genuine result and invalid for any tampered field', async () => {
    const r = await call(t.url, 'POST', '/api/svc/compute', ke, bearer(key));
    const genuine = r.body;
    const ok = await call(t.url, 'POST', '/api/svc/verify', genuine, bearer(key));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ valid: true, proof_valid: true, receipt_valid: true, result_id: genuine.result_id, svcond: genuine.svcond });
    const tamper = (f: (b: any) => void) => {
      const copy = JSON.parse(JSON.stringify(genuine));
      f(copy);
      return copy;
    };
    for (const mutated of [
      tamper((b) => (b.value = 9.000001)),
      tamper((b) => (b.unit = 'kJ')),
      tamper((b) => (b.svcond += 1)),
      tamper((b) => (b.phase = 0.5)),
      tamper((b) => (b.R_t = 1)),
      tamper((b) => (b.equations[1] = 'E = 10 J')),
      tamper((b) => (b.cko.operatorChain = ['KO42'])),
      tamper((b) => (b.tally_charge.cost = 0)),
      tamper((b) => (b.envelope.face_value = 1000)),
      tamper((b) => (b.svcProof = b.svcProof.replace(/^./, (c: string) => (c === 'a' ? 'b' : 'a')))),
      tamper((b) => delete b.inputs),
      tamper((b) => (b.svcond_receipt.hmac = '00')),
    ]) {
      const v = await call(t.url, 'POST', '/api/svc/verify', mutated, bearer(key));
      expect(v.status).toBe(200);
      expect(v.body.valid).toBe(false);
    }
  });

  it('needs a key (SVC_NO_KEY with its fields)', async () => {
    const e = expectError(await call(t.url, 'POST', '/api/svc/verify', {}), 401, 'SVC_NO_KEY');
    expect(e.auth_header_example).toMatch(/^Authorization: Bearer/);
    expect(typeof e.docs_url).toBe('string');
  });

  it('answers the QUERY method like POST (safe read with a body)', async () => {
    const r = await call(t.url, 'POST', '/api/svc/compute', ke, bearer(key));
    const q = await call(t.url, 'QUERY', '/api/svc/verify', r.body, bearer(key));
    expect(q.status).toBe(200);
    expect(q.body.valid).toBe(true);
    // Every read route that takes a body answers QUERY as it answers POST.
    for (const path of ['/api/svc/streams/str_unknown/verify', '/api/mesh/verify', '/api/protocol/pohc/verify', '/api/auth/verify']) {
      const post = await call(t.url, 'POST', path, { result: r.body }, bearer(key));
      const query = await call(t.url, 'QUERY', path, { result: r.body }, bearer(key));
      expect(query.status, path).not.toBe(405);
      expect([query.status, query.body?.error?.code], path).toEqual([post.status, post.body?.error?.code]);
    }
  });
});

describe('POST /api/svc/prove and /prove/verify (keyless)', () => {
  it('signs a 7-step receipt that verifies, and tampering fails', async () => {
    const p = await call(t.url, 'POST', '/api/svc/prove', { domain: 'quantum', operators: ['KO42', 'QM_HYDROGEN_LEVEL'], inputs: { level_n: 2 } });
    expect(p.status).toBe(200);
    expect(p.body.receipt.steps).toHaveLength(7);
    expect(p.body.receipt.keyPrefix).toBe('PROVE');
    expect(p.body.receipt.value).toBeCloseTo(-2.1798723611035e-18 / 4, 30);
    const v = await call(t.url, 'POST', '/api/svc/prove/verify', p.body);
    expect(v.body).toEqual({
      valid: true,
      R_t: p.body.receipt.R_t,
      svcond: p.body.receipt.svcond,
      operatorIds: ['KO42', 'QM_HYDROGEN_LEVEL'],
      keyPrefix: 'PROVE',
    });
    const bad = JSON.parse(JSON.stringify(p.body));
    bad.receipt.value = -1;
    const v2 = await call(t.url, 'POST', '/api/svc/prove/verify', bad);
    expect(v2.body).toEqual({ valid: false, R_t: null, svcond: null, operatorIds: [], keyPrefix: 'PROVE' });
  });

  it('a compute proof does not verify as a PROVE receipt (separate keys)', async () => {
    const r = await call(t.url, 'POST', '/api/svc/compute', ke, bearer(key));
    const v = await call(t.url, 'POST', '/api/svc/prove/verify', { receipt: { ...r.body, keyPrefix: 'PROVE' }, signature: r.body.svcProof });
    expect(v.body.valid).toBe(false);
  });

  it('works with no body (default chain)', async () => {
    const p = await call(t.url, 'POST', '/api/svc/prove');
    expect(p.status).toBe(200);
    expect(p.body.receipt.operatorIds).toEqual(['KO42', 'MECH_KINETIC_ENERGY']);
    expect(p.body.receipt.value).toBe(0.5);
  });

  it('takes the domain alone (its first operator) or the operators alone (their domain)', async () => {
    // Thermodynamics alone: KO42 and the ideal-gas pressure at its defaults, p = nRT/V (1 mol, 273.15 K, 0.0224 m³).
    const thermo = await call(t.url, 'POST', '/api/svc/prove', { domain: 'thermodynamics' });
    expect(thermo.status, thermo.text).toBe(200);
    expect(thermo.body.receipt).toMatchObject({ domain: 'thermodynamics', operatorIds: ['KO42', 'THERMO_IDEAL_GAS_PRESSURE'], unit: 'Pa' });
    expect(thermo.body.receipt.value).toBeCloseTo((8.314462618 * 273.15) / 0.0224, 0);
    // Ohm's law alone: I = V/R in electromagnetism.
    const ohm = await call(t.url, 'POST', '/api/svc/prove', { operators: ['KO42', 'EM_OHM_CURRENT'], inputs: { voltage_V: 12, resistance_ohm: 4 } });
    expect(ohm.status, ohm.text).toBe(200);
    expect(ohm.body.receipt).toMatchObject({ domain: 'electromagnetism', operatorIds: ['KO42', 'EM_OHM_CURRENT'], value: 3 });
    expectError(await call(t.url, 'POST', '/api/svc/prove', { domain: 'alchemy' }), 400, 'SVC_INVALID_DOMAIN');
    expectError(await call(t.url, 'POST', '/api/svc/prove', { operators: ['KO42', 'NOPE'] }), 400, 'SVC_INVALID_OPERATOR');
  });
});

describe('shift, lattice, playground', () => {
  it('POST /api/svc/shift applies a metric shift only above variance 0.0091', async () => {
    const low = await call(t.url, 'POST', '/api/svc/shift', { variance: 0.009, phase: 0.1 }, bearer(key));
    expect(low.body).toMatchObject({ applied: false, delta_alpha: 0, threshold: 0.0091 });
    const high = await call(t.url, 'POST', '/api/svc/shift', { variance: 0.01, phase: 0.1 }, bearer(key));
    expect(high.body.applied).toBe(true);
    // Δ = 2√0.01 = 0.2 tick; δα = −a[sin(2π·0.3) − sin(2π·0.1)].
    expect(high.body.delta_alpha).toBeCloseTo(-1e-3 * (Math.sin(2 * Math.PI * 0.3) - Math.sin(2 * Math.PI * 0.1)), 15);
    expectError(await call(t.url, 'POST', '/api/svc/shift', { variance: -1 }, bearer(key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(t.url, 'POST', '/api/svc/shift', { variance: 0.01 }), 401, 'SVC_NO_KEY');
  });

  it('POST /api/svc/lattice sweeps an input and signs the table', async () => {
    const r = await call(
      t.url,
      'POST',
      '/api/svc/lattice',
      { domain: 'mechanics', operators: ['KO42', 'MECH_PENDULUM_PERIOD'], sweep: { key: 'length_m', from: 1, to: 4, points: 4 } },
      bearer(key),
    );
    expect(r.status).toBe(200);
    expect(r.body.sweep.values).toEqual([1, 2, 3, 4]);
    r.body.values.forEach((v: number, i: number) => expect(v).toBeCloseTo(2 * Math.PI * Math.sqrt((i + 1) / 9.80665), 12));
    expect(r.body.svcProof).toMatch(/^[0-9a-f]{64}$/);
  });

  it('POST /api/playground/compute computes without sealing or charging', async () => {
    const before = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
    const r = await call(t.url, 'POST', '/api/playground/compute', ke, bearer(key));
    expect(r.status).toBe(200);
    expect(r.body.value).toBe(9);
    expect(r.body.sealed).toBe(false);
    expect(r.body.result_id).toBeNull();
    const after = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key));
    expect(after.body.total).toBe(before.body.total);
  });
});

describe('errors at the edges', () => {
  it('unknown routes get 404 in the part-7 shape with the discovery object', async () => {
    const r = await call(t.url, 'GET', '/api/nope');
    const e = expectError(r, 404, 'SVC_NOT_FOUND');
    expect(e.message).toContain('/api/nope');
    expect(r.body.discovery.ok).toBe(true);
    expect(r.body.discovery.counts).toMatchObject({ categories: 8, keys: 5 });
  });

  it('a wrong method is 405 in the part-7 shape', async () => {
    const r = await call(t.url, 'DELETE', '/api/svc/compute');
    expectError(r, 405, 'SVC_METHOD_NOT_ALLOWED');
  });

  it('balance is spent down to INSUFFICIENT_BALANCE (402) with no work done', async () => {
    const poor = await startTestNode(WITH_WORKERS, { initialCredits: 2 });
    try {
      const id = await zkIdentity(poor.url, 'poor');
      const chain = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY', 'MECH_POTENTIAL_ENERGY'], inputs: {} };
      const ok = await call(poor.url, 'POST', '/api/svc/compute', chain, bearer(id.key));
      expect(ok.body.tally_charge.cost).toBe(2);
      const e = expectError(await call(poor.url, 'POST', '/api/svc/compute', chain, bearer(id.key)), 402, 'INSUFFICIENT_BALANCE');
      expect(e.cost).toBe(2);
      expect(e.balance).toBe(0);
      const list = await call(poor.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key));
      expect(list.body.total).toBe(1);
    } finally {
      await poor.destroy();
    }
  });

  it('a computation over the tier time limit is SVC_TIMEOUT and seals nothing', async () => {
    const slow = await startTestNode(WITH_WORKERS, { timeLimitSeconds: 1e-9 });
    try {
      const id = await zkIdentity(slow.url, 'slow');
      const e = expectError(await call(slow.url, 'POST', '/api/svc/heat', {}, bearer(id.key)), 500, 'SVC_TIMEOUT');
      expect(e.time_limit_seconds).toBe(1e-9);
      expect(e.elapsed_seconds).toBeGreaterThanOrEqual(0);
      expect(typeof e.suggestion).toBe('string');
      const list = await call(slow.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key));
      expect(list.body.total).toBe(0);
    } finally {
      await slow.destroy();
    }
  });
});

describe('solver runs on worker threads', () => {
  it('a long run neither blocks the API nor outlives the time limit: the worker is ended and replaced', async () => {
    const node = await startTestNode(WITH_WORKERS, { timeLimitSeconds: 0.4, initialCredits: 1000 });
    try {
      const id = await zkIdentity(node.url, 'workers');
      // A gauge run at its work limit takes seconds; the limit is 0.4 s.
      let longDone = false;
      const long = call(node.url, 'POST', '/api/svc/gauge', { L: 24, max_sweeps: 36000, target_rel_error: 1e-5 }, bearer(id.key)).finally(() => {
        longDone = true;
      });
      await new Promise((r) => setTimeout(r, 100));
      // The API answers while the run is on its worker (no wall-clock bound: an ordering).
      const health = await call(node.url, 'GET', '/api/health');
      expect(health.status).toBe(200);
      expect(longDone).toBe(false);
      const e = expectError(await long, 500, 'SVC_TIMEOUT');
      expect(e.time_limit_seconds).toBe(0.4);
      expect(e.elapsed_seconds).toBeGreaterThanOrEqual(0.39);
      // Ended at its limit, not run to its end (which takes seconds of CPU): the node's own figure, not the client's clock.
      expect(e.elapsed_seconds).toBeLessThan(3);
      // The replacement worker serves the next run. The limit counts from acceptance, so a run sent while the new
      // worker still loads (seconds from source under load) may time out waiting, or start late and cross the limit
      // while running; either way the error accounts for the whole time from acceptance.
      let next = await call(node.url, 'POST', '/api/svc/zeta', {}, bearer(id.key));
      for (let i = 0; i < 50 && next.status === 500 && next.body.error?.code === 'SVC_TIMEOUT'; i++) {
        expect(next.body.error.elapsed_seconds).toBeGreaterThanOrEqual(0.39);
        expect(next.body.error.queued_seconds + next.body.error.run_seconds).toBeCloseTo(next.body.error.elapsed_seconds, 2);
        next = await call(node.url, 'POST', '/api/svc/zeta', {}, bearer(id.key));
      }
      expect(next.status, next.text).toBe(200);
      expect(next.body.value).toBeCloseTo(14.134725141734693, 9);
    } finally {
      await node.destroy();
    }
  });
});

describe('identity of the caller', () => {
  it('the zid of the suite is a 32-hex zid', () => {
    expect(zid).toMatch(/^zid_[0-9a-f]{32}$/);
  });
});
