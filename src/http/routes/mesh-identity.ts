// The identity's routes on the mesh (architecture.md §5): what this node knows of a zid and the keys homed here, as
// peers ask for them, and the mesh-wide check of a zid that asks every peer.
import type Router from '@koa/router';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import { ZID_PATTERN } from '../../custody/entry.js';
import type { IdentityService } from '../../identity/service.js';
import { askPeers } from '../../mesh/ask-peers.js';
import { IDENTITY_ASSERT } from '../../mesh/identity-assert.js';
import type { MeshService } from '../../mesh/service.js';
import type { HttpKit } from '../kit.js';
import type { RouteGroup } from '../route-group.js';
import { body, responds, validate } from '../validate.js';
import { perMinuteLimit } from '../limits.js';
import { meshIdentityResponse, meshVerifyResponse, signedMeshEventResponse } from '../responses.js';

const verifyBody = z.object({ zid: z.string().regex(ZID_PATTERN, 'a zid: zid_ and 32 hex characters') }).strict();
const PEER_TIMEOUT_MS = 3000;

export interface MeshIdentityRouteServices {
  mesh: MeshService;
  identity: IdentityService;
}

/** `POST /api/mesh/verify` calls per minute per caller address (each asks every peer). */
export const MESH_VERIFY_PER_MINUTE = 10;

export function meshIdentityRoutes(s: MeshIdentityRouteServices): RouteGroup {
  return { name: 'mesh identity', register: (router, kit) => registerMeshIdentityRoutes(router, kit, s) };
}

function registerMeshIdentityRoutes(router: Router, kit: HttpKit, s: MeshIdentityRouteServices): void {
  /** What this node knows of a zid (asked by peers during /api/mesh/verify). */
  router.get('/api/mesh/identity/:zid', responds(meshIdentityResponse), async (ctx) => {
    const zid = String(ctx.params.zid);
    const ident = await s.identity.getIdentity(zid);
    ctx.body = { nodeId: kit.nodeId(), zid, verified: !!ident, home: ident?.home ?? null, svcond: s.mesh.nowSvcond() };
  });

  /** A key homed here, as an assertion signed by this node (peers verify the signature and that we are its home). */
  router.get('/api/mesh/keys/:digest', responds(signedMeshEventResponse), async (ctx) => {
    const digest = String(ctx.params.digest);
    if (!/^[0-9a-f]{64}$/.test(digest))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'digest must be 64 hex characters', { field: 'digest', reason: 'format', allowed: null });
    const assertion = await s.identity.assertionFor(digest);
    if (!assertion) throw new ServiceError(404, 'SVC_NOT_FOUND', 'no key with this digest is homed here');
    ctx.body = await kit.signMeshEvent(IDENTITY_ASSERT, assertion);
  });

  /** An identity homed here, as the assertion of one of its keys signed by this node (a peer that missed its gossip asks). */
  router.get('/api/mesh/identities/:zid/assertion', responds(signedMeshEventResponse), async (ctx) => {
    const zid = String(ctx.params.zid);
    if (!ZID_PATTERN.test(zid))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'zid must be zid_ and 32 hex characters', { field: 'zid', reason: 'format', allowed: null });
    const assertion = await s.identity.identityAssertionFor(zid);
    if (!assertion) throw new ServiceError(404, 'SVC_NOT_FOUND', `no identity ${zid} is homed here`);
    ctx.body = await kit.signMeshEvent(IDENTITY_ASSERT, assertion);
  });

  // One call asks every peer: counted per caller address, as keyless prove is, so it cannot be turned on the mesh.
  const verifyLimit = perMinuteLimit(MESH_VERIFY_PER_MINUTE, 'mesh verify');
  router.post('/api/mesh/verify', responds(meshVerifyResponse), verifyLimit, body(verifyBody), async (ctx) => {
    const { zid } = validate(verifyBody, ctx.request.body);
    const m = s.mesh;
    const local = await s.identity.getIdentity(zid);
    const meshNodes: { nodeId: string; verified: boolean; svcond: number | null }[] = [{ nodeId: kit.nodeId(), verified: !!local, svcond: m.nowSvcond() }];
    const answers = await askPeers(m.peers(), `/api/mesh/identity/${zid}`, PEER_TIMEOUT_MS, kit.homes.overMesh, (body, p) => {
      const b = body as { nodeId?: unknown; verified?: unknown; svcond?: unknown } | null;
      // The answer must come from the peer we asked.
      if (!b || b.nodeId !== p.peerId) return null;
      return { nodeId: p.peerId, verified: b.verified === true, svcond: typeof b.svcond === 'number' ? b.svcond : null };
    });
    meshNodes.push(...answers.map((a) => a.answer ?? { nodeId: a.peer.peerId, verified: false, svcond: null }));
    const quorum = Math.floor(meshNodes.length / 2) + 1;
    const yes = meshNodes.filter((n) => n.verified).length;
    const status = await m.status();
    ctx.body = {
      zid,
      verified: yes >= quorum,
      consensusReached: yes >= quorum || meshNodes.length - yes >= quorum,
      coherenceScore: status.coherenceScore,
      quorum,
      meshNodes,
    };
  });
}
