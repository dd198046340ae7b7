// Webhook registrations (spec 2.6, part 6 management operations): an identity's webhooks. The signing secret is
// shown once, at registration, and stored encrypted; so are the custom headers' values (a receiver's bearer token is a
// credential): a webhook is shown with its header names and each value hidden. Part 3: a webhook is disabled when a delivery's 5th attempt fails.
// LevelDB is the truth (records by id, and an index by owner); memory keeps the registrations of the owners seen
// lately: a bounded LRU of owner → its list (≤ WEBHOOKS_PER_IDENTITY each; an owner with none is kept
// as an empty list, so a seal of an owner without webhooks reads the store once). The sealing batch decides
// synchronously which webhooks a result owes an event to: it asks subscribers() before the batch is built
// (Outbox.forOwner), which answers from memory or reads the owner's list from the store, so an owner evicted from the
// cache still gets its deliveries. A read that a write of the same owner overtook is read again, so a list never
// misses a registration acknowledged before it was asked for; an owner with a write under way stays in memory.
import { capReached, ServiceError } from '../kernel/errors.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import { randomHex } from '../util/random-hex.js';
import type { EventType, WebhookStatus } from './events.js';
import { newSecret, openSecret, sealSecret, type SealedSecret } from './signing.js';
import { checkOutboundUrl, type UrlPolicy } from '../util/url-policy.js';
import { LruMap } from '../util/bounded-map.js';
import { keyAfter } from '../util/range-cursor.js';
import { KeyedLock } from '../util/keyed-lock.js';

export const WEBHOOKS_PER_IDENTITY = 16;
/** Owners whose registrations are kept in memory, unless configured (limits.identityCacheMax). */
export const WEBHOOK_OWNERS_CACHED = 4096;
/** Records read per page when the owner index is built for records stored before it. */
const INDEX_PAGE = 1000;
/** A read overtaken by writes is tried again this many times, then answered without being kept. */
const READ_TRIES = 5;

export interface WebhookRecord {
  id: string;
  owner: string;
  url: string;
  events: EventType[];
  headers: StoredHeaders;
  metadata: Record<string, unknown>;
  status: WebhookStatus;
  last_delivery_at: string | null;
  /** Failed attempts since the last delivered one. */
  failure_count: number;
  secret: SealedSecret;
  created_at: string;
}

/** Custom headers as stored: the names in clear, the values sealed together (null when there are none). */
export interface StoredHeaders {
  names: string[];
  sealed: SealedSecret | null;
}

/** What a custom header's value is shown as: values are write-only. */
export const HIDDEN_HEADER_VALUE = '********';

export interface WebhookInput {
  url: string;
  events: EventType[];
  headers?: Record<string, string>;
  metadata?: Record<string, unknown>;
}

/** Header names a registration may not set (the delivery's own). */
const RESERVED_HEADER = /^(content-type|content-length|host|connection|transfer-encoding|user-agent|x-svc-.*|webhook-.*)$/i;

export function webhookView(w: WebhookRecord): Record<string, unknown> {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    headers: Object.fromEntries(w.headers.names.map((n) => [n, HIDDEN_HEADER_VALUE])),
    metadata: w.metadata,
    status: w.status,
    last_delivery_at: w.last_delivery_at,
    failure_count: w.failure_count,
    created_at: w.created_at,
  };
}

export class WebhookRegistry {
  private readonly sub: Sublevel;
  /** `<owner>!<id>` → id: an owner's registrations without a scan. */
  private readonly ownerIndex: Sublevel;
  private readonly meta: Sublevel;
  /** Owners seen lately → their registrations, sorted by creation (bounded; owners with a write under way stay). */
  private readonly owners: LruMap<string, WebhookRecord[]>;
  /** Writes under way, per owner. */
  private readonly writing = new Map<string, number>();
  /** Reads from the store under way, per owner: a write of that owner marks them overtaken. */
  private readonly reading = new Map<string, { overtaken: boolean }[]>();
  /** Registrations past the cap check whose batch has not settled, per owner: they count against the cap. */
  private readonly registering = new Map<string, number>();
  /**
   * One read-modify-write of a webhook at a time (update, remove, a delivery's attempt), by id: two PATCHes would
   * each write the record they read, losing the other's change, and a PATCH read before a DELETE would write the
   * deleted record back, out of its owner's list but still delivered to.
   */
  private readonly changing = new KeyedLock();

