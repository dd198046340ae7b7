import { describe, expect, it } from 'vitest';
import { quant } from '../../src/solvers/quant.js';
import { blackScholes } from '../../src/numerics/black-scholes.js';
import { normCdf } from '../../src/numerics/special.js';
import { expectGateRefusesPerturbed, inputErrorOnResolve } from '../helpers/solver.js';

const run = (raw: unknown) => quant.run(quant.resolve(raw));

const expectInputError = inputErrorOnResolve(quant);

// Closed-form Greeks with dividend yield (independent of the PDE).
function greeks(S: number, K: number, r: number, sigma: number, T: number, q: number, call: boolean) {
  const d1 = (Math.log(S / K) + (r - q + 0.5 * sigma * sigma) * T) / (sigma * Math.sqrt(T));
  const pdf = Math.exp(-0.5 * d1 * d1) / Math.sqrt(2 * Math.PI);
  const delta = call ? Math.exp(-q * T) * normCdf(d1) : -Math.exp(-q * T) * normCdf(-d1);
  const gamma = (Math.exp(-q * T) * pdf) / (S * sigma * Math.sqrt(T));
  return { delta, gamma };
}

describe('blackScholes closed form', () => {
  it('matches published values', () => {
    // Hull, Options, Futures and Other Derivatives, Example 15.6: S=42, K=40, r=10 %, σ=20 %, T=0.5 → c=4.76, p=0.81.
    const hull = { spot: 42, strike: 40, rate: 0.1, volatility: 0.2, maturity_years: 0.5, dividend_yield: 0 };
    expect(blackScholes({ ...hull, option_type: 'call' })).toBeCloseTo(4.7594, 4);
    expect(blackScholes({ ...hull, option_type: 'put' })).toBeCloseTo(0.8086, 4);
    // The textbook at-the-money case S=K=100, r=5 %, σ=20 %, T=1: call 10.4506, put 5.5735.
    const atm = { spot: 100, strike: 100, rate: 0.05, volatility: 0.2, maturity_years: 1, dividend_yield: 0 };
    expect(blackScholes({ ...atm, option_type: 'call' })).toBeCloseTo(10.450583572185565, 12);
    expect(blackScholes({ ...atm, option_type: 'put' })).toBeCloseTo(5.573526022256971, 12);
  });

  it('satisfies put–call parity with dividends', () => {
    const p = { spot: 120, strike: 95, rate: 0.03, volatility: 0.35, maturity_years: 2.5, dividend_yield: 0.04 };
    const c = blackScholes({ ...p, option_type: 'call' });
    const put = blackScholes({ ...p, option_type: 'put' });
    const forward = 120 * Math.exp(-0.04 * 2.5) - 95 * Math.exp(-0.03 * 2.5);
    expect(Math.abs(c - put - forward)).toBeLessThan(1e-12);
  });
});

