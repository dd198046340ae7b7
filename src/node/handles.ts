// The parts of a started node that tests, benchmarks and the CLI read as node.<part>: each a getter over the wired
// parts (src/node/node.ts wires them). Read before start, a part throws.
import type { Logger } from 'pino';
import type { ChainService } from '../chain/service.js';
import type { Clock } from '../kernel/clock.js';
import type { ExecutedBy } from '../records/types.js';
import type { ResultLookup } from '../tally/record.js';
import type { AssistantsPart } from './assistants.js';
import type { Capabilities } from './capability.js';
import type { ComputePart } from './compute.js';
import type { ConsensusPart } from './consensus.js';
import type { CustodyPart } from './custody.js';
import type { EconomyPart } from './economy.js';
import type { Foundation } from './foundation.js';
import type { HealthPart } from './health.js';
import type { HttpPart } from './http.js';
import type { IdentityPart } from './identity.js';
import type { MeshPart } from './mesh.js';
import type { PushPart } from './push.js';
import type { Webhooks } from '../webhooks/service.js';

export interface Wired {
  foundation: Foundation;
  chain: ChainService;
  mesh: MeshPart;
  identity: IdentityPart;
  economy: EconomyPart;
  webhooks: Webhooks;
  compute: ComputePart;
  push: PushPart;
  assistants: AssistantsPart;
  consensus: ConsensusPart;
  custody: CustodyPart;
  health: HealthPart;
  http: HttpPart;
  capabilities: Capabilities;
}

export class NodeHandles {
  protected wired: Wired | null = null;

  protected get w(): Wired {
    if (!this.wired) throw new Error('the node is not started');
    return this.wired;
  }
  get logger(): Logger {
    return this.w.foundation.logger;
  }
  get clock(): Clock {
    return this.w.foundation.clock;
  }
  get store() {
    return this.w.foundation.store;
  }
  get counters() {
    return this.w.foundation.counters;
  }
  get metrics() {
    return this.w.foundation.metrics;
  }
  get machine() {
    return this.w.foundation.machine;
  }
  get nodeIdentity() {
    return this.w.foundation.nodeIdentity;
  }
  get nodeId(): string {
    return this.w.foundation.nodeId;
  }
  get receiptKey(): Buffer {
    return this.w.foundation.keys.receipt;
  }
  get chain(): ChainService {
    return this.w.chain;
  }
  get identity() {
    return this.w.identity.identity;
  }
  get mesh() {
    return this.w.mesh.mesh;
  }
  get ledger() {
    return this.w.economy.ledger;
  }
  get quota() {
    return this.w.economy.quota;
  }
  get grants() {
    return this.w.economy.grants;
  }
  get tiers() {
    return this.w.economy.tiers;
  }
  get claims() {
    return this.w.economy.claims;
  }
  get claimAddresses() {
    return this.w.economy.claimAddresses;
  }
  get folders() {
    return this.w.economy.folders;
  }
  get transfers() {
    return this.w.economy.transfers;
  }
  get transferDelivery() {
    return this.w.economy.transferDelivery;
  }
  get remoteCharges() {
    return this.w.economy.remoteCharges;
  }
  get chargeSettlement() {
    return this.w.economy.chargeSettlement;
  }
  get chargeOutcomes() {
    return this.w.economy.chargeOutcomes;
  }
  get publish() {
    return this.w.economy.publish;
  }
  get results() {
    return this.w.economy.results;
  }
  get webhooks(): Webhooks {
    return this.w.webhooks;
  }
  get executor() {
    return this.w.compute.executor;
  }
  get compute() {
    return this.w.compute.compute;
  }
  get batches() {
    return this.w.compute.batches;
  }
  get streams() {
    return this.w.push.streams;
  }
  get autotick() {
    return this.w.push.autotick;
  }
  get reactor() {
    return this.w.assistants.reactor;
  }
  get agents() {
    return this.w.assistants.agents;
  }
  get agentStreams() {
    return this.w.assistants.agentStreams;
  }
  get bonds() {
    return this.w.consensus.bonds;
  }
  get custody() {
    return this.w.custody;
  }
  get modes() {
    return this.w.consensus.modes;
  }
  get challenges() {
    return this.w.consensus.challenges;
  }
  get slashing() {
    return this.w.consensus.slashing;
  }
  get reexecutor() {
    return this.w.consensus.reexecutor;
  }
  get execHandler() {
    return this.w.consensus.execHandler;
  }
  get offloader() {
    return this.w.consensus.offloader;
  }
  /** The open health warnings (/api/health lists them) and the checks behind them. */
  get health(): HealthPart {
    return this.w.health;
  }
  get router() {
    return this.w.http.router;
  }
  get url(): string {
    return this.w.http.url;
  }
  get metricsUrl(): string | null {
    return this.w.http.metricsUrl;
  }
  get wsClients(): number {
    return this.w.http.wsClients();
  }
  attestExecution(requestDigest: string, resultDigest: string, svcond: number): ExecutedBy | null {
    return this.w.consensus.operator.attest(requestDigest, resultDigest, svcond);
  }
  lookupResult(resultId: string): Promise<ResultLookup> {
    return this.w.consensus.lookupResult(resultId);
  }
}
