// How the consensus service reaches one node directly (outbox.ts; ChallengeService's send and ask): the peer's API at
// its URL from the peer table, or over libp2p when it has no URL or the URL does not connect (mesh/peer-http.ts). A
// send is a mesh event signed by this node with the mesh handshake, posted to the peer's gossip entrance (POST
// /api/mesh/gossip), which runs the same checks and handler rows as gossip does and relays it into the mesh; a 2xx
// (also "duplicate") is the acknowledgement. An ask reads the peer's verdict document of a challenge (GET
// /api/tally/consensus/:id); the caller checks it as any verdict event (verifyVerdictDocument). The same answer
// gives the peer's signed challenge with its sealed result in full: where a mesh event carried it by digest only.
import { requestPeer, type PeerLinks } from '../mesh/peer-http.js';
import { HANDSHAKE_HEADER, type WireEnvelope } from '../mesh/wire.js';
import type { SignedChallenge, VerdictDocument } from './challenge-wire.js';

const TIMEOUT_MS = 3000;

export interface PeerLinkDeps {
  sign: (type: string, body: unknown) => Promise<WireEnvelope>;
  links: PeerLinks;
  timeoutMs?: number;
}

export function httpPeerLink(deps: PeerLinkDeps): {
  send: (node: string, type: string, body: unknown) => Promise<void>;
  ask: (node: string, challengeId: string) => Promise<VerdictDocument | null>;
  askChallenge: (node: string, challengeId: string) => Promise<SignedChallenge | null>;
} {
  const timeout = () => AbortSignal.timeout(deps.timeoutMs ?? TIMEOUT_MS);
  const detail = async (node: string, challengeId: string) => {
    const path = `/api/tally/consensus/${encodeURIComponent(challengeId)}`;
    const res = await requestPeer(deps.links, node, { method: 'GET', path, headers: {}, body: '' }, timeout());
    if (res.status < 200 || res.status > 299) throw new Error(`node ${node} answered ${res.status} (${res.via}): ${res.text.slice(0, 300)}`);
    return JSON.parse(res.text) as { document?: VerdictDocument | null; challenge?: SignedChallenge | null };
  };
  return {
    async send(node, type, body) {
      const { event, handshake } = await deps.sign(type, body);
      const headers = { 'content-type': 'application/json', [HANDSHAKE_HEADER]: handshake ?? '' };
      const res = await requestPeer(deps.links, node, { method: 'POST', path: '/api/mesh/gossip', headers, body: JSON.stringify(event) }, timeout());
      if (res.status < 200 || res.status > 299) throw new Error(`node ${node} answered ${res.status} (${res.via}): ${res.text.slice(0, 300)}`);
    },
    async ask(node, challengeId) {
      return (await detail(node, challengeId)).document ?? null;
    },
    async askChallenge(node, challengeId) {
      return (await detail(node, challengeId)).challenge ?? null;
    },
  };
}
