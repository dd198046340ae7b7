// Per-minute request limits (keyless prove and prove/verify: 10/min/IP) with rate-limiter-flexible.
// Day quotas that must survive a restart live in tally/quota.ts, not here.
import type { Context, Next } from 'koa';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { ServiceError } from '../kernel/errors.js';
import { callerAddress } from './caller-address.js';

/** `by` names what is counted (default: the caller's address, an IPv6 /64; the embed ingest counts per embed key). */
export function perMinuteLimit(points: number, scope: string, by: { what: string; keyOf: (ctx: Context) => string } = { what: 'IP', keyOf: callerAddress }) {
  const limiter = new RateLimiterMemory({ points, duration: 60, keyPrefix: scope });
  return async function rateLimit(ctx: Context, next: Next): Promise<void> {
    try {
      await limiter.consume(by.keyOf(ctx));
    } catch (rej) {
      if (!(rej instanceof RateLimiterRes)) throw rej;
      const retry = Math.max(1, Math.ceil(rej.msBeforeNext / 1000));
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `too many requests: ${points} per minute per ${by.what} on ${scope}`, {
        limit: points,
        window_seconds: 60,
        retry_after_seconds: retry,
        reset_at: new Date(Date.now() + rej.msBeforeNext).toISOString(),
      });
    }
    await next();
  };
}
