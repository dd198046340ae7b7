// A key or an identity this node has not heard of (a late joiner, gossip lost while the mesh re-formed) is looked up
// on the peers (GET /api/mesh/keys/:digest, /api/mesh/identities/:zid/assertion) and accepted only as an identity
// assertion signed by the peer that answered, fresh, and by the key's home or the identity's it names (the same checks
// as gossip; the identity service applies it only from the identity's home as its directory names it).
import { askPeersFirst, type PeerAddress } from './ask-peers.js';
import type { OverMesh } from './peer-http.js';
import { IDENTITY_ASSERT, checkAssertionSigner, identityAssertBody, type IdentityAssertBody } from './identity-assert.js';
import { MAX_SKEW_TICKS } from './validator.js';
import { verifyEventSignature, type MeshEvent } from './wire.js';

const KEY_LOOKUP_TIMEOUT_MS = 2000;

export interface KeyLookupDeps {
  peers: () => readonly PeerAddress[];
  nowSvcond: () => number;
  /** The libp2p way to a peer whose URL is unknown or does not connect (null: URLs only). */
  overMesh?: OverMesh | null;
}

/**
 * A lookup by a key's digest or an identity's zid; with `accept`, each verified answer is offered to it (it applies
 * the assertion) until one is taken, so a claim it refuses does not stand in for the true home's answer. `unanswered`
 * is called before a null that is not every peer's word (one failed or timed out: the home may be among them).
 */
export type AssertionLookup = (name: string, accept?: (found: FoundAssertion) => Promise<boolean>, unanswered?: () => void) => Promise<FoundAssertion | null>;

/** A verified assertion and its signer (the peer asked, the home of the key or of its identity). */
export interface FoundAssertion {
  assertion: unknown;
  sender: string;
}

/** A key by its digest, at `GET /api/mesh/keys/:digest`. */
export function remoteKeyLookup(deps: KeyLookupDeps): AssertionLookup {
  return (digest, accept, unanswered) => lookupAssertion(deps, `/api/mesh/keys/${digest}`, (body) => body.digest === digest, accept, unanswered);
}

/**
 * An identity by its zid, at `GET /api/mesh/identities/:zid/assertion`: answered by its home with the assertion of
 * one of its keys, the identity with it (a node that missed the gossip learns the identity's home).
 */
export function remoteIdentityLookup(deps: KeyLookupDeps): AssertionLookup {
  return (zid, accept, unanswered) =>
    lookupAssertion(deps, `/api/mesh/identities/${zid}/assertion`, (body) => body.key.zid === zid && body.identity?.zid === zid, accept, unanswered);
}

/**
 * Ask every peer for `path`; the first answer that is an assertion event signed now by the peer asked, a home of it,
 * and `wanted`, and that `accept` takes.
 */
function lookupAssertion(
  deps: KeyLookupDeps,
  path: string,
  wanted: (body: IdentityAssertBody) => boolean,
  accept?: (found: FoundAssertion) => Promise<boolean>,
  unanswered?: () => void,
): Promise<FoundAssertion | null> {
  const now = deps.nowSvcond();
  return askPeersFirst(
    deps.peers(),
    path,
    KEY_LOOKUP_TIMEOUT_MS,
    deps.overMesh ?? null,
    async (body, peer) => {
      const event = body as MeshEvent;
      if (!event || event.type !== IDENTITY_ASSERT || event.sender !== peer.peerId) return null;
      if (typeof event.svcond !== 'number' || Math.abs(event.svcond - now) > MAX_SKEW_TICKS) return null;
      const parsed = identityAssertBody.safeParse(event.body);
      if (!parsed.success || !wanted(parsed.data)) return null;
      checkAssertionSigner(parsed.data, event);
      if (!(await verifyEventSignature(event))) return null;
      const found = { assertion: event.body, sender: event.sender };
      return accept === undefined || (await accept(found)) ? found : null;
    },
    unanswered,
  );
}
