// Every per-action cost of spec part 8 in one table: what the node charges, and what discovery (GET /api) and
// GET /api/tally/costs show. Actions this node does not serve yet are listed with `served: false`, so a client
// sees the whole price list and which prices apply here.
import { FOUNDATION_SHARE_PERCENT } from './split.js';

export interface CostEntry {
  action: string;
  /** Credits; for a closed-form compute, per domain operator (1 … 10 operators, so 1 … 10, within part 8's 1-20). */
  credits: number;
  per: 'action' | 'domain operator';
  served: boolean;
  note?: string;
}

export const COSTS = {
  computePerOperator: 1,
  /** A solver run (any solver endpoint, /solve). */
  solver: 10,
  /** POST /api/svc/auto (router + solver). */
  auto: 10,
  stateMachineCreation: 50,
  contractTransition: 5,
  pageChat: 25,
  skillCreation: 50,
  operatorCreation: 50,
  sourceAuditCreation: 50,
  agentSpawn: 75,
  pageGeneration: 100,
  /** An agent's chain-append step (part 8 names no price; docs/decisions.md, "Agents"). */
  agentAppend: 1,
  /** POST /api/genesis/execute: a state machine's creation (part 8's 50). */
  genesis: 50,
  /** An agent's contract step whose event the contract refuses (its tick is still recorded; docs/decisions.md, "Agents"). */
  agentRefusedTransition: 1,
} as const;

/** Part 8's bounds for a compute charge. */
export const COMPUTE_COST_MIN = 1;
export const COMPUTE_COST_MAX = 20;

export const COST_TABLE: readonly CostEntry[] = [
  {
    action: 'compute',
    credits: COSTS.computePerOperator,
    per: 'domain operator',
    served: true,
    note: 'closed-form chain: 1 per domain operator (KO42 free), clamped to 1 … 20; also each sealed tick of a chain stream (to its owner), each chain item of a batch and each reactor step on a chain',
  },
  {
    action: 'solver',
    credits: COSTS.solver,
    per: 'action',
    served: true,
    note: 'any solver endpoint and /api/svc/solve; also each sealed tick of a solver stream (to its owner), each solver item of a batch and each reactor step',
  },
  { action: 'auto', credits: COSTS.auto, per: 'action', served: true },
  {
    action: 'state_machine_creation',
    credits: COSTS.stateMachineCreation,
    per: 'action',
    served: true,
    note: 'POST /api/chain/state-machines (the default machine of a registration is free)',
  },
  {
    action: 'contract_transition',
    credits: COSTS.contractTransition,
    per: 'action',
    served: true,
    note: 'POST /api/chain/:slug/contracts/:id/transition (deploying a contract is free)',
  },
  { action: 'page_chat', credits: COSTS.pageChat, per: 'action', served: true, note: 'POST /api/llm/chat, after the free messages of the day (10)' },
  { action: 'skill_creation', credits: COSTS.skillCreation, per: 'action', served: false },
  { action: 'operator_creation', credits: COSTS.operatorCreation, per: 'action', served: false },
  { action: 'source_audit_creation', credits: COSTS.sourceAuditCreation, per: 'action', served: false },
  { action: 'agent_spawn', credits: COSTS.agentSpawn, per: 'action', served: true, note: 'POST /api/svc/agent/spawn, and each derive' },
  { action: 'page_generation', credits: COSTS.pageGeneration, per: 'action', served: false },
  {
    action: 'agent_append',
    credits: COSTS.agentAppend,
    per: 'action',
    served: true,
    note: "an agent's append step, on the chain or on its rail (inject_agent_rail); a compute or solver step costs as one",
  },
  { action: 'genesis', credits: COSTS.genesis, per: 'action', served: true, note: 'POST /api/genesis/execute: a new state machine from a genesis document' },
  {
    action: 'agent_refused_transition',
    credits: COSTS.agentRefusedTransition,
    per: 'action',
    served: true,
    note: "an agent's contract step whose event the contract refuses (an accepted one costs a contract transition)",
  },
];

/** What the node does without a charge, so a client does not have to guess from the table's silence. */
export const FREE_ACTIONS: readonly string[] = [
  'registration (with its default state machine)',
  'chain events (POST /api/chain/:slug/events)',
  'contract deployment',
  'stream and reactor creation (their ticks and steps are charged as above)',
  'webhooks: registration and deliveries',
  'daily claim, folder moves, transfers, grants',
  'reads: results, envelopes, chains, proofs, verification',
];

/** What GET /api/tally/costs and discovery show. */
export function costSheet(): {
  costs: readonly CostEntry[];
  free: readonly string[];
  split: { burned_percent: number; foundation_percent: number; rule: string };
} {
  return {
    costs: COST_TABLE,
    free: FREE_ACTIONS,
    split: {
      burned_percent: 100 - FOUNDATION_SHARE_PERCENT,
      foundation_percent: FOUNDATION_SHARE_PERCENT,
      rule: 'per identity, the foundation has received exactly floor(20 % of everything the identity was charged); the node-wide foundation total is floor(20 % of everything charged on this node)',
    },
  };
}
