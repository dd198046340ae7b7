// Webhooks as the routes and the other services see them (part 6): registrations, the outbox and its dispatcher.
import { ServiceError } from '../kernel/errors.js';
import type { Caller } from '../records/types.js';
import type { ComputationFailure } from '../compute/service.js';
import type { BatchEvents } from '../compute/batches.js';
import { randomHex } from '../util/random-hex.js';
import type { DeliveryStatus } from './events.js';
import type { Dispatcher } from './dispatcher.js';
import type { DeliveryRecord, Outbox } from './outbox.js';
import type { WebhookInput, WebhookRecord, WebhookRegistry } from './registry.js';

export class Webhooks implements BatchEvents {
  constructor(
    readonly registry: WebhookRegistry,
    readonly outbox: Outbox,
    readonly dispatcher: Dispatcher,
  ) {}

  private zidOf(caller: Caller): string {
    if (caller.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'webhooks belong to an identity: use an identity key (sk_ or zsm_)');
    return caller.zid;
  }

  register(caller: Caller, input: WebhookInput): Promise<{ webhook: WebhookRecord; secret: string }> {
    return this.registry.register(this.zidOf(caller), input);
  }

  list(caller: Caller): Promise<WebhookRecord[]> {
    return this.registry.list(this.zidOf(caller));
  }

  get(caller: Caller, id: string): Promise<WebhookRecord> {
    return this.registry.of(this.zidOf(caller), id);
  }

  async assertOwned(caller: Caller, id: string): Promise<void> {
    await this.get(caller, id);
  }

  update(caller: Caller, id: string, patch: Parameters<WebhookRegistry['update']>[2]): Promise<WebhookRecord> {
    return this.registry.update(this.zidOf(caller), id, patch);
  }

  remove(caller: Caller, id: string): Promise<void> {
    return this.registry.remove(this.zidOf(caller), id);
  }

  async test(caller: Caller, id: string): Promise<{ delivery_id: string; test_id: string }> {
    return this.outbox.test(await this.get(caller, id));
  }

  async deliveries(caller: Caller, id: string, limit: number, status?: DeliveryStatus): Promise<DeliveryRecord[]> {
    await this.get(caller, id);
    return this.outbox.list(id, limit, status);
  }

  /** BatchEvents: batch.progress / batch.complete / batch.error. */
  async emit(
    owner: string,
    event: 'batch.progress' | 'batch.complete' | 'batch.error',
    batchId: string,
    data: Record<string, unknown>,
    webhook: string | null,
  ) {
    await this.outbox.enqueue(owner, event, batchId, data, webhook);
  }

  /** computation.error for an identity's failed computation (its own batch: nothing was sealed). */
  failed(f: ComputationFailure): void {
    void this.outbox
      .enqueue(f.owner, 'computation.error', `err_${randomHex(24)}`, {
        error: { code: f.code, message: f.message, status: f.status },
        kind: f.kind,
        solver: f.solver,
      })
      .catch(() => undefined);
  }
}
