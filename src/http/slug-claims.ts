// Slugs are mesh-wide (mesh/machines.ts): every way a machine is made here (POST /api/chain/state-machines, a genesis
// document) refuses a slug another node has claimed, and claims and announces the slug it made.
import type { HttpKit } from './kit.js';
import type { MeshService } from '../mesh/service.js';
import { SLUG_CLAIM } from '../mesh/machines.js';
import { conflict } from '../identity/claims.js';
import { TOPICS } from '../mesh/wire.js';

/** 409 SVC_CONFLICT (field slug) when another node holds the slug. */
export async function refuseSlugHeldElsewhere(kit: Pick<HttpKit, 'nodeId'>, s: { mesh: MeshService | null }, slug: string): Promise<void> {
  if (!s.mesh?.enabled) return;
  const holder = await s.mesh.machines.homeOf(slug);
  if (holder && holder !== kit.nodeId()) throw conflict('slug', slug);
}

/** Record this node's claim of a machine it has just made, and tell the mesh. */
export async function claimSlug(
  kit: Pick<HttpKit, 'nodeId'>,
  s: { mesh: MeshService | null },
  machine: { slug: string; genesis_svcond: number; created_unix_ms: number },
): Promise<void> {
  if (!s.mesh?.enabled) return;
  const claim = { slug: machine.slug, home: kit.nodeId(), svcond: machine.genesis_svcond, created_unix_ms: machine.created_unix_ms };
  await s.mesh.machines.claimOwn(claim);
  void s.mesh.publish(SLUG_CLAIM, claim, TOPICS.events).catch(() => undefined);
}