  constructor(
    private readonly store: Store,
    private readonly secretKey: Buffer,
    readonly policy: UrlPolicy,
    private readonly nowMs: () => number,
    cacheMax = WEBHOOK_OWNERS_CACHED,
  ) {
    this.sub = store.sub('webhooks');
    this.ownerIndex = store.sub('webhooks_by_owner', 'utf8');
    this.meta = store.sub('webhooks_meta');
    this.owners = new LruMap(cacheMax, (owner) => this.writing.has(owner));
  }

  /** Owners in memory (tests, docs/performance.md's cache list). */
  get cachedOwners(): number {
    return this.owners.size;
  }

  /** Is `owner`'s list in memory? (Does not count as a use.) */
  inMemory(owner: string): boolean {
    return this.owners.has(owner);
  }

  /**
   * Brings records stored by earlier versions up to date, each step once, a page at a time (nothing kept in memory):
   * the owner index, then custom header values sealed (they were stored in clear).
   */
  async load(): Promise<void> {
    await this.onceOverRecords('owner_index', (w) => [{ type: 'put', sub: this.ownerIndex, key: `${w.owner}!${w.id}`, value: w.id }]);
    await this.onceOverRecords('sealed_headers', (w) => {
      const h = w.headers as StoredHeaders | Record<string, string>;
      return Array.isArray(h.names) ? [] : [{ type: 'put', sub: this.sub, key: w.id, value: { ...w, headers: this.sealHeaders(h as Record<string, string>) } }];
    });
  }

  private async onceOverRecords(step: string, ops: (w: WebhookRecord) => Op[]): Promise<void> {
    if ((await this.store.get<boolean>(this.meta, step)) === true) return;
    let after: string | null = null;
    for (;;) {
      const page: { key: string; value: WebhookRecord }[] = await this.store.range<WebhookRecord>(this.sub, {
        ...(after !== null ? { gte: keyAfter(after) } : {}),
        limit: INDEX_PAGE,
      });
      if (page.length === 0) break;
      const batch = page.flatMap(({ value }) => ops(value));
      if (batch.length > 0) await this.store.commit(batch);
      after = page[page.length - 1]!.key;
    }
    await this.store.commit([{ type: 'put', sub: this.meta, key: step, value: true }]);
  }

  private sealHeaders(headers: Record<string, string>): StoredHeaders {
    const names = Object.keys(headers);
    return { names, sealed: names.length === 0 ? null : sealSecret(this.secretKey, JSON.stringify(headers)) };
  }

  /** A webhook's custom headers with their values (the dispatcher's delivery). */
  headersOf(w: WebhookRecord): Record<string, string> {
    return w.headers.sealed === null ? {} : (JSON.parse(openSecret(this.secretKey, w.headers.sealed)) as Record<string, string>);
  }

  /** Every registration of `owner`, oldest first: from memory when seen lately (synchronously), else from the store. */
  ofOwner(owner: string): WebhookRecord[] | Promise<WebhookRecord[]> {
    return this.owners.get(owner) ?? this.read(owner);
  }

