// What every route group may use, whatever it serves: the node's configuration, logger, time and addresses, and the
// few things every kind of route shares (key resolution, the home-node rule, mesh signing, the self-API, discovery,
// metrics). A group's own services are given to it when it is built (route-group.ts), never reached through the kit.
import type Router from '@koa/router';
import type { Logger } from 'pino';
import type { NodeConfig } from '../config/schema.js';
import type { MeshEvent } from '../mesh/wire.js';
import type { Time } from '../util/time.js';
import type { AuthDeps } from './auth.js';
import type { HomeLinks } from './forward.js';
import type { IdempotentWrites } from './idempotency.js';
import type { NodeMetrics } from './metrics.js';
import type { SelfApi } from './self-request.js';

export interface HttpKit {
  config: NodeConfig;
  logger: Logger;
  time: Time;
  /** This node's peer id. */
  nodeId: () => string;
  /** This node's HTTP URL as other nodes reach it. */
  publicUrl: () => string;
  /** What a key resolves to (auth.ts): every keyed route resolves its caller the same way. */
  auth: AuthDeps;
  /** Where other nodes' HTTP APIs are, for the home-node rule (forward.ts). */
  homes: HomeLinks;
  /** A mesh event signed by this node's Ed25519 key at the current tick. */
  signMeshEvent: (type: string, body: unknown) => Promise<MeshEvent>;
  /**
   * Requests to this node's own routes on a caller's behalf (self-request.ts): the app's first middleware trusts the
   * caller address they state; the MCP and chat tools send them.
   */
  selfApi: SelfApi;
  /** The discovery document of the routes on `router` (discovery.ts): GET /api, the MCP card and every 404 show it. */
  discovery: (router: Router) => Record<string, unknown>;
  /** Writes sent with an Idempotency-Key applied once (idempotency.ts). Absent: the header is not read. */
  idempotentWrites?: IdempotentWrites;
  /** Prometheus metrics (metrics.ts): requests by route, status and latency. Absent: not counted. */
  metrics?: NodeMetrics;
}
