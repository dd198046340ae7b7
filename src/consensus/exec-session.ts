// Offloaded execution over one long-lived stream per peer (architecture.md §6): /svc/exec/1.1.0 carries many runs on
// one libp2p stream instead of one stream per run. Frames are those of /svc/exec/1.0.0 (exec-protocol.ts: varint
// length + canonical JSON); the home sends {id, request} and the executor answers {id, answer} as each run ends, in
// any order, so several runs are in flight on one stream. A stream that fails fails the runs waiting on it (each then
// happens at home, as any failed placement) and the next run opens a new one. The request, the answer and their
// checks are those of 1.0.0.
import type { Stream } from '@libp2p/interface';
import { encodeFrame, FrameError, MAX_ANSWER_BYTES, MAX_REQUEST_BYTES, type ExecRequest } from './exec-protocol.js';
import { FrameQueue, readFrames } from '../mesh/frame.js';

export { readFrames };

export const EXEC_SESSION_PROTOCOL = '/svc/exec/1.1.0';
/** Runs in flight on one session at most (a further one runs at home: SessionFull, the peer is not skipped). */
const MAX_OPEN_REQUESTS = 256;

/** The session holds its most runs in flight: the run happens at home, and the peer is not skipped for it. */
export class SessionFull extends Error {}

interface Session {
  stream: Stream;
  out: FrameQueue;
  pending: Map<number, { resolve: (raw: unknown) => void; reject: (err: Error) => void }>;
  next: number;
  closed: boolean;
}

/** The home's side: one session per peer, opened on first use, reopened after a failure. */
export class ExecSessions {
  private readonly sessions = new Map<string, Promise<Session>>();
  readonly stats = { opened: 0, requests: 0, failed_sessions: 0 };

  constructor(private readonly open: (peerId: string, protocol: string, signal: AbortSignal) => Promise<Stream>) {}

  /** Send one request to `peerId` and resolve to its raw answer (checked by the caller). Rejects on failure or abort. */
  async request(peerId: string, request: ExecRequest, signal: AbortSignal): Promise<unknown> {
    const s = await this.session(peerId, signal);
    if (s.pending.size >= MAX_OPEN_REQUESTS) throw new SessionFull(`${MAX_OPEN_REQUESTS} runs are in flight on this peer's session`);
    const id = s.next++;
    this.stats.requests++;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => {
        s.pending.delete(id);
        reject(new Error('no answer in time'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      s.pending.set(id, {
        resolve: (raw) => {
          signal.removeEventListener('abort', onAbort);
          resolve(raw);
        },
        reject: (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      });
      s.out.push(encodeFrame({ id, request }));
    });
  }

  /** Close every session (node stop). */
  closeAll(): void {
    for (const p of this.sessions.values())
      void p.then(
        (s) => this.fail(s, new Error('closed')),
        () => undefined,
      );
    this.sessions.clear();
  }

  private session(peerId: string, signal: AbortSignal): Promise<Session> {
    let p = this.sessions.get(peerId);
    if (!p) {
      p = this.start(peerId, signal);
      this.sessions.set(peerId, p);
      p.catch(() => {
        if (this.sessions.get(peerId) === p) this.sessions.delete(peerId);
      });
    }
    return p;
  }

  private async start(peerId: string, signal: AbortSignal): Promise<Session> {
    const stream = await this.open(peerId, EXEC_SESSION_PROTOCOL, signal);
    this.stats.opened++;
    const s: Session = { stream, out: new FrameQueue(), pending: new Map(), next: 1, closed: false };
    const drop = (err: Error) => {
      if (this.sessions.get(peerId) !== undefined) this.sessions.delete(peerId);
      this.fail(s, err);
    };
    void stream.sink(s.out).catch((err: unknown) => drop(err instanceof Error ? err : new Error(String(err))));
    void (async () => {
      for await (const raw of readFrames(stream.source, MAX_ANSWER_BYTES)) {
        const frame = raw as { id?: unknown; answer?: unknown } | null;
        const id = typeof frame?.id === 'number' ? frame.id : -1;
        const waiter = s.pending.get(id);
        if (!waiter) continue;
        s.pending.delete(id);
        waiter.resolve(frame!.answer);
      }
      throw new Error('the peer closed the session');
    })().catch((err: unknown) => drop(err instanceof Error ? err : new Error(String(err))));
    return s;
  }

  private fail(s: Session, err: Error): void {
    if (s.closed) return;
    s.closed = true;
    this.stats.failed_sessions++;
    for (const w of s.pending.values()) w.reject(err);
    s.pending.clear();
    s.out.end();
    s.stream.abort(err);
  }
}

/** The executor's side: answer every {id, request} frame of the session with {id, answer}, runs concurrently. */
export async function serveSession(stream: Stream, answer: (raw: unknown) => Promise<unknown>, onError: (err: unknown) => void): Promise<void> {
  const out = new FrameQueue();
  const sink = stream.sink(out).catch(onError);
  const running = new Set<Promise<void>>();
  try {
    for await (const raw of readFrames(stream.source, MAX_REQUEST_BYTES)) {
      const frame = raw as { id?: unknown; request?: unknown } | null;
      if (typeof frame?.id !== 'number') throw new FrameError('a session frame carries a numeric id');
      const id = frame.id;
      const run = answer(frame.request).then(
        (a) => out.push(encodeFrame({ id, answer: a })),
        (err: unknown) => onError(err),
      );
      running.add(run);
      void run.finally(() => running.delete(run));
    }
    // The home closed its side: the runs still on are answered, then this side closes too.
    await Promise.all(running);
  } catch (err) {
    onError(err);
    stream.abort(err instanceof Error ? err : new Error(String(err)));
  } finally {
    out.end();
    await sink;
  }
}
