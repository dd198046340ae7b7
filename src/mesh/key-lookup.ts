// A key this node has not heard of is looked up on the peers (GET /api/mesh/keys/:digest) and accepted only as an
// identity assertion signed by the peer that answered, fresh, and by the key's home (the same checks as gossip).
import { askPeers, type PeerAddress } from './ask-peers.js';
import type { OverMesh } from './peer-http.js';
import { IDENTITY_ASSERT, checkAssertionSigner, identityAssertBody } from './identity-assert.js';
import { MAX_SKEW_TICKS } from './validator.js';
import { verifyEventSignature, type MeshEvent } from './wire.js';

const KEY_LOOKUP_TIMEOUT_MS = 2000;

export interface KeyLookupDeps {
  peers: () => readonly PeerAddress[];
  nowSvcond: () => number;
  /** The libp2p way to a peer whose URL is unknown or does not connect (null: URLs only). */
  overMesh?: OverMesh | null;
}

export type KeyLookup = (digest: string) => Promise<{ assertion: unknown; sender: string } | null>;

export function remoteKeyLookup(deps: KeyLookupDeps): KeyLookup {
  return async (digest) => {
    const now = deps.nowSvcond();
    const answers = await askPeers(deps.peers(), `/api/mesh/keys/${digest}`, KEY_LOOKUP_TIMEOUT_MS, deps.overMesh ?? null, async (body, peer) => {
      const event = body as MeshEvent;
      if (!event || event.type !== IDENTITY_ASSERT || event.sender !== peer.peerId) return null;
      if (typeof event.svcond !== 'number' || Math.abs(event.svcond - now) > MAX_SKEW_TICKS) return null;
      const parsed = identityAssertBody.safeParse(event.body);
      if (!parsed.success || parsed.data.digest !== digest) return null;
      checkAssertionSigner(parsed.data, event);
      if (!(await verifyEventSignature(event))) return null;
      return { assertion: event.body, sender: event.sender };
    });
    return answers.find((a) => a.answer !== null)?.answer ?? null;
  };
}
