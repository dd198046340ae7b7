// Mesh, DNS and transparency routes (spec 2.7, 4.8, part 5 item 8). Thin: the mesh service does the work.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { MeshService } from '../../mesh/service.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import type { ChainService } from '../../chain/service.js';
import {
  dnsLookupResponse,
  dnsRecordResponse,
  dnsRegisteredResponse,
  dnsStatusResponse,
  gossipAcceptedResponse,
  meshEventsResponse,
  meshPeersResponse,
  meshStatusResponse,
  networkSnapshot,
  signedMeshEventResponse,
  transparencyBreakdownResponse,
  transparencyHistoryResponse,
  transparencyRevenueResponse,
} from '../responses.js';
import { requireKey } from '../auth.js';
import { body, describes, query, responds, validate } from '../validate.js';

const eventsQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50), order: z.enum(['arrival', 'tick']).default('arrival') }).strict();
const dnsName = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, 'lower-case DNS-style name')
  .max(253);
const dnsRegisterBody = z.object({ name: dnsName, url: z.string().url().optional(), multiaddrs: z.array(z.string().min(1)).max(16).optional() }).strict();
const resolveQuery = z.object({ name: dnsName }).strict();
const lookupQuery = z.object({ peerId: z.string().min(1).max(128) }).strict();
const historyQuery = z.object({ n: z.coerce.number().int().min(1).max(100).default(10) }).strict();

export interface MeshRouteServices {
  /** Null: a node without a mesh (its routes answer 503 MESH_DISABLED). */
  mesh: MeshService | null;
  chain: ChainService;
}

export function meshRoutes(s: MeshRouteServices): RouteGroup {
  return { name: 'mesh', register: (router, kit) => registerMeshRoutes(router, kit, s) };
}

function registerMeshRoutes(router: Router, kit: HttpKit, s: MeshRouteServices): void {
  const mesh = (): MeshService => {
    if (!s.mesh) throw new ServiceError(503, 'MESH_DISABLED', 'this node runs without a mesh');
    return s.mesh;
  };
  const auth = kit.auth;

  router.post(
    '/api/mesh/gossip',
    responds(gossipAcceptedResponse),
    body(signedMeshEventResponse, { inHandler: true }),
    describes({ auth: 'node' }),
    async (ctx) => {
      ctx.body = await mesh().acceptHttpEvent(ctx.request.body, ctx.get('x-node-handshake') || undefined);
    },
  );

  router.get('/api/mesh/status', responds(meshStatusResponse), async (ctx) => {
    // Forked checkpoints of state machines seen here (chain/checkpoints.ts): kept as evidence, reported.
    ctx.body = { ...(await mesh().status()), chainCheckpointForks: s.chain.checkpoints.forkReport() };
  });

  router.get('/api/mesh/peers', responds(meshPeersResponse), async (ctx) => {
    const m = mesh();
    const status = await m.status();
    ctx.body = { nodeId: status.nodeId, enabled: status.enabled, reachability: status.reachability, connections: status.connections, peers: m.knownPeers() };
  });

  router.get('/api/mesh/events', responds(meshEventsResponse), query(eventsQuery), async (ctx) => {
    const q = validate(eventsQuery, ctx.query);
    const events = await mesh().recentEvents(q.limit, q.order);
    ctx.body = { count: events.length, order: q.order, events };
  });

  /**
   * A name for this node: its peer id, its URL and its multiaddrs, nothing a caller picks (any identity may register,
   * so a name must not be made to point elsewhere). A url or multiaddrs in the body must be this node's own.
   */
  router.post('/api/dns/register', responds(dnsRegisteredResponse, { status: 201 }), requireKey(auth), body(dnsRegisterBody), async (ctx) => {
    const body = validate(dnsRegisterBody, ctx.request.body);
    const m = mesh();
    const own = { url: kit.publicUrl(), multiaddrs: m.multiaddrs() };
    if (body.url !== undefined && body.url !== own.url) {
      throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input url: a name points at the node that registers it (${own.url})`, {
        field: 'url',
        reason: 'not this node',
        allowed: [own.url],
      });
    }
    const foreign = body.multiaddrs?.find((a) => !own.multiaddrs.includes(a));
    if (foreign !== undefined) {
      throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input multiaddrs: ${foreign} is not an address of this node`, {
        field: 'multiaddrs',
        reason: 'not this node',
        allowed: own.multiaddrs,
      });
    }
    const { record, winner, won } = await m.dns.register(body.name, { peerId: kit.nodeId(), url: own.url, multiaddrs: body.multiaddrs ?? own.multiaddrs });
    if (!won)
      throw new ServiceError(409, 'SVC_CONFLICT', `the name ${body.name} is held by ${winner.peerId}, which claimed it first`, {
        field: 'name',
        name: body.name,
        won,
        record,
        winner,
      });
    ctx.status = 201;
    ctx.body = { name: body.name, won, record, winner };
  });

  router.get('/api/dns/resolve', responds(dnsRecordResponse), query(resolveQuery), (ctx) => {
    const { name } = validate(resolveQuery, ctx.query);
    const rec = mesh().dns.resolve(name);
    if (!rec) throw new ServiceError(404, 'SVC_NOT_FOUND', `no DNS record for ${name}`);
    ctx.body = rec;
  });

  router.get('/api/dns/lookup', responds(dnsLookupResponse), query(lookupQuery), (ctx) => {
    const { peerId } = validate(lookupQuery, ctx.query);
    ctx.body = { peerId, names: mesh().dns.lookup(peerId) };
  });

  router.get('/api/dns/status', responds(dnsStatusResponse), (ctx) => {
    ctx.body = mesh().dns.status();
  });

  const latestSnapshot: Middleware = (ctx) => {
    const snap = mesh().oracle.now();
    if (!snap) throw new ServiceError(404, 'SVC_NOT_FOUND', 'no network snapshot yet: one is written every 4 ticks');
    ctx.body = snap;
  };
  router.get('/api/transparency/now', responds(networkSnapshot), latestSnapshot);
  // Part 4.8 lists transparency among the /api/tally/* routes: the oracle's latest snapshot, as /api/transparency/now.
  router.get('/api/tally/transparency', responds(networkSnapshot), latestSnapshot);

  router.get('/api/transparency/history', responds(transparencyHistoryResponse), query(historyQuery), async (ctx) => {
    const { n } = validate(historyQuery, ctx.query);
    const snapshots = await mesh().oracle.history(n);
    ctx.body = { count: snapshots.length, snapshots };
  });

  router.get('/api/transparency/breakdown', responds(transparencyBreakdownResponse), (ctx) => {
    ctx.body = mesh().oracle.breakdown();
  });

  router.get('/api/transparency/revenue', responds(transparencyRevenueResponse), async (ctx) => {
    ctx.body = await mesh().oracle.revenue();
  });
}
