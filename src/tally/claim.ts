// The daily claim (spec parts 3 and 8, architecture.md §7): 128 free credits, once per UTC day per identity, only
// when the balance is below the nearly-out threshold. Per address, a hashcash proof of work (claim-proof.ts):
// base difficulty for the first 32 claims of a UTC hour, one more bit per 4 claims past 32, and 429 past 64.
// The hour's count of an address is this home's plus what the mesh's other homes gossiped (claim-addresses.ts).
// The day's claim and the hour's count are counters written in the claim's batch with the wallet and an audit
// row, computed synchronously from memory (ledger.ts's rule), so they survive a restart and never double up.
import { ServiceError } from '../kernel/errors.js';
import type { Op, Store } from '../store/db.js';
import type { Counters } from '../store/counters.js';
import type { ChainService, AuditRow } from '../chain/service.js';
import type { IdentityService } from '../identity/service.js';
import type { Ledger } from './ledger.js';
import { claimAddressCounter, claimDayCounter } from '../store/counter-keys.js';
import { makeChallenge, openChallenge, proofBits } from './claim-proof.js';
import type { ClaimAddresses } from './claim-addresses.js';
import type { Wallet } from '../records/types.js';
import { dayKey } from '../util/utc-day.js';

export const CLAIM_AMOUNT = 128;
/** Claims per address per UTC hour at base difficulty, and the hourly cap (part 8). */
export const CLAIM_BASE_PER_HOUR = 32;
export const CLAIM_CAP_PER_HOUR = 64;
/** Past the base claims, one more bit of work per this many claims (so the 64th asks base + 8 bits). */
export const CLAIM_CLAIMS_PER_EXTRA_BIT = 4;
/** How long a challenge may be answered. */
export const CHALLENGE_TTL_MS = 10 * 60_000;

export type ClaimReason = 'claimable' | 'already_claimed_today' | 'balance_not_low' | 'hourly_cap';

export interface ClaimStatus {
  claimable: boolean;
  reason: ClaimReason;
  amount: number;
  threshold: number;
  /** Zero bits the proof needs now (for this address's next claim this hour). */
  difficulty: number;
  /** A challenge to answer, or null when not claimable. */
  challenge: string | null;
  balance: Wallet & { total: number };
  expires_unix_ms: number | null;
  retry_after_seconds?: number;
}

export interface ClaimResult {
  zid: string;
  amount: number;
  day: string;
  balance: Wallet & { total: number };
  audit: AuditRow;
}

/** UTC hour key, e.g. '2026-11-25T13'. */
export function hourKey(unixMs: number): string {
  return new Date(unixMs).toISOString().slice(0, 13);
}

/** Zero bits the `n`-th claim (1-based) of an hour from one address must show. */
export function claimDifficulty(baseBits: number, n: number): number {
  return n <= CLAIM_BASE_PER_HOUR ? baseBits : baseBits + Math.ceil((n - CLAIM_BASE_PER_HOUR) / CLAIM_CLAIMS_PER_EXTRA_BIT);
}

function refused(reason: string, message: string, extra: Record<string, unknown> = {}): ServiceError {
  return new ServiceError(400, 'SVC_BAD_REQUEST', message, { reason, ...extra });
}

export class ClaimService {
  constructor(
    private readonly deps: {
      store: Store;
      counters: Counters;
      ledger: Ledger;
      chain: ChainService;
      identity: IdentityService;
      /** HMAC key of the challenges (derived from the receipt secret for CLAIM). */
      key: Buffer;
      /** Claimable only while the balance (free + paid) is below this. */
      threshold: number;
      baseBits: number;
      /** The address's claims at the mesh's other homes (gossiped); absent: this node's only. */
      addresses?: ClaimAddresses;
    },
  ) {}

  private async slugOf(zid: string): Promise<string> {
    const ident = await this.deps.identity.getIdentity(zid);
    return ident?.default_machine ?? this.deps.identity.defaultSlug(zid);
  }

  private hourlyRetry(unixMs: number): { retry_after_seconds: number; reset_at: string } {
    const next = (Math.floor(unixMs / 3_600_000) + 1) * 3_600_000;
    return { retry_after_seconds: Math.max(1, Math.ceil((next - unixMs) / 1000)), reset_at: new Date(next).toISOString() };
  }

  /** Where this identity and address stand, synchronously (the wallet in memory). */
  private standing(zid: string, ip: string, unixMs: number): { reason: ClaimReason; wallet: Wallet; addressClaims: number; difficulty: number } {
    const wallet = this.deps.ledger.cachedWallet(zid);
    const hour = hourKey(unixMs);
    const addressClaims = this.deps.counters.get(claimAddressCounter(hour, ip)) + (this.deps.addresses?.elsewhere(hour, ip) ?? 0);
    const difficulty = claimDifficulty(this.deps.baseBits, addressClaims + 1);
    let reason: ClaimReason = 'claimable';
    if (this.deps.counters.get(claimDayCounter(dayKey(unixMs), zid)) > 0) reason = 'already_claimed_today';
    else if (wallet.free + wallet.paid >= this.deps.threshold) reason = 'balance_not_low';
    else if (addressClaims >= CLAIM_CAP_PER_HOUR) reason = 'hourly_cap';
    return { reason, wallet, addressClaims, difficulty };
  }

