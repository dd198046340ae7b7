// Assistants: AI chat (llm/), reactors, agents and the genesis walkthrough. Agents run on the tick loop: polled a few
// times per tick, each agent runs once per tick it is due (AgentRuntime.pump).
import type { ChainService } from '../chain/service.js';
import type { SolverExecutor } from '../compute/executor.js';
import type { ComputeService } from '../compute/service.js';
import { AgentRuntime } from '../agents/runtime.js';
import { GenesisService } from '../genesis/service.js';
import { LocalTools } from '../http/local-tools.js';
import { agentRoutes, StreamCount } from '../http/routes/agents.js';
import { genesisRoutes } from '../http/routes/genesis.js';
import { llmRoutes } from '../http/routes/llm.js';
import { mcpRoutes } from '../http/routes/mcp.js';
import { mmioRoutes } from '../http/routes/mmio.js';
import { reactorRoutes } from '../http/routes/reactor.js';
import { SelfApi } from '../http/self-request.js';
import type { IdentityService } from '../identity/service.js';
import { ChatService } from '../llm/chat.js';
import { CredentialStore, credentialKey } from '../llm/credentials.js';
import { ProviderDirectory } from '../llm/directory.js';
import { ReactorService } from '../reactor/service.js';
import type { MeshService } from '../mesh/service.js';
import type { Ledger } from '../tally/ledger.js';
import type { QuotaService } from '../tally/quota.js';
import type { TierBook } from '../tally/tiers.js';
import { BEATS_PER_TICK, type Capability } from './capability.js';
import type { Foundation } from './foundation.js';

export interface Llm {
  chat: ChatService;
  directory: ProviderDirectory;
  credentials: CredentialStore;
}

export interface AssistantsPart {
  llm: Llm;
  reactor: ReactorService;
  agents: AgentRuntime;
  /** Open agent event streams (SSE), per identity. */
  agentStreams: StreamCount;
  genesis: GenesisService;
  /** The node's own routes, called on a caller's behalf by MCP and chat tools (the HTTP kit serves it). */
  selfApi: SelfApi;
  capability: Capability;
}

export interface AssistantsNeeds {
  chain: ChainService;
  identity: IdentityService;
  ledger: Ledger;
  quota: QuotaService;
  tiers: TierBook;
  compute: ComputeService;
  executor: SolverExecutor;
  mesh: MeshService;
}

export async function wireAssistants(f: Foundation, needs: AssistantsNeeds): Promise<AssistantsPart> {
  const { store, clock, options } = f;
  const { chain, ledger, compute } = needs;
  const nodeId = () => f.nodeId;
  const reactor = new ReactorService({ store, compute, clock, nodeId, phi0: f.config.kernel.phi0, perIdentity: f.config.limits.reactorsPerIdentity });
  const agents = new AgentRuntime({
    store,
    clock,
    ledger,
    chain,
    compute,
    nodeId,
    ...(options.agents?.limits ? { limits: options.agents.limits } : {}),
    log: (msg, fields) => f.logger.warn(fields, msg),
  });
  await agents.load();
  const genesis = new GenesisService({ store, clock, chain, identity: needs.identity, ledger, receiptKey: f.keys.receipt });
  const pump = { name: 'agents', perTick: BEATS_PER_TICK, run: () => agents.pump() };
  const llm = wireLlm(f, ledger);
  const agentStreams = new StreamCount();
  // Tools (MCP, chat) are requests to this node's own routes on the caller's behalf.
  const selfApi = new SelfApi();
  const tools = new LocalTools(compute.registry, selfApi, f.config.kernel.version);
  const { mesh, quota, tiers } = needs;
  const mmio = {
    queueDepth: () => needs.executor.queueDepth?.() ?? 0,
    agentsRunning: () => agents.runningCount(),
    agentsOf: async (zid: string) => ({ running: agents.runningOf(zid), total: await agents.totalOf(zid) }),
    streamsOf: (zid: string) => agentStreams.of(zid),
    reactorsOf: (zid: string) => reactor.countOf(zid),
  };
  return {
    llm,
    reactor,
    agents,
    agentStreams,
    genesis,
    selfApi,
    capability: {
      name: 'assistants',
      routes: [
        mcpRoutes({ tools }),
        llmRoutes({ ...llm, tiers, tools }),
        reactorRoutes({ reactor }),
        mmioRoutes({ mmio, mesh, counters: f.counters, ledger, quota, tiers }),
        genesisRoutes({ genesis, chain, mesh }),
        agentRoutes({ agents, streams: agentStreams }, { heartbeatMs: options.agents?.heartbeatMs ?? 15_000 }),
      ],
      // Tests with a ManualClock pump the agents themselves (options.agents.autoTick false).
      tickers: options.agents?.autoTick !== false ? [pump] : [],
      stop: () => agents.close(),
    },
  };
}

/** AI chat: free messages and charges on this node's counters and ledger; providers from config. */
function wireLlm(f: Foundation, ledger: Ledger): Llm {
  const llm = f.config.llm;
  const chat = new ChatService({
    counters: f.counters,
    ledger,
    commit: (ops) => f.store.commit(ops),
    nowMs: f.time.nowMs,
    freeMessagesPerDay: llm.freeMessagesPerDay,
    maxToolSteps: llm.maxToolSteps,
    timeoutMs: llm.timeoutMs,
  });
  // Identities' own provider keys, encrypted under a key derived from the credential secret (0600, data dir).
  const credentials = new CredentialStore(f.store, credentialKey(f.keys.credentialSecret), f.time.nowMs, llm.baseUrls);
  return { chat, directory: new ProviderDirectory(llm.provider, credentials), credentials };
}
