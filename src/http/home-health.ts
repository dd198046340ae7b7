// Home nodes that stopped answering. A forward to a home that shows no life within the deadline marks it hung; while
// it is marked, forwards to it answer 503 at once instead of each waiting out the deadline, and one probe of its
// health at a time runs in the background: the first probe it answers clears the mark.

export const HEALTH_PATH = '/api/health';

/** Does the node at `url` answer its health route within `deadlineMs`? (A stopped process accepts, never answers.) */
export async function answersHealth(url: string, deadlineMs: number): Promise<boolean> {
  try {
    const res = await fetch(url + HEALTH_PATH, { signal: AbortSignal.timeout(deadlineMs) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

export class HungHomes {
  /** Peer id → when it was marked (ms) and whether a probe is under way. Bounded by the peer table it comes from. */
  private readonly hung = new Map<string, { sinceMs: number; probing: boolean }>();

  constructor(private readonly probe: (url: string, deadlineMs: number) => Promise<boolean> = answersHealth) {}

  isHung(peerId: string): boolean {
    return this.hung.has(peerId);
  }

  mark(peerId: string, nowMs: number): void {
    if (!this.hung.has(peerId)) this.hung.set(peerId, { sinceMs: nowMs, probing: false });
  }

  clear(peerId: string): void {
    this.hung.delete(peerId);
  }

  /** Probe a marked home in the background (one probe at a time per home); it is cleared when it answers. */
  recheck(peerId: string, url: string, deadlineMs: number): void {
    const entry = this.hung.get(peerId);
    if (!entry || entry.probing) return;
    entry.probing = true;
    void this.probe(url, deadlineMs).then((alive) => {
      if (alive) this.hung.delete(peerId);
      else entry.probing = false;
    });
  }

  /** Marked homes (status, tests). */
  list(): string[] {
    return [...this.hung.keys()];
  }
}
