// The Black–Scholes–Merton closed form for European options with a continuous dividend yield.
// One home for the formula: the `quant` solver's check and the FIN_BLACK_SCHOLES_* operators both use it.
import { normCdf } from './special.js';

export type OptionType = 'call' | 'put';

export interface BlackScholesInputs {
  spot: number;
  strike: number;
  /** Continuously compounded risk-free rate [1/yr]. */
  rate: number;
  /** Volatility [1/√yr]. */
  volatility: number;
  maturity_years: number;
  /** Continuous dividend yield [1/yr]. */
  dividend_yield: number;
  option_type: OptionType;
}

/**
 * Price of a European call or put:
 *   call = S e^(−qT) Φ(d1) − K e^(−rT) Φ(d2),   put = K e^(−rT) Φ(−d2) − S e^(−qT) Φ(−d1),
 *   d1 = [ln(S/K) + (r − q + σ²/2) T] / (σ√T),  d2 = d1 − σ√T.
 * Φ is normCdf (erfc-based, ~1e-15 relative), so far-from-the-money tails keep their relative accuracy.
 * At T = 0 or σ = 0 the price is the discounted intrinsic value of the forward.
 */
export function blackScholes(p: BlackScholesInputs): number {
  const { spot: S, strike: K, rate: r, volatility: sigma, maturity_years: T, dividend_yield: q, option_type } = p;
  const discountedSpot = S * Math.exp(-q * T);
  const discountedStrike = K * Math.exp(-r * T);
  const sigmaSqrtT = sigma * Math.sqrt(T);
  if (!(sigmaSqrtT > 0)) {
    const intrinsic = option_type === 'call' ? discountedSpot - discountedStrike : discountedStrike - discountedSpot;
    return Math.max(intrinsic, 0);
  }
  const d1 = (Math.log(S / K) + (r - q + 0.5 * sigma * sigma) * T) / sigmaSqrtT;
  const d2 = d1 - sigmaSqrtT;
  if (option_type === 'call') return discountedSpot * normCdf(d1) - discountedStrike * normCdf(d2);
  return discountedStrike * normCdf(-d2) - discountedSpot * normCdf(-d1);
}
