// Rule 7 steps 3 and 6 for the closed-form operators: strict inputs (unknown names, physical domains), dimensional
// analysis of every formula, and the independent interval evaluation that a wrong implementation cannot pass.
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/kernel/errors.js';
import { gateChainValues, toleranceGateError } from '../../src/kernel/gate.js';
import { evaluateChain, type Modulation } from '../../src/kernel/operators/chain.js';
import { checkOperator, operatorDimension } from '../../src/kernel/operators/independent.js';
import * as I from '../../src/kernel/operators/interval.js';
import { dimensionOf, dimensionText, k, mul, parseUnit, x } from '../../src/kernel/operators/reference.js';
import { getOperator, OPERATORS } from '../../src/kernel/operators/registry.js';
import type { OperatorDef } from '../../src/kernel/operators/types.js';
import { normCdf } from '../../src/numerics/special.js';

const MOD: Modulation = { R_t: 1.0004, svcond: 42, phase: 0.2 };
const op = (id: string): OperatorDef => getOperator(id)!;

function refusal(fn: () => unknown): ServiceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('expected a ServiceError');
}

describe('strict inputs', () => {
  it('an unknown name → 400 naming it and the closest known names', () => {
    const err = refusal(() => evaluateChain({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass: 2, velocity: 3 } }, MOD));
    expect([err.status, err.code]).toEqual([400, 'SVC_INVALID_INPUT']);
    expect(err.extra.field).toBe('mass');
    expect(err.extra.closest).toEqual(['mass_kg', 'velocity_m_s']);
    expect(err.message).toContain("unknown input 'mass'");
    expect(err.message).toContain('closest known: mass_kg, velocity_m_s');
    // A key of another operator of the same domain is unknown to this chain, and known once that operator joins it.
    const height = refusal(() => evaluateChain({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { height_m: 2 } }, MOD));
    expect(height.extra.field).toBe('height_m');
    expect(
      evaluateChain({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY', 'MECH_POTENTIAL_ENERGY'], inputs: { height_m: 2 } }, MOD).value,
    ).toBe(0.5);
  });

  it.each([
    ['mechanics', 'MECH_KINETIC_ENERGY', 'mass_kg', -2, 'mass ≥ 0'],
    ['mechanics', 'MECH_KINETIC_ENERGY', 'velocity_m_s', 4e8, '|v| < c = 299792458 m/s'],
    ['thermodynamics', 'THERMO_IDEAL_GAS_PRESSURE', 'temperature_K', 0, 'absolute temperature > 0 K'],
    ['thermodynamics', 'THERMO_WIEN_PEAK', 'temperature_K', -5, 'absolute temperature > 0 K'],
    ['biology', 'BIO_HARDY_WEINBERG_HET', 'allele_frequency', 1.5, 'probability in [0, 1]'],
    ['quantum', 'QM_HYDROGEN_LEVEL', 'level_n', 1.5, 'principal quantum number n: integer ≥ 1'],
    ['thermodynamics', 'THERMO_STEFAN_BOLTZMANN', 'emissivity', -0.1, 'emissivity in [0, 1]'],
    ['biology', 'BIO_NERNST', 'valence', 0, 'ion valence z: integer ≠ 0'],
  ])('%s %s: %s = %s → 400 naming the input, the value and the domain', (domain, id, key, value, text) => {
    const err = refusal(() => evaluateChain({ domain, operators: ['KO42', id], inputs: { [key]: value } }, MOD));
    expect([err.status, err.code]).toEqual([400, 'SVC_INVALID_INPUT']);
    expect(err.extra).toMatchObject({ field: key, operator: id, value, domain: { text } });
    expect(err.message).toContain(`${key} = `);
    expect(err.message).toContain(`is outside its domain: ${text}`);
  });

  it('the cold reservoir of a Carnot engine cannot be hotter than the hot one', () => {
    const err = refusal(() => op('THERMO_CARNOT_EFFICIENCY').evaluate({ cold_K: 700, hot_K: 600 }));
    expect(err.extra).toMatchObject({ field: 'cold_K', operator: 'THERMO_CARNOT_EFFICIENCY' });
    expect(op('THERMO_CARNOT_EFFICIENCY').evaluate({ cold_K: 600, hot_K: 600 })).toBe(0);
  });

  it('every default lies in its domain', () => {
    for (const o of OPERATORS) for (const i of o.inputs) expect(checkOperator(o, { [i.key]: i.default }, 0).operator).toBe(o.id);
    for (const o of OPERATORS) {
      const v = Object.fromEntries(o.inputs.map((i) => [i.key, i.default]));
      expect(checkOperator(o, v, o.evaluate(v)).inputs_in_domain, o.id).toBe(true);
    }
  });
});

describe('dimensional analysis', () => {
  it('parses the units the operators write', () => {
    expect(dimensionText(parseUnit('m^3/(kg*s^2)'))).toBe('m^3*kg^-1*s^-2');
    expect(dimensionText(parseUnit('W/(m^2*K^4)'))).toBe('kg*s^-3*K^-4');
    expect(dimensionText(parseUnit('1/yr^(1/2)'))).toBe('s^-0.5');
    expect(dimensionText(parseUnit('J'))).toBe(dimensionText(parseUnit('kg*m^2/s^2')));
    // Only the table's own names: an Object.prototype member is an unknown name, not a dimension.
    for (const u of ['constructor', 'm/toString', '__proto__']) expect(() => parseUnit(u), u).toThrow(/unknown name/);
    expect(dimensionText(parseUnit('ohm'))).toBe(dimensionText(parseUnit('V/A')));
    expect(() => parseUnit('furlong')).toThrow(/unknown name 'furlong'/);
  });

  it("every operator's formula has its unit's dimension and adds only like quantities", () => {
    for (const o of OPERATORS) expect(operatorDimension(o), o.id).toMatchObject({ ok: true, reason: null });
    expect(operatorDimension(op('FIN_BLACK_SCHOLES_CALL')).dimension).toBe('USD');
    expect(operatorDimension(op('BIO_NERNST')).dimension).toBe(dimensionText(parseUnit('V')));
  });

  it('a formula of the wrong dimension fails step 3: momentum declared as an energy', () => {
    const wrong: OperatorDef = { ...op('MECH_KINETIC_ENERGY'), reference: mul(x('mass_kg'), x('velocity_m_s')) };
    expect(operatorDimension(wrong)).toMatchObject({ ok: false, dimension: 'm*kg*s^-1' });
    const c = checkOperator(wrong, { mass_kg: 2, velocity_m_s: 3 }, 9);
    expect([c.dimension_ok, c.passed]).toEqual([false, false]);
    expect(c.reason).toContain('the formula has dimension m*kg*s^-1, the unit J is m^2*kg*s^-2');
    expect(() => dimensionOf({ k: 'add', a: x('mass_kg'), b: k(1, 's') }, { mass_kg: 'kg' })).toThrow(/add of kg and s/);
    expect(() => dimensionOf({ k: 'exp', a: x('mass_kg') }, { mass_kg: 'kg' })).toThrow(/exp of a quantity of dimension kg/);
  });
});

describe('the independent evaluation', () => {
  it('interval arithmetic encloses the exact value: 0.1 + 0.2 and 1/3 · 3', () => {
    const sum = I.add(I.point(0.1), I.point(0.2));
    // 0.1 and 0.2 as doubles sum exactly to 0.3000000000000000166533453693773481063544750213623046875.
    expect(sum.lo).toBeLessThan(0.30000000000000004);
    expect(sum.hi).toBeGreaterThanOrEqual(0.30000000000000004);
    const third = I.mul(I.div(I.point(1), I.point(3)), I.point(3));
    expect(third.lo).toBeLessThan(1);
    expect(third.hi).toBeGreaterThan(1);
    expect(I.div(I.point(1), { lo: -1, hi: 1 })).toEqual(I.WHOLE);
    expect(I.sin({ lo: 1, hi: 2 }).hi).toBe(1); // π/2 lies inside
    expect(I.powInt({ lo: -2, hi: 1 }, 2)).toMatchObject({ lo: 0 });
  });

  it('Φ by quadrature agrees with the series and continued fraction of numerics/special.ts', () => {
    for (const t of [-30, -8, -3.2, -1, -0.1, 0, 0.4, 1.7, 5, 9]) {
      const a = I.normalCdfByQuadrature(t);
      const b = normCdf(t);
      expect(Math.abs(a - b) / b, String(t)).toBeLessThan(1e-12);
    }
  });

  it('every operator passes at its defaults: its value lies in the enclosure of its formula', () => {
    for (const o of OPERATORS) {
      const v = Object.fromEntries(o.inputs.map((i) => [i.key, i.default]));
      const c = checkOperator(o, v, o.evaluate(v));
      expect(c, o.id).toMatchObject({ passed: true, reason: null, rel_error: 0 });
      expect(c.enclosure[0]).toBeLessThanOrEqual(c.value);
      expect(c.enclosure[1]).toBeGreaterThanOrEqual(c.value);
    }
  });

  it('uncertainty: rounding alone for exact constants, the constants’ CODATA uncertainty propagated otherwise', () => {
    const ke = checkOperator(op('MECH_KINETIC_ENERGY'), { mass_kg: 2, velocity_m_s: 3 }, 9);
    expect(ke.uncertainty).toBeGreaterThan(0);
    expect(ke.uncertainty / 9).toBeLessThan(1e-14);
    // r_s = 2GM/c² is proportional to G (relative standard uncertainty 2.2e-5); T = 2π√(a³/GM) to G^(-1/2).
    const rs = op('REL_SCHWARZSCHILD_RADIUS');
    const rsValue = rs.evaluate({});
    expect(checkOperator(rs, { mass_kg: 1.98847e30 }, rsValue).uncertainty / rsValue).toBeCloseTo(2.2e-5, 8);
    const period = op('MECH_ORBITAL_PERIOD');
    const pv = { semi_major_axis_m: 1.495978707e11, central_mass_kg: 1.98847e30 };
    expect(checkOperator(period, pv, period.evaluate(pv)).uncertainty / period.evaluate(pv)).toBeCloseTo(1.1e-5, 7);
  });

  it('a deliberately wrong implementation (1 % off) fails the closed-form gate with a 422, and nothing else does', () => {
    const right = op('MECH_KINETIC_ENERGY');
    const wrong: OperatorDef = { ...right, evaluate: (v) => right.evaluate(v) * 1.01 };
    const lookup = (id: string) => (id === right.id ? wrong : getOperator(id));
    const request = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

    const honest = gateChainValues(evaluateChain(request, MOD), 0);
    expect(honest).toMatchObject({ passed: true, reason: null });

    const chain = evaluateChain(request, MOD, lookup);
    expect(chain.value).toBe(9.09);
    const verdict = gateChainValues(chain, 0);
    expect(verdict.passed).toBe(false);
    expect(verdict.rel_error).toBeCloseTo(0.01 / 1.01, 12);
    expect(verdict.reason).toContain('MECH_KINETIC_ENERGY: result 9.09 J disagrees with the independent evaluation [');
    const err = toleranceGateError(verdict);
    expect([err.status, err.code]).toEqual([422, 'SVC_TOLERANCE_GATE']);
  });

  it('a wrong implementation that stays within 0.1 % of the formula passes; one that gives an unphysical result does not', () => {
    const right = op('FIN_BLACK_SCHOLES_CALL');
    const v = { spot: 100, strike: 100, rate: 0.05, volatility: 0.2, maturity_years: 1, dividend_yield: 0 };
    expect(checkOperator(right, v, right.evaluate(v) * (1 + 5e-4)).passed).toBe(true);
    expect(checkOperator(right, v, right.evaluate(v) * (1 + 2e-3)).passed).toBe(false);
    // A kinetic energy of the wrong sign is outside the result's domain, whatever its magnitude.
    const ke = checkOperator(op('MECH_KINETIC_ENERGY'), { mass_kg: 2, velocity_m_s: 3 }, -9);
    expect([ke.result_in_domain, ke.passed]).toEqual([false, false]);
    expect(ke.reason).toBe('MECH_KINETIC_ENERGY: result -9 J is outside its domain (energy ≥ 0)');
  });
});