  private async read(owner: string): Promise<WebhookRecord[]> {
    let list: WebhookRecord[] = [];
    for (let i = 0; i < READ_TRIES; i++) {
      const mark = { overtaken: false };
      const marks = this.reading.get(owner) ?? [];
      marks.push(mark);
      this.reading.set(owner, marks);
      try {
        const ids = await this.store.range<string>(this.ownerIndex, { gte: `${owner}!`, lt: `${owner}!~` });
        const records = await this.store.getMany<WebhookRecord>(
          this.sub,
          ids.map((e) => e.value),
        );
        list = sorted(records.filter((w): w is WebhookRecord => w !== undefined && w.owner === owner));
      } finally {
        const left = (this.reading.get(owner) ?? []).filter((m) => m !== mark);
        if (left.length > 0) this.reading.set(owner, left);
        else this.reading.delete(owner);
      }
      // A write of this owner that finished meanwhile updated memory if the owner was there: that is the newer word.
      const known = this.owners.get(owner);
      if (known !== undefined) return known;
      if (!mark.overtaken) {
        this.owners.set(owner, list);
        return list;
      }
    }
    return list;
  }

  /** After a write of `owner` is durable: memory follows (when the owner is there), reads under way read again. */
  private wrote(owner: string, change: (list: WebhookRecord[]) => WebhookRecord[]): void {
    for (const m of this.reading.get(owner) ?? []) m.overtaken = true;
    const list = this.owners.get(owner);
    if (list !== undefined) this.owners.set(owner, sorted(change(list)));
  }

  private async writeFor<T>(owner: string, write: () => Promise<T>): Promise<T> {
    this.writing.set(owner, (this.writing.get(owner) ?? 0) + 1);
    try {
      return await write();
    } finally {
      const left = (this.writing.get(owner) ?? 1) - 1;
      if (left > 0) this.writing.set(owner, left);
      else this.writing.delete(owner);
    }
  }