describe('quant solver', () => {
  it('prices the default at-the-money call to the closed form', () => {
    const out = run({});
    expect(out.mode).toBeNull();
    expect(out.unit).toBe('USD');
    expect(out.output_class).toBe('profile');
    expect(out.rule8_array).toBe('price_curve');
    expect(Math.abs(out.value - 10.450583572185565) / 10.450583572185565).toBeLessThan(1e-4);
    expect(out.check.passed).toBe(true);
    expect(out.check.reference).toBeCloseTo(10.450583572185565, 12);
    const g = greeks(100, 100, 0.05, 0.2, 1, 0, true);
    expect(Math.abs((out.outputs.delta as number) - g.delta)).toBeLessThan(1e-4);
    expect(Math.abs((out.outputs.gamma as number) - g.gamma) / g.gamma).toBeLessThan(1e-3);
    const curve = out.outputs.price_curve as { S: number[]; V: number[] };
    expect(curve.S.length).toBe(curve.V.length);
    expect(curve.V.length).toBeLessThanOrEqual(512);
    expect(out.rule8).toEqual(curve.V);
    expect(curve.S[0]!).toBeLessThan(100);
    expect(curve.S[curve.S.length - 1]!).toBeGreaterThan(100);
  });

  const cases: { raw: Record<string, unknown>; tol: number }[] = [
    { raw: { option_type: 'put' }, tol: 1e-4 },
    { raw: { spot: 120, dividend_yield: 0.03, nx: 1001 }, tol: 1e-5 },
    { raw: { spot: 80, volatility: 0.5, maturity_years: 5, option_type: 'put' }, tol: 1e-5 },
    { raw: { spot: 42, strike: 40, rate: 0.1, maturity_years: 0.5, currency: 'EUR' }, tol: 1e-4 },
    { raw: { spot: 100, strike: 130, option_type: 'call', rate: -0.1 }, tol: 1e-4 },
  ];
  for (const { raw, tol } of cases) {
    it(`matches Black–Scholes–Merton for ${JSON.stringify(raw)}`, () => {
      const inputs = quant.resolve(raw);
      const out = quant.run(inputs);
      const ref = blackScholes(inputs);
      expect(Math.abs(out.value - ref) / ref).toBeLessThan(tol);
      expect(out.check.passed).toBe(true);
      expect(out.unit).toBe(inputs.currency);
      const g = greeks(inputs.spot, inputs.strike, inputs.rate, inputs.volatility, inputs.maturity_years, inputs.dividend_yield, inputs.option_type === 'call');
      expect(Math.abs((out.outputs.delta as number) - g.delta)).toBeLessThan(1e-3);
    });
  }

  it('refuses a far out-of-the-money price it cannot certify', () => {
    const out = run({ spot: 50, strike: 100, maturity_years: 0.1 });
    expect(out.check.passed).toBe(false);
    expect(out.check.refused).toMatch(/out of the money/);
  });

  it('resolves {} to every default', () => {
    expect(quant.resolve({})).toEqual({
      option_type: 'call',
      spot: 100,
      strike: 100,
      rate: 0.05,
      volatility: 0.2,
      maturity_years: 1,
      dividend_yield: 0,
      nx: 1000,
      nt: 500,
      currency: 'USD',
    });
  });

  it('rejects bad inputs with the right field', () => {
    expectInputError({ foo: 1 }, 'foo');
    expectInputError({ spot: 'x' }, 'spot');
    expectInputError({ spot: 0 }, 'spot');
    expectInputError({ volatility: 3.5 }, 'volatility');
    expectInputError({ rate: -0.2 }, 'rate');
    expectInputError({ option_type: 'straddle' }, 'option_type');
    expectInputError({ nx: 100.5 }, 'nx');
    expectInputError({ currency: 'EURO' }, 'currency');
    expectInputError({ nx: 20_000, nt: 10_000 }, 'nt');
  });

  it('spot and strike have a finite range: at its corners the price is the textbook value rescaled (homogeneity)', () => {
    // Old code: "> 0" — spot or strike 5e-324 or 1e300 gave NaN prices, Δ and Γ. Price is homogeneous of degree 1
    // in (S, K): the textbook S = K = 100 call 10.4506 and put 5.5735 (r 5 %, σ 20 %, T 1) scale with S/100.
    for (const S of [1e-6, 1e12]) {
      const call = run({ spot: S, strike: S });
      const put = run({ spot: S, strike: S, option_type: 'put' });
      expect(Math.abs(call.value - (10.450583572185565 * S) / 100) / ((10.450583572185565 * S) / 100)).toBeLessThan(1e-4);
      expect(Math.abs(put.value - (5.573526022256971 * S) / 100) / ((5.573526022256971 * S) / 100)).toBeLessThan(1e-4);
      for (const out of [call, put]) {
        expect(out.check.passed).toBe(true);
        expect(Number.isFinite(out.outputs.delta as number) && Number.isFinite(out.outputs.gamma as number)).toBe(true);
      }
    }
    // Deep in the money across the whole range: the call is worth S − K e^(−rT) (Φ(d1) = Φ(d2) = 1 to double precision).
    const deep = run({ spot: 1e12, strike: 1e-6 });
    expect(deep.check.passed).toBe(true);
    expect(Math.abs(deep.value - (1e12 - 1e-6 * Math.exp(-0.05))) / 1e12).toBeLessThan(1e-4);
    for (const field of ['spot', 'strike']) {
      for (const v of [5e-324, 1e-300, 9e-7]) expectInputError({ [field]: v }, field, { status: 400, allowed: { min: 1e-6, inclusive: true } });
      for (const v of [1.1e12, 1e300, Number.MAX_VALUE]) expectInputError({ [field]: v }, field, { status: 400, allowed: { max: 1e12, inclusive: true } });
    }
  });

  it('is deterministic', () => {
    const a = run({ spot: 95, option_type: 'put' });
    const b = run({ spot: 95, option_type: 'put' });
    expect(Object.is(a.value, b.value)).toBe(true);
    expect(JSON.stringify(a.outputs)).toBe(JSON.stringify(b.outputs));
  });

  it('a 1 % wrong price fails the gate', () => {
    expectGateRefusesPerturbed(run({}));
  });
});
