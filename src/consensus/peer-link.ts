// How the consensus service reaches one node directly (outbox.ts; ChallengeService's send and ask): over HTTP, at the
// peer's URL from the peer table. A send is a mesh event signed by this node with the mesh handshake, posted to the
// peer's gossip entrance (POST /api/mesh/gossip), which runs the same checks and handler rows as gossip does and
// relays it into the mesh; a 2xx (also "duplicate") is the acknowledgement. An ask reads the peer's verdict document
// of a challenge (GET /api/tally/consensus/:id); the caller checks it as any verdict event (verifyVerdictDocument).
import { HANDSHAKE_HEADER, type WireEnvelope } from '../mesh/wire.js';
import type { VerdictDocument } from './challenge-wire.js';

const TIMEOUT_MS = 3000;

export interface PeerLinkDeps {
  sign: (type: string, body: unknown) => Promise<WireEnvelope>;
  peerUrl: (node: string) => string | null;
  timeoutMs?: number;
}

function urlOf(deps: PeerLinkDeps, node: string): string {
  const url = deps.peerUrl(node);
  if (!url) throw new Error(`no URL is known for node ${node}`);
  return url;
}

export function httpPeerLink(deps: PeerLinkDeps): {
  send: (node: string, type: string, body: unknown) => Promise<void>;
  ask: (node: string, challengeId: string) => Promise<VerdictDocument | null>;
} {
  const timeout = () => AbortSignal.timeout(deps.timeoutMs ?? TIMEOUT_MS);
  return {
    async send(node, type, body) {
      const url = urlOf(deps, node);
      const { event, handshake } = await deps.sign(type, body);
      const res = await fetch(`${url}/api/mesh/gossip`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [HANDSHAKE_HEADER]: handshake ?? '' },
        body: JSON.stringify(event),
        signal: timeout(),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
    },
    async ask(node, challengeId) {
      const url = urlOf(deps, node);
      const res = await fetch(`${url}/api/tally/consensus/${encodeURIComponent(challengeId)}`, { signal: timeout() });
      const text = await res.text();
      if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
      const body = JSON.parse(text) as { document?: VerdictDocument | null };
      return body.document ?? null;
    },
  };
}
