// Where a state machine is served (architecture.md §5): by its home. An identity's default machine follows its
// identity, so its home is the identity's current home (a custody failover moves both: identity/service.ts
// homeMoveOps); any other machine's home is the node that created it, from the mesh's directory (mesh/machines.ts),
// where an earlier claim of the slug wins over a later one.
import type { ChainService } from '../chain/service.js';
import type { IdentityService } from '../identity/service.js';
import { SLUG_PATTERN } from '../mesh/machines.js';
import type { MeshService } from '../mesh/service.js';

export interface MachinePlaceServices {
  identity: IdentityService;
  chain: ChainService;
  mesh: MeshService | null;
}

/**
 * 'here' when this node serves machine `slug`, else the peer id of the node that does, or null when no node is known
 * to. `ask`: whether the mesh's peers may be asked for a home no directory here names (not for a forwarded request,
 * which is answered here or not at all).
 */
export async function machinePlace(nodeId: string, s: MachinePlaceServices, slug: string, ask = true): Promise<'here' | string | null> {
  const owner = await s.identity.ownerOfDefaultMachine(slug);
  if (owner !== undefined) {
    if (owner.home !== nodeId) return owner.home;
    return (await s.chain.getMachine(slug)) ? 'here' : null;
  }
  const won = s.mesh?.enabled ? await s.mesh.machines.known(slug) : null;
  if ((won === null || won === nodeId) && (await s.chain.getMachine(slug))) return 'here';
  const home = won ?? (ask && s.mesh?.enabled && SLUG_PATTERN.test(slug) ? await s.mesh.machines.homeOf(slug) : null);
  return home !== null && home !== nodeId ? home : null;
}
