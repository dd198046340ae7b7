// Who may do what on a state machine (spec 2.7: roles viewer / operator / admin / owner). This table is the single
// source of truth: the routes ask `allowed(role, action)`, the role-matrix test walks it, and docs/chain.md prints it.
import { ServiceError } from '../kernel/errors.js';

export type Role = 'viewer' | 'operator' | 'admin' | 'owner';
export const ROLES: readonly Role[] = ['viewer', 'operator', 'admin', 'owner'];

export type ChainAction =
  /** Read the chain, its contracts, checkpoint and proofs (a public machine: anyone). */
  | 'read'
  /** Append an event row (POST /events). */
  | 'append'
  /** Deploy a JSON contract. */
  | 'deploy'
  /** Apply a contract transition. */
  | 'transition'
  /** is_public, inject_agent_rail, inject_pulse_orb. */
  | 'settings'
  /** Give or take viewer and operator. */
  | 'grant_member'
  /** Give or take admin. */
  | 'grant_admin'
  /** Mint, list and revoke zsm_pub_ embed keys. */
  | 'embed_keys'
  /** The machine's tally (tally/charges, tally/summary, tally/envelopes). */
  | 'tally';

/** The matrix: action → the roles allowed it. The owner role is never granted or taken (one owner, the creator). */
export const ROLE_MATRIX: Readonly<Record<ChainAction, readonly Role[]>> = {
  read: ['viewer', 'operator', 'admin', 'owner'],
  append: ['operator', 'admin', 'owner'],
  transition: ['operator', 'admin', 'owner'],
  deploy: ['admin', 'owner'],
  settings: ['admin', 'owner'],
  grant_member: ['admin', 'owner'],
  grant_admin: ['owner'],
  embed_keys: ['admin', 'owner'],
  tally: ['admin', 'owner'],
};

export const CHAIN_ACTIONS = Object.keys(ROLE_MATRIX) as ChainAction[];

export function allowed(role: Role | undefined, action: ChainAction): boolean {
  return role !== undefined && ROLE_MATRIX[action].includes(role);
}

/** The action that grants or takes a role. */
export function grantAction(role: Exclude<Role, 'owner'>): ChainAction {
  return role === 'admin' ? 'grant_admin' : 'grant_member';
}

/** 403 naming the action, the caller's role and the roles that may. */
export function requireRole(slug: string, role: Role | undefined, action: ChainAction): void {
  if (allowed(role, action)) return;
  throw new ServiceError(403, 'SVC_FORBIDDEN', `${action} on state machine ${slug} needs one of the roles ${ROLE_MATRIX[action].join(', ')}`, {
    slug,
    action,
    role: role ?? null,
    allowed_roles: ROLE_MATRIX[action],
  });
}
