// Identity assertions on svc/identity/1 (architecture.md §5): a key minted at its home node, gossiped as an event
// signed by that home, so any node authenticates any key. The body is the identity service's IdentityAssertion;
// the schema here is the mesh's gate (shape, and that the signer is the key's home or names itself its identity's), the
// identity service checks the rest when it applies it (that the signer is the identity's home as its directory says).
import { z } from 'zod';
import { ServiceError } from '../kernel/errors.js';
import { GossipError } from './gossip-error.js';
import type { GossipHandler } from './gossip-handlers.js';
import type { MeshEvent } from './wire.js';

export const IDENTITY_ASSERT = 'identity.assert';

export const identityAssertBody = z.looseObject({
  digest: z.string().regex(/^[0-9a-f]{64}$/, 'the key digest: 64 hex characters'),
  key: z.looseObject({ home: z.string().min(1), zid: z.string().min(1), kind: z.string().min(1) }),
  identity: z.looseObject({ zid: z.string().min(1), home: z.string().min(1) }).nullish(),
});
export type IdentityAssertBody = z.infer<typeof identityAssertBody>;

/** [REJECT] an assertion signed by a node that is neither the key's home nor its identity's: only a home speaks for keys. */
export function checkAssertionSigner(body: IdentityAssertBody, event: Pick<MeshEvent, 'sender'>): void {
  // The identity's home may speak for keys minted at its home before (a failover); whether it is the home is the
  // directory's to say (IdentityService.applyAssertion).
  const identityHome = body.identity?.zid === body.key.zid ? body.identity.home : null;
  if (body.key.home !== event.sender && identityHome !== event.sender) {
    throw new GossipError('reject', 400, 'INVALID_EVENT', 'an identity assertion must be signed by the home node of its key or of its identity');
  }
}

/**
 * The table row: `apply` writes the assertion (the identity service) and what follows from it (machine homes). A key
 * this node has no room for (MESH_KEYS_FULL) is ignored: not stored, not relayed, the sender not penalised.
 */
export function identityAssertHandler(apply: (body: IdentityAssertBody, sender: string) => Promise<void>): GossipHandler<IdentityAssertBody> {
  return {
    type: IDENTITY_ASSERT,
    body: identityAssertBody,
    handle: async (body, event) => {
      checkAssertionSigner(body, event);
      try {
        await apply(body, event.sender);
      } catch (err) {
        if (err instanceof ServiceError && err.code === 'MESH_KEYS_FULL') throw new GossipError('ignore', err.status, err.code, err.message);
        throw err;
      }
    },
  };
}
