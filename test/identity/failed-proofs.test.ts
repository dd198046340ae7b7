// Failed password logins counted per identity (src/identity/failed-proofs.ts): a window that slides, a success that
// clears, a bound on the identities remembered.
import { describe, expect, it } from 'vitest';
import { FAILURES_MAX, FailedProofs, WINDOW_MS } from '../../src/identity/failed-proofs.js';
import { ServiceError } from '../../src/kernel/errors.js';

const refusal = (f: FailedProofs, who: string): ServiceError | null => {
  try {
    f.check(who);
    return null;
  } catch (err) {
    return err as ServiceError;
  }
};

describe('failed proofs', () => {
  it('refuses after FAILURES_MAX failures in the window, until the oldest is WINDOW_MS old', () => {
    let now = 1_000_000;
    const f = new FailedProofs(() => now);
    for (let i = 0; i < FAILURES_MAX; i++) {
      expect(refusal(f, 'ada')).toBeNull();
      f.failed('ada');
      now += 1000;
    }
    const e = refusal(f, 'ada')!;
    expect(e.status).toBe(429);
    expect(e.extra).toMatchObject({ limit: FAILURES_MAX, window_seconds: WINDOW_MS / 1000, scope: 'identity' });
    // The oldest failure was at 1,000,000: open again at 1,000,000 + WINDOW_MS.
    expect(e.extra.reset_at).toBe(new Date(1_000_000 + WINDOW_MS).toISOString());
    expect(e.extra.retry_after_seconds).toBe(Math.ceil((1_000_000 + WINDOW_MS - now) / 1000));
    expect(refusal(f, 'bob')).toBeNull();
    now = 1_000_000 + WINDOW_MS - 1;
    expect(refusal(f, 'ada')).not.toBeNull();
    now = 1_000_000 + WINDOW_MS;
    // One failure left the window: one more try, and a failure closes it again.
    expect(refusal(f, 'ada')).toBeNull();
    f.failed('ada');
    expect(refusal(f, 'ada')).not.toBeNull();
  });

  it('a success starts the count again', () => {
    const now = 5;
    const f = new FailedProofs(() => now);
    for (let i = 0; i < FAILURES_MAX - 1; i++) f.failed('ada');
    f.succeeded('ada');
    for (let i = 0; i < FAILURES_MAX - 1; i++) f.failed('ada');
    expect(refusal(f, 'ada')).toBeNull();
    f.failed('ada');
    expect(refusal(f, 'ada')).not.toBeNull();
  });

  it('remembers a bounded number of identities, the least recently failed out first', () => {
    const f = new FailedProofs(() => 0);
    for (let i = 0; i < FAILURES_MAX; i++) f.failed('first');
    for (let k = 0; k < 10_000; k++) f.failed(`other ${k}`);
    expect(refusal(f, 'first')).toBeNull();
  });
});
