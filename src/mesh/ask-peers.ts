// Ask every known peer the same question (a GET of its API: at its URL, or over libp2p), in parallel, each answer
// bounded by a timeout. Used for what is not gossiped: key lookups, machine homes, identity verification.
import { requestPeer, type OverMesh } from './peer-http.js';

export interface PeerAddress {
  peerId: string;
  url: string | null;
}

export interface PeerAnswer<T> {
  peer: PeerAddress;
  /** What `read` made of the peer's JSON answer; null when the peer failed, timed out or answered non-2xx. */
  answer: T | null;
  /** Did the peer answer at all (a status below 500)? False when it failed, timed out or answered 5xx. */
  answered: boolean;
}

/**
 * GET `path` on each peer: at its URL, or over libp2p (`overMesh`, mesh/peer-http.ts) when it has none or the URL does
 * not connect; without `overMesh` only the peers that have a URL are asked. `read` checks one answer (e.g. that it is
 * signed by the peer asked) and returns a value or null; if it throws, that answer is null. The answers are in the
 * order of the peers asked.
 */
export async function askPeers<T>(
  peers: readonly PeerAddress[],
  path: string,
  timeoutMs: number,
  overMesh: OverMesh | null,
  read: (body: unknown, peer: PeerAddress) => T | null | Promise<T | null>,
): Promise<PeerAnswer<T>[]> {
  return Promise.all(asked(peers, overMesh).map((peer) => askPeer(peer, path, timeoutMs, overMesh, read)));
}

/**
 * As askPeers, for a question only one peer can answer (the home of a key or an identity): the first answer `read`
 * accepts, as soon as it comes (a dead or slow peer does not hold it up), or null once every peer has answered or
 * timed out without one. `unanswered` is called before a null when the null is not every peer's word: a peer failed,
 * timed out or answered 5xx, or there was no peer to ask.
 */
export function askPeersFirst<T>(
  peers: readonly PeerAddress[],
  path: string,
  timeoutMs: number,
  overMesh: OverMesh | null,
  read: (body: unknown, peer: PeerAddress) => T | null | Promise<T | null>,
  unanswered?: () => void,
): Promise<T | null> {
  const asking = asked(peers, overMesh);
  if (asking.length === 0) {
    unanswered?.();
    return Promise.resolve(null);
  }
  return new Promise((resolve) => {
    let left = asking.length;
    let silent = false;
    let done = false;
    for (const peer of asking) {
      void askPeer(peer, path, timeoutMs, overMesh, read).then(({ answer, answered }) => {
        left--;
        if (!answered) silent = true;
        if (done) return;
        if (answer !== null) {
          done = true;
          resolve(answer);
        } else if (left === 0) {
          if (silent) unanswered?.();
          resolve(null);
        }
      });
    }
  });
}

function asked(peers: readonly PeerAddress[], overMesh: OverMesh | null): readonly PeerAddress[] {
  return overMesh ? peers : peers.filter((p) => typeof p.url === 'string' && p.url !== '');
}

async function askPeer<T>(
  peer: PeerAddress,
  path: string,
  timeoutMs: number,
  overMesh: OverMesh | null,
  read: (body: unknown, peer: PeerAddress) => T | null | Promise<T | null>,
): Promise<PeerAnswer<T>> {
  try {
    const links = { peerUrl: () => (peer.url === '' ? null : peer.url), overMesh };
    const res = await requestPeer(links, peer.peerId, { method: 'GET', path, headers: {}, body: '' }, AbortSignal.timeout(timeoutMs));
    const answered = res.status < 500;
    if (res.status < 200 || res.status > 299) return { peer, answer: null, answered };
    try {
      return { peer, answer: await read(JSON.parse(res.text) as unknown, peer), answered };
    } catch {
      return { peer, answer: null, answered };
    }
  } catch {
    return { peer, answer: null, answered: false };
  }
}