  private checkHeaders(headers: Record<string, string>): void {
    const names = Object.keys(headers);
    if (names.length > 16)
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'invalid input headers: at most 16', { field: 'headers', reason: 'too many', allowed: '16' });
    for (const n of names) {
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(n) || RESERVED_HEADER.test(n) || !/^[\t\x20-\x7e]{0,1024}$/.test(headers[n]!))
        throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input headers: ${n} cannot be set`, {
          field: 'headers',
          reason: `header ${n} is reserved or malformed`,
          allowed: 'token names other than content-type, host, x-svc-*, webhook-*; printable values',
        });
    }
  }

  async register(owner: string, input: WebhookInput): Promise<{ webhook: WebhookRecord; secret: string }> {
    checkOutboundUrl(input.url, this.policy);
    this.checkHeaders(input.headers ?? {});
    const loaded = this.ofOwner(owner);
    const list = loaded instanceof Promise ? await loaded : loaded;
    // Checked and reserved in one synchronous turn: parallel registrations cannot all pass the check before any commits.
    // (The newest list: memory when the owner is there — it follows every durable write — else the one just read.)
    const current = this.owners.get(owner) ?? list;
    const pending = this.registering.get(owner) ?? 0;
    if (current.length + pending >= WEBHOOKS_PER_IDENTITY)
      throw capReached('webhooks', WEBHOOKS_PER_IDENTITY, current.length + pending, 'delete one (DELETE /api/webhooks/:id) to register another');
    this.registering.set(owner, pending + 1);
    try {
      return await this.writeFor(owner, () => this.add(owner, input));
    } finally {
      const left = (this.registering.get(owner) ?? 1) - 1;
      if (left > 0) this.registering.set(owner, left);
      else this.registering.delete(owner);
    }
  }

  private async add(owner: string, input: WebhookInput): Promise<{ webhook: WebhookRecord; secret: string }> {
    const secret = newSecret();
    const w: WebhookRecord = {
      id: `wh_${randomHex(24)}`,
      owner,
      url: input.url,
      events: [...new Set(input.events)],
      headers: this.sealHeaders(input.headers ?? {}),
      metadata: input.metadata ?? {},
      status: 'enabled',
      last_delivery_at: null,
      failure_count: 0,
      secret: sealSecret(this.secretKey, secret),
      created_at: new Date(this.nowMs()).toISOString(),
    };
    await this.store.commit([
      { type: 'put', sub: this.sub, key: w.id, value: w },
      { type: 'put', sub: this.ownerIndex, key: `${owner}!${w.id}`, value: w.id },
    ]);
    this.wrote(owner, (list) => [...list, w]);
    return { webhook: w, secret };
  }

  async list(owner: string): Promise<WebhookRecord[]> {
    return [...(await this.ofOwner(owner))];
  }

  /** A webhook of `owner` (404 when there is none: another's webhook is not shown to exist). */
  async of(owner: string, id: string): Promise<WebhookRecord> {
    const w = (await this.ofOwner(owner)).find((x) => x.id === id);
    if (!w) throw new ServiceError(404, 'SVC_NOT_FOUND', `no webhook ${JSON.stringify(id)}`);
    return w;
  }

  /** A webhook by id, whoever owns it (the dispatcher): the store's record. */
  async get(id: string): Promise<WebhookRecord | undefined> {
    return this.store.get<WebhookRecord>(this.sub, id);
  }

  /**
   * Enabled webhooks of `owner` subscribed to `event`: synchronously when the owner is in memory, else read. The
   * sealing batch asks before it is built (Outbox.forOwner) and decides from the answer.
   */
  subscribers(owner: string, event: EventType): WebhookRecord[] | Promise<WebhookRecord[]> {
    const pick = (list: WebhookRecord[]) => list.filter((w) => w.status === 'enabled' && w.events.includes(event));
    const loaded = this.ofOwner(owner);
    return loaded instanceof Promise ? loaded.then(pick) : pick(loaded);
  }

  secretOf(w: WebhookRecord): string {
    return openSecret(this.secretKey, w.secret);
  }

  private async save(w: WebhookRecord): Promise<WebhookRecord> {
    await this.writeFor(w.owner, async () => {
      await this.store.commit([{ type: 'put', sub: this.sub, key: w.id, value: w }]);
      this.wrote(w.owner, (list) => list.map((x) => (x.id === w.id ? w : x)));
    });
    return w;
  }

  async update(owner: string, id: string, patch: Partial<WebhookInput> & { status?: WebhookStatus }): Promise<WebhookRecord> {
    if (patch.url !== undefined) checkOutboundUrl(patch.url, this.policy);
    if (patch.headers !== undefined) this.checkHeaders(patch.headers);
    return this.changing.run(id, async () => {
      const w = await this.of(owner, id);
      const next: WebhookRecord = {
        ...w,
        ...(patch.url !== undefined ? { url: patch.url } : {}),
        ...(patch.events !== undefined ? { events: [...new Set(patch.events)] } : {}),
        ...(patch.headers !== undefined ? { headers: this.sealHeaders(patch.headers) } : {}),
        ...(patch.metadata !== undefined ? { metadata: patch.metadata } : {}),
        // Enabling again starts the failure count afresh.
        ...(patch.status !== undefined ? { status: patch.status, ...(patch.status === 'enabled' ? { failure_count: 0 } : {}) } : {}),
      };
      return this.save(next);
    });
  }

  async remove(owner: string, id: string): Promise<void> {
    await this.changing.run(id, async () => {
      await this.of(owner, id);
      await this.writeFor(owner, async () => {
        await this.store.commit([
          { type: 'del', sub: this.sub, key: id },
          { type: 'del', sub: this.ownerIndex, key: `${owner}!${id}` },
        ]);
        this.wrote(owner, (list) => list.filter((x) => x.id !== id));
      });
    });
  }

  /** After an attempt: success resets the failure count; the 5th failed attempt of a delivery disables the webhook. */
  async recordAttempt(id: string, ok: boolean, atMs: number, disable: boolean): Promise<void> {
    await this.changing.run(id, async () => {
      const w = await this.get(id);
      if (!w) return;
      await this.save({
        ...w,
        last_delivery_at: new Date(atMs).toISOString(),
        failure_count: ok ? 0 : w.failure_count + 1,
        ...(disable ? { status: 'disabled' as const } : {}),
      });
    });
  }
}

function sorted(list: WebhookRecord[]): WebhookRecord[] {
  return [...list].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}
