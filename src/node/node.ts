// The composition root, the only module that knows every part: wires the capabilities, starts them in the order
// listed here, and stops them backwards.
import type { NodeConfig } from '../config/schema.js';
import { wireAssistants } from './assistants.js';
import { Capabilities } from './capability.js';
import { openChain, wireChain } from './chain.js';
import { computePorts, wireCompute } from './compute.js';
import { wireConsensus } from './consensus.js';
import { wireCustody } from './custody.js';
import { wireEconomy } from './economy.js';
import { openFoundation, type Foundation, type NodeOptions } from './foundation.js';
import { NodeHandles, type Wired } from './handles.js';
import { wireHealth } from './health.js';
import { wireHttp } from './http.js';
import { wireIdentity } from './identity.js';
import { wireMesh } from './mesh.js';
import { wirePush, wireWebhooks } from './push.js';

export type { NodeOptions } from './foundation.js';
// Every part in dependency order (loads and backfills run here); a part that needs a later one reads it through a port.
async function wire(config: NodeConfig, options: NodeOptions): Promise<Wired> {
  const foundation = await openFoundation(config, options);
  try {
    return await wireParts(foundation);
  } catch (err) {
    // The store is closed again (the HTTP port taken, a backfill that failed): the data dir is free to remove or reuse.
    await foundation.store.close().catch(() => undefined);
    throw err;
  }
}

async function wireParts(foundation: Foundation): Promise<Wired> {
  const chain = await openChain(foundation);
  const mesh = wireMesh(foundation, chain);
  const identity = await wireIdentity(foundation, chain, mesh.mesh);
  const economy = await wireEconomy(foundation, chain, identity.identity, mesh.mesh);
  const webhooks = await wireWebhooks(foundation, economy.ledger);
  const ports = computePorts();
  const compute = wireCompute(foundation, { ...economy, webhooks, mesh: mesh.mesh, ...ports });
  const push = await wirePush(foundation, webhooks, compute.compute, economy.ledger, mesh.mesh);
  const assistants = await wireAssistants(foundation, { chain, identity: identity.identity, ...economy, ...compute, mesh: mesh.mesh });
  const consensus = await wireConsensus(foundation, mesh, economy, { ...compute, ...ports }, identity);
  const custody = await wireCustody(foundation, mesh, consensus, identity, economy, chain);
  const chainParts = wireChain(foundation, chain, mesh.mesh, { ...economy, identity: identity.identity });
  const health = wireHealth(foundation, { mesh: mesh.mesh, economy, webhooks, consensus, compute, identity: identity.identity });
  // Start order; stop runs it backwards. The store closes last, the solver engine after all that runs on it; identity gossip
  // and slug-loss hooks precede the mesh, deliveries and votes follow it. HTTP serves the routes in this order, last to start.
  const served = [
    foundation.capability,
    compute.engine,
    identity.capability,
    chainParts.capability,
    mesh.capability,
    chainParts.slugLosses,
    assistants.capability,
    economy.capability,
    consensus.capability,
    custody.capability,
    push.capability,
    compute.batchRuns,
    health.capability,
  ];
  const routes = served.flatMap((c) => c.routes ?? []);
  const parts = {
    ...identity,
    ...economy,
    ...compute,
    ...push,
    ...health,
    webhooks,
    consensus,
    mesh: mesh.mesh,
    assistants,
    routes,
    checkedHome: custody.checkedHome,
  };
  const http = await wireHttp(foundation, parts);
  const capabilities = new Capabilities([...served, http.capability]);
  return { foundation, chain, mesh, identity, economy, webhooks, compute, push, assistants, consensus, custody, health, http, capabilities };
}

export class SvcNode extends NodeHandles {
  constructor(
    readonly config: NodeConfig,
    private readonly options: NodeOptions = {},
  ) {
    super();
  }

  /** Wires and starts every part; one that fails stops what started before it is thrown (its store closed). */
  async start(): Promise<this> {
    this.wired = await wire(this.config, this.options);
    try {
      await this.wired.capabilities.start(this.wired.mesh.listeners);
    } catch (err) {
      await this.wired.capabilities.stop().catch(() => undefined);
      throw err;
    }
    return this;
  }

  /** Stop accepting, finish in-flight requests, leave the mesh, close the store. */
  async stop(): Promise<void> {
    if (!this.wired) return;
    await this.wired.capabilities.stop();
    this.logger.info({ node: this.nodeId }, 'stopped');
  }
}
