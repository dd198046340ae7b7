// What every route group may use, whatever it serves: the node's configuration, logger, time and addresses. A group's
// own services are given to it when it is built (route-group.ts), never reached through the kit.
import type { Logger } from 'pino';
import type { NodeConfig } from '../config/schema.js';
import type { Time } from '../util/time.js';

export interface HttpKit {
  config: NodeConfig;
  logger: Logger;
  time: Time;
  /** This node's peer id. */
  nodeId: () => string;
  /** This node's HTTP URL as other nodes reach it. */
  publicUrl: () => string;
}
