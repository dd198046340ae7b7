// HTTP: the Koa app with every route group, the server, the /ws/stream socket and the metrics listener. The server
// listens here, when the node is wired: after every backfill, and before the mesh starts (its tick events carry the
// URL). Its stop runs first: stop accepting, end the long-lived streams, finish in-flight requests.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Router from '@koa/router';
import type { ChainService } from '../chain/service.js';
import { createApp } from '../http/app.js';
import { createHttpServer } from '../http/server.js';
import { StreamSlots } from '../http/stream-slots.js';
import { attachStreamSocket } from '../http/ws-stream.js';
import type { MeshService } from '../mesh/service.js';
import { signEvent, type MeshEvent } from '../mesh/wire.js';
import type { Capability } from './capability.js';
import type { AssistantsPart } from './assistants.js';
import type { ComputePart } from './compute.js';
import type { ConsensusPart } from './consensus.js';
import type { EconomyPart } from './economy.js';
import type { Foundation } from './foundation.js';
import type { IdentityPart } from './identity.js';
import type { PushPart } from './push.js';
import type { Webhooks } from '../webhooks/service.js';

export interface HttpParts {
  chain: ChainService;
  identity: IdentityPart;
  mesh: MeshService;
  economy: EconomyPart;
  webhooks: Webhooks;
  compute: ComputePart;
  push: PushPart;
  assistants: AssistantsPart;
  consensus: ConsensusPart;
}

export interface HttpPart {
  /** The HTTP router (every route; the OpenAPI document and its test walk it). */
  router: Router;
  url: string;
  /** http://host:port/metrics of the metrics listener, or null when it is off. */
  metricsUrl: string | null;
  /** WebSocket stream clients connected now (0 once stopped). */
  wsClients(): number;
  capability: Capability;
}

export async function wireHttp(f: Foundation, p: HttpParts): Promise<HttpPart> {
  const { config, logger, options } = f;
  const { mesh, economy, assistants } = p;
  const signMeshEvent = (type: string, body: unknown): Promise<MeshEvent> => signEvent(f.nodeIdentity.privateKey, f.nodeId, type, f.time.nowSvcond(), body);
  const keylessStreams = new StreamSlots({ perAddress: config.limits.keylessStreamsPerAddress, perNode: config.limits.keylessStreamsPerNode });
  const publicUrl = () => f.publicUrl.get() ?? '';
  // ---- The HTTP services (http/context.ts HttpServices): every route group's services, in one object. ----
  const { app, router } = createApp({
    config,
    logger,
    clock: f.clock,
    compute: p.compute.compute,
    identity: p.identity.identity,
    chain: p.chain,
    ledger: economy.ledger,
    quota: economy.quota,
    counters: f.counters,
    grants: economy.grants,
    tiers: economy.tiers,
    claims: economy.claims,
    folders: economy.folders,
    transfers: economy.transfers,
    remoteCharges: {
      payer: economy.remoteCharges,
      outcomes: economy.chargeOutcomes,
      settleSoon: (nonce, machineHome) => economy.chargeSettlement.soon(nonce, machineHome),
    },
    demoKeys: p.identity.demoKeys,
    nodeId: () => f.nodeId,
    publicUrl,
    mesh,
    signMeshEvent,
    contribution: { bonds: p.consensus.bonds, modes: p.consensus.modes },
    consensus: { challenges: p.consensus.challenges, slashing: p.consensus.slashing },
    record: { results: economy.results, publish: economy.publish },
    streams: p.push.streams,
    batches: p.compute.batches,
    webhooks: p.webhooks,
    llm: assistants.llm,
    reactor: assistants.reactor,
    agents: assistants.agents,
    genesis: assistants.genesis,
    agentStream: { count: assistants.agentStreams, heartbeatMs: options.agents?.heartbeatMs ?? 15_000 },
    keylessStreams,
    mmio: {
      queueDepth: () => p.compute.executor.queueDepth?.() ?? 0,
      agentsRunning: () => assistants.agents.runningCount(),
      agentsOf: async (zid) => ({ running: assistants.agents.runningOf(zid), total: await assistants.agents.totalOf(zid) }),
      streamsOf: (zid) => assistants.agentStreams.of(zid),
      reactorsOf: (zid) => assistants.reactor.countOf(zid),
    },
    metrics: f.metrics,
  });
  // ---- end of the HTTP services ----
  const server = createHttpServer(app.callback(), logger);
  server.keepAliveTimeout = 5000;
  const streamSocket = attachStreamSocket(server, {
    streams: p.push.streams,
    nodeId: () => f.nodeId,
    peerUrl: (id) => mesh.peerUrl(id),
    identity: p.identity.identity,
    logger,
    ...(options.wsHeartbeatMs !== undefined ? { heartbeatMs: options.wsHeartbeatMs } : {}),
    keylessStreams,
    meshSecret: config.mesh.secret,
  });
  await listen(server, config.port, config.host);
  const url = config.publicUrl ?? `http://${config.host}:${(server.address() as AddressInfo).port}`;
  f.publicUrl.bind(url);
  const metricsUrl = config.metrics.port !== null ? await f.metrics.listen(config.metrics.host, config.metrics.port) : null;
  let open = true;
  return {
    router,
    url,
    metricsUrl,
    wsClients: () => (open ? streamSocket.clients() : 0),
    capability: {
      name: 'http',
      stop: async () => {
        open = false;
        streamSocket.close();
        assistants.agentStreams.endAll();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await f.metrics.close();
      },
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}
