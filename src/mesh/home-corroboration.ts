// An identity this node has not heard of is learnt from the node that claims to be its home (gossip, or the answer to
// a lookup: a late joiner, gossip lost), and no signature can tell a true home from a lying member claiming another's
// identity: a zid names no node (a v3 zid is the equation's digest). Taking the claim on its word would let a liar
// assert keys for the identity here and be sent its key with every forwarded request. So the claim is weighed against
// the peers that know the identity (GET /api/mesh/identity/:zid, each peer's directory): it is taken when more of
// them name the claimant than any other home, the claim counting as the claimant's own word. A new identity, which no
// other peer knows yet, is taken at once; a claim outvoted, or tied, is refused and not weighed again for a while.
// The same rule weighs a machine's holder against the peers' directories (mesh/machines.ts lookup).
import { askPeers, type PeerAddress } from './ask-peers.js';
import type { OverMesh } from './peer-http.js';
import { BoundedMap } from '../util/bounded-map.js';

const HOME_CHECK_TIMEOUT_MS = 1500;
/** How long a refused claim (zid and claimant) is refused without asking again: a liar repeating it fans out nothing. */
const REFUSED_FOR_MS = 30_000;
const REFUSALS_KEPT = 10_000;

/** Whether `home`'s claim to be the home of `zid`, an identity not known here, stands. */
export type HomeCheck = (zid: string, home: string) => Promise<boolean>;

export interface HomeCorroborationDeps {
  peers: () => readonly PeerAddress[];
  nowMs: () => number;
  /** The libp2p way to a peer whose URL is unknown or does not connect (null: URLs only). */
  overMesh?: OverMesh | null;
}

/**
 * Whether a claim stands against the homes the peers that know the identity name (`views`, one per peer, the claimant
 * left out): more name the claimant, its own claim among them, than name any other home.
 */
export function claimStands(claimant: string, views: readonly string[]): boolean {
  const votes = new Map<string, number>([[claimant, 1]]);
  for (const home of views) votes.set(home, (votes.get(home) ?? 0) + 1);
  const mine = votes.get(claimant)!;
  for (const [home, n] of votes) if (home !== claimant && n >= mine) return false;
  return true;
}

export function homeCorroboration(deps: HomeCorroborationDeps): HomeCheck {
  const refusedUntil = new BoundedMap<string, number>(REFUSALS_KEPT);
  const running = new Map<string, Promise<boolean>>();

  const weigh = async (zid: string, claimant: string): Promise<boolean> => {
    const others = deps.peers().filter((p) => p.peerId !== claimant);
    const answers = await askPeers(others, `/api/mesh/identity/${zid}`, HOME_CHECK_TIMEOUT_MS, deps.overMesh ?? null, (body, peer) => {
      const b = body as { nodeId?: unknown; zid?: unknown; verified?: unknown; home?: unknown } | null;
      // A view counts only as the peer asked gives it, of the zid asked.
      if (!b || b.nodeId !== peer.peerId || b.zid !== zid || b.verified !== true || typeof b.home !== 'string') return null;
      return b.home;
    });
    return claimStands(
      claimant,
      answers.flatMap((a) => (a.answer === null ? [] : [a.answer])),
    );
  };

  return (zid, claimant) => {
    const name = `${zid}!${claimant}`;
    const until = refusedUntil.get(name);
    if (until !== undefined && until > deps.nowMs()) return Promise.resolve(false);
    let pending = running.get(name);
    if (pending === undefined) {
      pending = weigh(zid, claimant)
        .then((stands) => {
          if (!stands) refusedUntil.set(name, deps.nowMs() + REFUSED_FOR_MS);
          return stands;
        })
        .finally(() => running.delete(name));
      running.set(name, pending);
    }
    return pending;
  };
}
