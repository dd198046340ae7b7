// The answers kept for writes sent with an Idempotency-Key (idempotency.ts): one record per caller's key and
// idempotency key, with the request's fingerprint and the answer as it was sent, for ANSWER_KEPT_MS. A second index
// by expiry lets the sweep delete what has expired without reading every record. A write whose answer is known before
// its batch commits keeps it in that batch first (opsInBatch): a sealed result as its result id, read back from the
// ledger; a transfer, a batch's acceptance or a chain row as the answer itself. A node that stops before the answer's
// own record still replays it, and never applies the write twice.
import type { Op, Store, Sublevel } from '../store/db.js';

/** How long an answer is kept: a client's retries come within minutes; a day covers a client that was down. */
export const ANSWER_KEPT_MS = 24 * 60 * 60 * 1000;
/** Largest answer body kept; a larger one is remembered as applied, without its body. */
export const ANSWER_KEPT_MAX_BYTES = 1024 * 1024;
/** Expired records deleted by one sweep (the next sweep takes the rest). */
const SWEEP_BATCH = 500;

export interface KeptAnswer {
  /** SHA-256 of the request's method, path and body: a key reused for another request is refused. */
  fingerprint: string;
  status: number;
  /** Headers that describe the answer (content type, the node's own X-Svc-* headers, Location). */
  headers: Record<string, string>;
  /** The body as sent; null when it was larger than ANSWER_KEPT_MAX_BYTES, or when `result_id` names it. */
  body: string | null;
  /** The answer is the sealed result of this id, as the ledger keeps it (written in the seal's batch). */
  result_id?: string;
  /** The write's caller was resolved from the API key it presented: a replay resolves that key again (not revoked). */
  by_key?: boolean;
  /** Unix ms when the record may be deleted. */
  expires_at: number;
}

function expiryKey(expiresAt: number, id: string): string {
  return `${String(expiresAt).padStart(15, '0')}:${id}`;
}

export class IdempotentAnswers {
  private readonly answers: Sublevel;
  private readonly byExpiry: Sublevel;

  constructor(
    private readonly store: Store,
    private readonly nowMs: () => number,
    /** A sealed result's bytes as answered (the ledger's), or undefined. */
    private readonly sealedResult: (resultId: string) => Promise<Buffer | undefined> = async () => undefined,
  ) {
    this.answers = store.sub('idempotent_answers');
    this.byExpiry = store.sub('idempotent_answers_by_expiry');
  }

  /** The answer kept under `id`, or undefined (none, or expired and not swept yet). */
  async get(id: string): Promise<KeptAnswer | undefined> {
    const kept = await this.store.get<KeptAnswer>(this.answers, id);
    return kept !== undefined && kept.expires_at > this.nowMs() ? kept : undefined;
  }

  async keep(id: string, answer: Omit<KeptAnswer, 'expires_at'>): Promise<void> {
    const expires_at = this.nowMs() + ANSWER_KEPT_MS;
    const previous = await this.store.get<KeptAnswer>(this.answers, id);
    await this.store.commit([
      ...(previous ? [{ type: 'del' as const, sub: this.byExpiry, key: expiryKey(previous.expires_at, id) }] : []),
      { type: 'put', sub: this.answers, key: id, value: { ...answer, expires_at } },
      { type: 'put', sub: this.byExpiry, key: expiryKey(expires_at, id), value: id },
    ]);
  }

  /**
   * The ops keeping `answer` under `id` in a batch of the caller's (the write's own). A record that stood under `id`
   * had expired (the request would have been replayed): its expiry entry goes with the sweep, which checks the record.
   */
  opsInBatch(id: string, answer: Omit<KeptAnswer, 'expires_at'>): Op[] {
    const expires_at = this.nowMs() + ANSWER_KEPT_MS;
    return [
      { type: 'put', sub: this.answers, key: id, value: { ...answer, expires_at } },
      { type: 'put', sub: this.byExpiry, key: expiryKey(expires_at, id), value: id },
    ];
  }

  /** The body to send again: as kept, or the sealed result the record names; null when neither is there. */
  async bodyOf(kept: KeptAnswer): Promise<string | null> {
    if (kept.body !== null || kept.result_id === undefined) return kept.body;
    return (await this.sealedResult(kept.result_id))?.toString('utf8') ?? null;
  }

  /** Deletes up to SWEEP_BATCH expired records; answers how many. */
  async sweep(): Promise<number> {
    // Expired at now or before: the bound is the next millisecond's first key.
    const due = await this.store.range<string>(this.byExpiry, { lt: expiryKey(this.nowMs() + 1, ''), limit: SWEEP_BATCH });
    if (due.length === 0) return 0;
    // A record kept again since (its key reused after it expired) has a later expiry: only its old index entry goes.
    const current = await this.store.getMany<KeptAnswer>(
      this.answers,
      due.map((d) => d.value),
    );
    await this.store.commit(
      due.flatMap(({ key, value }, i) => [
        { type: 'del' as const, sub: this.byExpiry, key },
        ...(current[i] !== undefined && expiryKey(current[i].expires_at, value) === key ? [{ type: 'del' as const, sub: this.answers, key: value }] : []),
      ]),
    );
    return due.length;
  }
}
