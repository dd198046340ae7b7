// Webhook registrations (spec 2.6, part 6 management operations): an identity's webhooks, kept in the store and in
// memory (the sealing batch decides synchronously which webhooks a result owes an event to). The signing secret is
// shown once, at registration, and stored encrypted. Part 3: a webhook is disabled when a delivery's 5th attempt fails.
import { ServiceError } from '../kernel/errors.js';
import type { Store, Sublevel } from '../store/db.js';
import { randomHex } from '../tally/ledger.js';
import type { EventType, WebhookStatus } from './events.js';
import { newSecret, openSecret, sealSecret, type SealedSecret } from './signing.js';
import { checkOutboundUrl, type UrlPolicy } from '../util/url-policy.js';

export const WEBHOOKS_PER_IDENTITY = 16;

export interface WebhookRecord {
  id: string;
  owner: string;
  url: string;
  events: EventType[];
  headers: Record<string, string>;
  metadata: Record<string, unknown>;
  status: WebhookStatus;
  last_delivery_at: string | null;
  /** Failed attempts since the last delivered one. */
  failure_count: number;
  secret: SealedSecret;
  created_at: string;
}

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
    headers: w.headers,
    metadata: w.metadata,
    status: w.status,
    last_delivery_at: w.last_delivery_at,
    failure_count: w.failure_count,
    created_at: w.created_at,
  };
}

export class WebhookRegistry {
  private readonly sub: Sublevel;
  private readonly byId = new Map<string, WebhookRecord>();
  private readonly byOwner = new Map<string, Set<string>>();
  /** Registrations past the cap check whose batch has not settled, per owner: they count against the cap. */
  private readonly registering = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly secretKey: Buffer,
    readonly policy: UrlPolicy,
    private readonly nowMs: () => number,
  ) {
    this.sub = store.sub('webhooks');
  }

  async load(): Promise<void> {
    for (const { value } of await this.store.range<WebhookRecord>(this.sub)) this.remember(value);
  }

  private remember(w: WebhookRecord): void {
    this.byId.set(w.id, w);
    let set = this.byOwner.get(w.owner);
    if (!set) this.byOwner.set(w.owner, (set = new Set()));
    set.add(w.id);
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
    // Checked and reserved in one synchronous turn: parallel registrations cannot all pass the check before any commits.
    const pending = this.registering.get(owner) ?? 0;
    if ((this.byOwner.get(owner)?.size ?? 0) + pending >= WEBHOOKS_PER_IDENTITY)
      throw new ServiceError(409, 'SVC_CONFLICT', `an identity has at most ${WEBHOOKS_PER_IDENTITY} webhooks`, { limit: WEBHOOKS_PER_IDENTITY });
    this.registering.set(owner, pending + 1);
    try {
      return await this.add(owner, input);
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
      headers: input.headers ?? {},
      metadata: input.metadata ?? {},
      status: 'enabled',
      last_delivery_at: null,
      failure_count: 0,
      secret: sealSecret(this.secretKey, secret),
      created_at: new Date(this.nowMs()).toISOString(),
    };
    await this.store.commit([{ type: 'put', sub: this.sub, key: w.id, value: w }]);
    this.remember(w);
    return { webhook: w, secret };
  }

  list(owner: string): WebhookRecord[] {
    return [...(this.byOwner.get(owner) ?? [])]
      .map((id) => this.byId.get(id)!)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /** A webhook of `owner` (404 when there is none: another's webhook is not shown to exist). */
  of(owner: string, id: string): WebhookRecord {
    const w = this.byId.get(id);
    if (!w || w.owner !== owner) throw new ServiceError(404, 'SVC_NOT_FOUND', `no webhook ${JSON.stringify(id)}`);
    return w;
  }

  get(id: string): WebhookRecord | undefined {
    return this.byId.get(id);
  }

  /** Enabled webhooks of `owner` subscribed to `event` (synchronous: the sealing batch asks). */
  subscribers(owner: string, event: EventType): WebhookRecord[] {
    const ids = this.byOwner.get(owner);
    if (!ids) return [];
    const out: WebhookRecord[] = [];
    for (const id of ids) {
      const w = this.byId.get(id)!;
      if (w.status === 'enabled' && w.events.includes(event)) out.push(w);
    }
    return out;
  }

  secretOf(w: WebhookRecord): string {
    return openSecret(this.secretKey, w.secret);
  }

  private async save(w: WebhookRecord): Promise<WebhookRecord> {
    await this.store.commit([{ type: 'put', sub: this.sub, key: w.id, value: w }]);
    if (this.byId.has(w.id)) this.byId.set(w.id, w);
    return w;
  }

  async update(owner: string, id: string, patch: Partial<WebhookInput> & { status?: WebhookStatus }): Promise<WebhookRecord> {
    const w = this.of(owner, id);
    if (patch.url !== undefined) checkOutboundUrl(patch.url, this.policy);
    if (patch.headers !== undefined) this.checkHeaders(patch.headers);
    const next: WebhookRecord = {
      ...w,
      ...(patch.url !== undefined ? { url: patch.url } : {}),
      ...(patch.events !== undefined ? { events: [...new Set(patch.events)] } : {}),
      ...(patch.headers !== undefined ? { headers: patch.headers } : {}),
      ...(patch.metadata !== undefined ? { metadata: patch.metadata } : {}),
      // Enabling again starts the failure count afresh.
      ...(patch.status !== undefined ? { status: patch.status, ...(patch.status === 'enabled' ? { failure_count: 0 } : {}) } : {}),
    };
    return this.save(next);
  }

  async remove(owner: string, id: string): Promise<void> {
    this.of(owner, id);
    await this.store.commit([{ type: 'del', sub: this.sub, key: id }]);
    this.byId.delete(id);
    this.byOwner.get(owner)?.delete(id);
  }

  /** After an attempt: success resets the failure count; the 5th failed attempt of a delivery disables the webhook. */
  async recordAttempt(id: string, ok: boolean, atMs: number, disable: boolean): Promise<void> {
    const w = this.byId.get(id);
    if (!w) return;
    await this.save({
      ...w,
      last_delivery_at: new Date(atMs).toISOString(),
      failure_count: ok ? 0 : w.failure_count + 1,
      ...(disable ? { status: 'disabled' as const } : {}),
    });
  }
}
