// PATCH /api/chain/:slug/settings as a pure function: the machine record after a caller's change, or a refusal
// (403 naming the action the caller's role lacks, 400 for a change that can never be made). Every change in one
// patch is checked before anything applies: a patch is all or nothing.
import { ServiceError } from '../kernel/errors.js';
import type { MachineRecord } from './service.js';
import { grantAction, requireRole, type Role } from './roles.js';

/**
 * Why inject_pulse_orb stays false: spec 2.7 names the flag (boolean, default false) and nothing it does, and no part
 * of the node would read it, so turning it on is refused where a machine's settings are written (docs/decisions.md).
 */
export const PULSE_ORB_REFUSAL = 'inject_pulse_orb cannot be turned on: the spec does not say what it does, so this node keeps it false';

export interface SettingsPatch {
  is_public?: boolean;
  inject_agent_rail?: boolean;
  inject_pulse_orb?: boolean;
  /** ZID → role to give, or null to take the ZID's role away. */
  roles?: Record<string, Exclude<Role, 'owner'> | null>;
}

function badRole(zid: string, reason: string): ServiceError {
  return new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input roles.${zid}: ${reason}`, { field: `roles.${zid}`, reason, allowed: null });
}

export function applySettings(machine: MachineRecord, callerZid: string, patch: SettingsPatch): MachineRecord {
  const role = machine.roles[callerZid];
  const next: MachineRecord = { ...machine, roles: { ...machine.roles } };
  for (const flag of ['is_public', 'inject_agent_rail', 'inject_pulse_orb'] as const) {
    const v = patch[flag];
    if (v === undefined) continue;
    requireRole(machine.slug, role, 'settings');
    next[flag] = v;
  }
  for (const [zid, wanted] of Object.entries(patch.roles ?? {})) {
    const current = machine.roles[zid];
    if (current === 'owner') throw badRole(zid, 'the owner keeps the owner role (it is never granted or taken)');
    // Taking a role needs the right to grant it; so does giving one (and replacing admin by operator needs both).
    if (current !== undefined) requireRole(machine.slug, role, grantAction(current));
    if (wanted === null) delete next.roles[zid];
    else {
      requireRole(machine.slug, role, grantAction(wanted));
      next.roles[zid] = wanted;
    }
  }
  return next;
}
