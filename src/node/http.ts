// HTTP: the Koa app with every route group, the server, the /ws/stream socket and the metrics listener. The server
// listens here, when the node is wired: after every backfill, and before the mesh starts (its tick events carry the
// URL). Its stop runs first: stop accepting, end the long-lived streams, finish in-flight requests.
import { writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type Router from '@koa/router';
import { Library } from '../compute/library.js';
import type { ComputeService } from '../compute/service.js';
import { createApp } from '../http/app.js';
import { discoveryOf } from '../http/discovery.js';
import { HungHomes } from '../http/home-health.js';
import type { HttpKit } from '../http/kit.js';
import type { RouteGroup } from '../http/route-group.js';
import { dashboardRoutes } from '../http/routes/dashboard.js';
import { docsRoutes } from '../http/routes/docs.js';
import { systemRoutes } from '../http/routes/system.js';
import type { Warning } from '../health/warnings.js';
import type { IdentityService } from '../identity/service.js';
import type { StreamService } from '../streams/channels.js';
import type { Ledger } from '../tally/ledger.js';
import type { TierBook } from '../tally/tiers.js';
import { createHttpServer } from '../http/server.js';
import { IdempotentAnswers } from '../http/idempotent-answers.js';
import { idempotentWrites } from '../http/idempotency.js';
import { StreamSlots } from '../http/stream-slots.js';
import { attachStreamSocket } from '../http/ws-stream.js';
import type { MeshService } from '../mesh/service.js';
import { PEER_HTTP_PROTOCOL, meshPeerLinks } from '../mesh/peer-http.js';
import { PEER_STREAM_PROTOCOL, meshPeerStreams } from '../mesh/peer-stream.js';
import { HUB_DEFAULTS } from '../streams/hub.js';
import { peerEntrance, peerStreamEntrance } from '../http/peer-entrance.js';
import { signEvent } from '../mesh/wire.js';
import type { SolverExecutor } from '../compute/executor.js';
import type { Sealer } from '../compute/sealer.js';
import type { TransferDelivery } from '../tally/transfer-delivery.js';
import type { SettlementLoop } from '../tally/remote-charge-delivery.js';
import type { Webhooks } from '../webhooks/service.js';
import { TICK_SECONDS_EXACT } from '../kernel/clock.js';
import { BACKLOG_COUNT_MAX, peerHealth, type MachineWatch, type PeerView } from '../http/machine-stats.js';
import type { Capability } from './capability.js';
import type { ConsensusPart } from './consensus.js';
import type { AssistantsPart } from './assistants.js';
import { LOCAL_URL_FILE, type Foundation } from './foundation.js';

/** Ticks between sweeps of expired idempotent answers (about 13 minutes). */
const IDEMPOTENT_SWEEP_TICKS = 1000;

export interface HttpParts {
  identity: IdentityService;
  /** The home of an identity homed here, checked after a start (node/custody.ts checkedHome). */
  checkedHome?: (zid: string) => Promise<string>;
  mesh: MeshService;
  compute: ComputeService;
  /** Sealed results as answered: an idempotent seal's answer is read back from them (http/idempotent-answers.ts). */
  ledger: Pick<Ledger, 'getResultBytes'>;
  tiers: TierBook;
  streams: StreamService;
  assistants: AssistantsPart;
  /** The open health warnings (node/health.ts), listed by /api/health. */
  warnings: () => Warning[];
  /** What the machine's health reads: queues and backlogs, the node's own bond and mode. */
  executor: SolverExecutor;
  sealer: Sealer;
  transferDelivery: TransferDelivery;
  chargeSettlement: SettlementLoop;
  webhooks: Webhooks;
  consensus: Pick<ConsensusPart, 'bonds' | 'operator' | 'challenges'>;
  /** Every other capability's route groups, in the node's list order (node/node.ts). */
  routes: readonly RouteGroup[];
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
  const { mesh, assistants } = p;
  const nodeId = () => f.nodeId;
  const registry = p.compute.registry;
  const library = new Library(registry);
  const keylessStreams = new StreamSlots({ perAddress: config.limits.keylessStreamsPerAddress, perNode: config.limits.keylessStreamsPerNode });
  const streamOverMesh = meshPeerStreams(mesh, config.mesh.secret);
  const idempotentAnswers = new IdempotentAnswers(f.store, f.time.nowMs, (id) => p.ledger.getResultBytes(id));
  const kit: HttpKit = {
    config,
    logger,
    time: f.time,
    nodeId,
    publicUrl: () => f.publicUrl.get() ?? '',
    auth: { identity: p.identity, nodeId, ...(p.checkedHome === undefined ? {} : { checkedHome: p.checkedHome }) },
    homes: { ...meshPeerLinks(mesh, config.mesh.secret), streamOverMesh, hung: new HungHomes() },
    signMeshEvent: (type, body) => signEvent(f.nodeIdentity.privateKey, f.nodeId, type, f.time.nowSvcond(), body),
    selfApi: assistants.selfApi,
    discovery: discoveryOf({ config, nodeId, registry, library, tiers: p.tiers }),
    idempotentWrites: idempotentWrites(idempotentAnswers, logger, (key, asker) => p.identity.resolveKey(key, asker)),
    metrics: f.metrics,
  };
  // The field status's view of the mesh: how far the peers heard agree with this node (none without a mesh).
  const coherence = async () => {
    const st = await mesh.status();
    return st.enabled ? { coherenceScore: st.coherenceScore, peers: st.meshSize - 1, recentGossipCount: st.recentGossipCount } : null;
  };
  // The node's own routes first (health, discovery, pulse), the documents last.
  const { bonds, operator } = p.consensus;
  const dashboard = dashboardRoutes({
    machine: f.machine,
    nowSvcond: f.time.nowSvcond,
    meshEnabled: () => mesh.enabled,
    mode: () => operator.mode(),
    ownBond: () => bonds.own(),
    slashState: (bondId, now) => bonds.slashState(bondId, now),
    warnings: p.warnings,
  });
  const own = {
    system: systemRoutes({ registry, library, tiers: p.tiers, keylessStreams, coherence, warnings: p.warnings }),
    pages: [docsRoutes(), dashboard],
  };
  const { app, router } = createApp(kit, [own.system, ...p.routes, ...own.pages]);
  const http = createHttpServer(app.callback(), logger);
  const server = http.server;
  server.keepAliveTimeout = 5000;
  const streamSocket = attachStreamSocket(server, {
    streams: p.streams,
    nodeId,
    peerUrl: (id) => mesh.peerUrl(id),
    identity: p.identity,
    logger,
    ...(options.wsHeartbeatMs !== undefined ? { heartbeatMs: options.wsHeartbeatMs } : {}),
    keylessStreams,
    retryAfterSeconds: Math.max(1, Math.ceil(config.mesh.forwardTimeoutMs / 1000)),
    meshSecret: config.mesh.secret,
    keyedPerIdentity: config.limits.keyedStreamsPerIdentity,
    overMesh: streamOverMesh ? { open: streamOverMesh, knows: (id) => mesh.peerUrl(id) !== null || mesh.peers().some((p) => p.peerId === id) } : null,
  });
  await listen(server, config.port, config.host);
  let url: string;
  let metricsUrl: string | null;
  try {
    url = config.publicUrl ?? `http://${config.host}:${(server.address() as AddressInfo).port}`;
    f.publicUrl.bind(url);
    const local = loopbackOf(server.address() as AddressInfo);
    await writeFile(join(config.dataDir, LOCAL_URL_FILE), `http://${local.host.includes(':') ? `[${local.host}]` : local.host}:${local.port}\n`);
    // The API's libp2p entrance, for peers that cannot reach the URL: its requests go to the server over loopback.
    const entrance = peerEntrance({
      selfApi: assistants.selfApi,
      target: () => loopbackOf(server.address() as AddressInfo),
      meshSecret: config.mesh.secret,
      nowSvcond: f.time.nowSvcond,
      logger,
    });
    await mesh.handleStream(PEER_HTTP_PROTOCOL, (stream, peer) => void entrance(stream, peer));
    const streamEntrance = peerStreamEntrance({
      target: () => loopbackOf(server.address() as AddressInfo),
      meshSecret: config.mesh.secret,
      nowSvcond: f.time.nowSvcond,
      maxQueuedBytes: HUB_DEFAULTS.maxBufferedBytes,
      logger,
    });
    await mesh.handleStream(PEER_STREAM_PROTOCOL, (stream, peer) => void streamEntrance(stream, peer));
    metricsUrl = config.metrics.port !== null ? await f.metrics.listen(config.metrics.host, config.metrics.port) : null;
  } catch (err) {
    // A step after the API's listener failed (the metrics port taken, the data dir): its port is given back, as the
    // store is (node.ts), so an embedder may start again in the same process.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw err;
  }
  let open = true;
  return {
    router,
    url,
    metricsUrl,
    wsClients: () => (open ? streamSocket.clients() : 0),
    capability: {
      name: 'http',
      routes: [own.system, ...own.pages],
      tickers: [{ name: 'idempotent-answers-sweep', everyTicks: IDEMPOTENT_SWEEP_TICKS, run: () => idempotentAnswers.sweep() }],
      // Last to start: the node is ready when this line is logged (the mesh has its addresses by now).
      start: async () => {
        await f.machine.start(machineWatch(f, p));
        const fields = { url, node: f.nodeId, dataDir: config.dataDir, multiaddrs: mesh.multiaddrs(), mesh: mesh.enabled, metrics: metricsUrl };
        f.readyLogger.info(fields, 'listening');
      },
      stop: async () => {
        open = false;
        await f.machine.stop();
        streamSocket.close();
        assistants.agentStreams.endAll();
        await http.close();
        await f.metrics.close();
      },
    },
  };
}

/** The queues and peers the machine's health samples (machine-stats.ts). */
function machineWatch(f: Foundation, p: HttpParts): MachineWatch {
  const { mesh } = p;
  return {
    queues: async () => {
      const webhooks = await p.webhooks.outbox.backlog(BACKLOG_COUNT_MAX);
      return {
        solver_waiting: p.executor.queueDepth?.() ?? 0,
        sealing: p.sealer.inFlight(),
        store_commits: f.store.progress.commits - f.store.progress.settled,
        webhooks,
        // The delivery loops hold their outboxes in memory: read there, not counted again in the store.
        transfers: p.transferDelivery.queued,
        settlements: p.chargeSettlement.queued,
        consensus_deliveries: p.consensus.challenges.deliveryStats().queued ?? 0,
      };
    },
    peers: async (): Promise<PeerView[]> => {
      if (!mesh.enabled) return [];
      const status = await mesh.status();
      const refused = mesh.refusals().handshake;
      const view = (
        peerId: string,
        q: { url: string | null; connected: boolean; lastTick: number | null; mode: string | null; bondId: string | null; every?: number },
      ): PeerView => {
        // Judged against the interval the peer says it ticks at (its tick events' `every`).
        const interval = q.every ?? status.tickEvery;
        const ticksSinceHeard = q.lastTick === null ? null : Math.max(0, status.svcond - q.lastTick);
        const handshakeFailures = refused[peerId] ?? 0;
        return {
          peer_id: peerId,
          url: q.url,
          health: peerHealth({ connected: q.connected, ticksSinceHeard, intervalTicks: interval, handshakeFailures }),
          connected: q.connected,
          last_tick: q.lastTick,
          last_heard_s: ticksSinceHeard === null ? null : Math.round(ticksSinceHeard * TICK_SECONDS_EXACT * 10) / 10,
          interval_s: Math.round(interval * TICK_SECONDS_EXACT * 1000) / 1000,
          handshake_failures: handshakeFailures,
          mode: q.mode,
          bond_id: q.bondId,
        };
      };
      const peers = status.peers.map((q) => view(q.peerId, q));
      // A peer whose every message was refused is in no peer list: shown from its refusals alone.
      for (const peerId of Object.keys(refused))
        if (!peers.some((q) => q.peer_id === peerId)) peers.push(view(peerId, { url: null, connected: false, lastTick: null, mode: null, bondId: null }));
      return peers;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

/** Where this process reaches a server listening at `a` (a wildcard address through loopback). */
function loopbackOf(a: AddressInfo): { host: string; port: number } {
  const host = a.address === '0.0.0.0' || a.address === '::' ? '127.0.0.1' : a.address;
  return { host, port: a.port };
}
