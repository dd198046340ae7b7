// Which solver inputs need a higher tier (spec part 7, SVC_TIER_LOCKED: "protocol needs a higher tier"), in one
// table: what GET /api/tally/tiers and discovery show, and what ComputeService checks on the resolved inputs of every
// solver run (solver endpoints, /solve, /auto) before anything is reserved or charged. The free tier keeps every
// solver and every default; a gate takes the upper part of a size (grid, lattice, receptor), or a heavy mode, for
// the paid tiers. Sizes are checked after the solver's own validation, so an input over the solver's work limit is
// still 400 and only a valid request is ever 403.
import { ServiceError } from '../kernel/errors.js';
import { TIERS, tierRank, type Tier } from './tiers.js';

export interface TierGate {
  solver: string;
  /** The resolved input the gate reads. */
  input: string;
  /** Where it reads it: the inputs (when absent), or the initial state a stateful run continues from. */
  of?: 'initialState';
  /** Size gate: values above this (an array input: its length) need `tier`. */
  above?: number;
  /** Mode gate: this value needs `tier`. */
  equals?: string;
  tier: Tier;
  note: string;
}

export const TIER_GATES: readonly TierGate[] = [
  { solver: 'device', input: 'mode', equals: 'pn2d', tier: 'starter', note: 'the 2-D drift-diffusion device (pn1d stays free)' },
  { solver: 'gauge', input: 'L', above: 32, tier: 'starter', note: 'lattices larger than the default 32 × 32' },
  { solver: 'evolve', input: 'n_cells', above: 4, tier: 'starter', note: '500 atoms (n_cells 5)' },
  // The same size when a run continues from a state: its atoms, not n_cells, are what runs.
  { solver: 'evolve', of: 'initialState', input: 'positions_m', above: 256, tier: 'starter', note: 'states of more than 256 atoms (n_cells 4)' },
  { solver: 'heat', input: 'nx', above: 501, tier: 'standard', note: '1-D grids above 501 points' },
  { solver: 'climate', input: 'nx', above: 128, tier: 'standard', note: '256-point grids' },
  { solver: 'climate', input: 'ny', above: 128, tier: 'standard', note: '256-point grids' },
  { solver: 'dock', input: 'receptor', above: 500, tier: 'standard', note: 'receptors of more than 500 atoms' },
  { solver: 'wave', input: 'nx', above: 2001, tier: 'professional', note: 'Maxwell lines above 2001 points (membranes stop at 301)' },
];

/** The gated measure of a resolved input: a number, a string, an array's length; undefined when absent. */
function measure(value: unknown): number | string | undefined {
  if (typeof value === 'number' || typeof value === 'string') return value;
  if (Array.isArray(value) || ArrayBuffer.isView(value)) return (value as unknown as ArrayLike<unknown>).length;
  return undefined;
}

function locks(gate: TierGate, value: number | string | undefined): boolean {
  if (value === undefined) return false;
  if (gate.equals !== undefined) return value === gate.equals;
  return gate.above !== undefined && typeof value === 'number' && value > gate.above;
}

export interface LockedInput {
  input: string;
  value: number | string;
  required_tier: Tier;
  note: string;
}

/** The gates a run of `solver` on `inputs` (from `state`, when it continues one) passes only at a higher tier than `tier` (empty: it may run). */
export function lockedInputs(solver: string, inputs: Record<string, unknown>, tier: Tier, state?: unknown): LockedInput[] {
  const out: LockedInput[] = [];
  for (const gate of TIER_GATES) {
    if (gate.solver !== solver || tierRank(tier) >= tierRank(gate.tier)) continue;
    const from = gate.of === 'initialState' ? (state as Record<string, unknown> | undefined) : inputs;
    const value = measure(from?.[gate.input]);
    const input = gate.of === undefined ? gate.input : `${gate.of}.${gate.input}`;
    if (value !== undefined && locks(gate, value)) out.push({ input, value, required_tier: gate.tier, note: gate.note });
  }
  return out;
}

/**
 * 403 SVC_TIER_LOCKED (part 7: required_tier, current_tier, upgrade_url) when a gate locks the run; the required tier
 * is the highest any locked input needs, so one upgrade is enough. Also names the solver and the locked inputs.
 */
export function assertTierAllows(solver: string, inputs: Record<string, unknown>, tier: Tier, upgradeUrl: string, state?: unknown): void {
  const locked = lockedInputs(solver, inputs, tier, state);
  if (locked.length === 0) return;
  const required = locked.reduce<Tier>((hi, l) => (tierRank(l.required_tier) > tierRank(hi) ? l.required_tier : hi), locked[0]!.required_tier);
  const what = locked.map((l) => `${l.input} = ${typeof l.value === 'string' ? l.value : String(l.value)}`).join(', ');
  throw new ServiceError(403, 'SVC_TIER_LOCKED', `${solver} with ${what} needs the ${required} tier; this caller is ${tier}`, {
    required_tier: required,
    current_tier: tier,
    upgrade_url: upgradeUrl,
    solver,
    locked_inputs: locked,
  });
}

/** Capabilities (not solver inputs) that need a paid tier, in the same sheet. */
export const FEATURE_GATES: readonly { feature: string; tier: Tier; note: string }[] = [
  { feature: 'llm_credentials', tier: 'starter', note: 'own language-model provider credentials for chat (spec 5.10: paid tier only)' },
];

/** 403 SVC_TIER_LOCKED when `feature` needs a higher tier than `tier`. */
export function assertFeatureAllowed(feature: string, tier: Tier, upgradeUrl: string): void {
  const gate = FEATURE_GATES.find((g) => g.feature === feature);
  if (!gate || tierRank(tier) >= tierRank(gate.tier)) return;
  throw new ServiceError(403, 'SVC_TIER_LOCKED', `${gate.note}: needs the ${gate.tier} tier or above; this caller is ${tier}`, {
    required_tier: gate.tier,
    current_tier: tier,
    upgrade_url: upgradeUrl,
    feature,
  });
}

/** What GET /api/tally/tiers and discovery show: every tier's allowance and time limit, the gates, how to upgrade. */
export function tierSheet(
  policy: { dailyAllowance: Record<Tier, number>; timeLimitSeconds: Record<Tier, number> },
  allowanceEnforced: boolean,
): Record<string, unknown> {
  return {
    tiers: TIERS.map((tier) => ({ tier, daily_allowance: policy.dailyAllowance[tier], time_limit_seconds: policy.timeLimitSeconds[tier] })),
    /** limits.enforceDailyQuota: whether the daily allowance is a cap (429 SVC_DAILY_LIMIT) or only reported. */
    daily_allowance_enforced: allowanceEnforced,
    gates: TIER_GATES,
    features: FEATURE_GATES,
    anonymous_and_demo: 'free',
    upgrade:
      "an identity's tier is set by the operator of its home node (POST /api/tally/grants {zid, credits, tier}, or svc-node grant --tier); it applies from the next request",
  };
}
