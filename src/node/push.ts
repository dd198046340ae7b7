// Push: what the node sends without being asked — webhooks (registry, outbox, dispatcher), streams (channels, their
// hub, autotick). The webhooks are wired before the compute service (a seal enqueues its webhooks in its own batch);
// the streams after it (a channel's tick is a computation).
import type { ComputeService } from '../compute/service.js';
import { sessionAtRestKey } from '../streams/secure.js';
import { StreamService } from '../streams/channels.js';
import { StreamHub } from '../streams/hub.js';
import { Autotick } from '../streams/autotick.js';
import type { Ledger } from '../tally/ledger.js';
import { WebhookRegistry } from '../webhooks/registry.js';
import { Outbox } from '../webhooks/outbox.js';
import { Dispatcher } from '../webhooks/dispatcher.js';
import { httpSender } from '../webhooks/sender.js';
import { Webhooks } from '../webhooks/service.js';
import { streamRoutes } from '../http/routes/streams.js';
import { webhookRoutes } from '../http/routes/webhooks.js';
import type { MeshService } from '../mesh/service.js';
import type { Capability } from './capability.js';
import type { Foundation } from './foundation.js';

export async function wireWebhooks(f: Foundation, ledger: Ledger): Promise<Webhooks> {
  const { config, store, time } = f;
  const registry = new WebhookRegistry(store, f.keys.webhookSecret, config.webhooks, time.nowMs, config.limits.identityCacheMax);
  await registry.load();
  const outbox = new Outbox(store, registry, time.nowMs);
  const dispatcher = new Dispatcher({
    outbox,
    registry,
    send: f.options.webhookSender ?? httpSender(config.webhooks, config.webhooks.responseTimeoutMs),
    nowMs: time.nowMs,
    resultBytes: (id) => ledger.getResultBytes(id),
    onError: (err) => f.logger.warn({ err: String(err) }, 'webhook delivery failed'),
  });
  return new Webhooks(registry, outbox, dispatcher);
}

export interface PushPart {
  streams: StreamService;
  autotick: Autotick;
  capability: Capability;
}

export async function wirePush(f: Foundation, webhooks: Webhooks, compute: ComputeService, ledger: Ledger, mesh: MeshService): Promise<PushPart> {
  const streams = new StreamService({
    store: f.store,
    clock: f.clock,
    compute,
    resultBytes: (id) => ledger.getResultBytes(id),
    linkKey: f.keys.streamLink,
    sessionKey: sessionAtRestKey(f.keys.credentialSecret),
    hub: new StreamHub(),
    limits: { channelsPerIdentity: f.config.limits.streamChannelsPerIdentity, sessionsPerIdentity: f.config.limits.secureSessionsPerIdentity },
  });
  await streams.load();
  const autotick = new Autotick({
    streams,
    clock: f.clock,
    onError: (channel, err) => f.logger.warn({ channel, err: String(err) }, 'autotick failed'),
  });
  const capability: Capability = {
    name: 'push',
    routes: [streamRoutes({ streams, mesh, verify: (candidate) => compute.verifyResult(candidate) }), webhookRoutes({ webhooks })],
    start: () => {
      autotick.start();
      // Deliveries owed before a stop or a crash resume on their schedule.
      if (!f.options.webhookManualDispatch) webhooks.dispatcher.start();
    },
    stop: async () => {
      await autotick.stop();
      await webhooks.dispatcher.stop();
    },
  };
  return { streams, autotick, capability };
}