  async status(zid: string, ip: string, unixMs: number): Promise<ClaimStatus> {
    await this.deps.ledger.wallet(zid);
    const { reason, wallet, difficulty } = this.standing(zid, ip, unixMs);
    const claimable = reason === 'claimable';
    const expires = unixMs + CHALLENGE_TTL_MS;
    return {
      claimable,
      reason,
      amount: CLAIM_AMOUNT,
      threshold: this.deps.threshold,
      difficulty,
      challenge: claimable ? makeChallenge(this.deps.key, { zid, ip, hour: hourKey(unixMs), difficulty, expiresUnixMs: expires }) : null,
      balance: { free: wallet.free, paid: wallet.paid, total: wallet.free + wallet.paid },
      expires_unix_ms: claimable ? expires : null,
      ...(reason === 'hourly_cap' ? { retry_after_seconds: this.hourlyRetry(unixMs).retry_after_seconds } : {}),
    };
  }

  /**
   * Claim with a solved challenge. 400 (with `reason`) for a challenge that is not ours, for this identity or
   * address, expired, of another day, easier than this address now needs, or a nonce short of its difficulty; for
   * an identity that claimed today or whose balance is not low. 429 past the hourly cap.
   */
  async claim(zid: string, ip: string, challenge: string, nonce: string, svcond: number, unixMs: number): Promise<ClaimResult> {
    const slug = await this.slugOf(zid);
    // Both in memory at once, checked right before the synchronous part (a bounded cache may let one go while the other loads).
    while (!this.deps.ledger.isLoaded(zid) || !this.deps.chain.isPrepared(slug)) {
      await this.deps.ledger.wallet(zid);
      await this.deps.chain.prepare(slug);
    }
    // From here to the commit: synchronous, so two claims cannot both see "not claimed today".
    const { reason, addressClaims, difficulty } = this.standing(zid, ip, unixMs);
    if (reason === 'hourly_cap') {
      const retry = this.hourlyRetry(unixMs);
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `at most ${CLAIM_CAP_PER_HOUR} claims per hour from one address`, {
        limit: CLAIM_CAP_PER_HOUR,
        window_seconds: 3600,
        ...retry,
      });
    }
    if (reason === 'already_claimed_today') throw refused(reason, 'this identity has claimed today already; the next claim opens at midnight UTC');
    if (reason === 'balance_not_low')
      throw refused(reason, `the daily claim opens when the balance is below ${this.deps.threshold} credits`, { threshold: this.deps.threshold });
    const fields = openChallenge(this.deps.key, challenge, zid, ip);
    if (fields === null) throw refused('invalid_challenge', 'not a challenge this node issued to this identity and address (GET /api/tally/claim)');
    const day = dayKey(unixMs);
    if (fields.expiresUnixMs <= unixMs || fields.hour.slice(0, 10) !== day)
      throw refused('stale_challenge', 'the challenge has expired; get a new one (GET /api/tally/claim)');
    if (fields.difficulty < difficulty)
      throw refused('stale_challenge', `this address now needs ${difficulty} bits of work; get a new challenge (GET /api/tally/claim)`, { difficulty });
    const bits = proofBits(challenge, nonce);
    if (bits < fields.difficulty)
      throw refused('insufficient_work', `SHA-256(challenge:nonce) has ${bits} leading zero bits; ${fields.difficulty} are needed`, {
        difficulty: fields.difficulty,
        bits,
      });

    const credit = this.deps.ledger.creditOps(zid, CLAIM_AMOUNT, 0);
    const dayName = claimDayCounter(day, zid);
    const addressName = claimAddressCounter(hourKey(unixMs), ip);
    this.deps.counters.bump(dayName, 1);
    this.deps.counters.bump(addressName, 1);
    const appended = this.deps.chain.appendOps(slug, svcond, 'daily_claim', {
      zid,
      day,
      amount: CLAIM_AMOUNT,
      address_claim: addressClaims + 1,
      difficulty: fields.difficulty,
    });
    const ops: Op[] = [...credit.ops, appended.op, ...this.deps.counters.persistOps([dayName, addressName])];
    try {
      await this.deps.store.commit(ops);
    } catch (err) {
      this.deps.counters.revert(dayName, 1);
      this.deps.counters.revert(addressName, 1);
      appended.rollback();
      credit.rollback();
      throw err;
    }
    this.deps.addresses?.announce(hourKey(unixMs), ip, this.deps.counters.get(addressName));
    const w = credit.wallet;
    return { zid, amount: CLAIM_AMOUNT, day, balance: { free: w.free, paid: w.paid, total: w.free + w.paid }, audit: appended.row };
  }
}
