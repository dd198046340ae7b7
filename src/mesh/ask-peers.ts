// Ask every known peer the same question over HTTP (a GET on its public URL), in parallel, each answer bounded by
// a timeout. Used for what is not gossiped: key lookups, machine homes, identity verification.

export interface PeerAddress {
  peerId: string;
  url: string | null;
}

export interface PeerAnswer<T> {
  peer: PeerAddress & { url: string };
  /** What `read` made of the peer's JSON answer; null when the peer failed, timed out or answered non-2xx. */
  answer: T | null;
}

/**
 * GET `path` on each peer that has a URL. `read` checks one answer (e.g. that it is signed by the peer asked) and
 * returns a value or null; if it throws, that answer is null. The answers are in the order of the peers.
 */
export async function askPeers<T>(
  peers: readonly PeerAddress[],
  path: string,
  timeoutMs: number,
  read: (body: unknown, peer: PeerAddress & { url: string }) => T | null | Promise<T | null>,
): Promise<PeerAnswer<T>[]> {
  const reachable = peers.filter((p): p is PeerAddress & { url: string } => typeof p.url === 'string' && p.url !== '');
  return Promise.all(
    reachable.map(async (peer) => {
      try {
        const res = await fetch(`${peer.url}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
        if (!res.ok) {
          await res.body?.cancel();
          return { peer, answer: null };
        }
        return { peer, answer: await read(await res.json(), peer) };
      } catch {
        return { peer, answer: null };
      }
    }),
  );
}
