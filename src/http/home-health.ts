// Home nodes that stopped answering. A forward to a home that shows no life within the deadline marks it hung; while
// it is marked, a forward to it first waits briefly for one probe of its health (one at a time per home, shared): a
// home that answers it is cleared and the request goes on, else the request is answered 503 at once instead of
// waiting out the deadline.
import { isConnectFailure } from '../mesh/peer-http.js';

export const HEALTH_PATH = '/api/health';
/** The longest a request to a marked home waits for its probe. */
export const RECHECK_WAIT_MS = 1000;

/**
 * How the node at `url` answers its health route within `deadlineMs`: `alive`; `refused`, nothing listens (a process
 * that is stopping and finishing its requests, or gone: its open connections say which); `silent`, no answer (a
 * stopped process accepts, never answers).
 */
export async function probeHealth(url: string, deadlineMs: number): Promise<'alive' | 'refused' | 'silent'> {
  try {
    const res = await fetch(url + HEALTH_PATH, { signal: AbortSignal.timeout(deadlineMs) });
    await res.arrayBuffer();
    return res.ok ? 'alive' : 'silent';
  } catch (err) {
    return isConnectFailure(err) ? 'refused' : 'silent';
  }
}

/** Does the node at `url` answer its health route within `deadlineMs`? */
export async function answersHealth(url: string, deadlineMs: number): Promise<boolean> {
  return (await probeHealth(url, deadlineMs)) === 'alive';
}

export class HungHomes {
  /** Peer id → when it was marked (ms) and the probe under way. Bounded by the peer table it comes from. */
  private readonly hung = new Map<string, { sinceMs: number; probing: Promise<boolean> | null }>();

  constructor(private readonly probe: (url: string, deadlineMs: number) => Promise<boolean> = answersHealth) {}

  isHung(peerId: string): boolean {
    return this.hung.has(peerId);
  }

  mark(peerId: string, nowMs: number): void {
    if (!this.hung.has(peerId)) this.hung.set(peerId, { sinceMs: nowMs, probing: null });
  }

  clear(peerId: string): void {
    this.hung.delete(peerId);
  }

  /**
   * Probe a marked home (one probe at a time per home, shared by the requests that wait for it): true, and the mark
   * cleared, when it answers; true for a home not marked.
   */
  recheck(peerId: string, url: string, deadlineMs: number): Promise<boolean> {
    const entry = this.hung.get(peerId);
    if (!entry) return Promise.resolve(true);
    entry.probing ??= this.probe(url, deadlineMs).then((alive) => {
      if (alive) this.hung.delete(peerId);
      else entry.probing = null;
      return alive;
    });
    return entry.probing;
  }

  /** Marked homes (status, tests). */
  list(): string[] {
    return [...this.hung.keys()];
  }
}
