// Offloaded execution over one long-lived stream per peer (architecture.md §6): /svc/exec/1.1.0 carries many runs on
// one libp2p stream instead of one stream per run. Frames are those of /svc/exec/1.0.0 (exec-protocol.ts: varint
// length + canonical JSON); the home sends {id, request} and the executor answers {id, answer} as each run ends, in
// any order, so several runs are in flight on one stream. A stream that fails fails the runs waiting on it (each then
// happens at home, as any failed placement) and the next run opens a new one. The request, the answer and their
// checks are those of 1.0.0.
//
// A home whose caller left sends {id, cancel: <the run's id>} (an id of its own, so an executor that does not know
// cancels answers it a refusal nobody waits for): a run still waiting there for a worker is dropped and answered
// SVC_BAD_REQUEST; one on a worker finishes and is answered as usual. A session that fails drops the runs still
// waiting for it: nobody is left to take their answers.
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

  /**
   * Send one request to `peerId` and resolve to its raw answer (checked by the caller). Rejects on failure or abort.
   * `cancel` (the caller left): the executor is asked to drop the run if it still waits there, and its answer is
   * awaited either way (a refusal, or the output of a run already on a worker).
   */
  async request(peerId: string, request: ExecRequest, signal: AbortSignal, cancel?: AbortSignal): Promise<unknown> {
    const s = await this.session(peerId, signal);
    if (s.pending.size >= MAX_OPEN_REQUESTS) throw new SessionFull(`${MAX_OPEN_REQUESTS} runs are in flight on this peer's session`);
    // Left while the session opened: nothing was sent.
    cancel?.throwIfAborted();
    const id = s.next++;
    this.stats.requests++;
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => {
        unlisten();
        s.pending.delete(id);
        reject(new Error('no answer in time'));
      };
      const onCancel = () => {
        if (!s.closed && s.pending.has(id)) s.out.push(encodeFrame({ id: s.next++, cancel: id }));
      };
      const unlisten = () => {
        signal.removeEventListener('abort', onAbort);
        cancel?.removeEventListener('abort', onCancel);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      cancel?.addEventListener('abort', onCancel, { once: true });
      s.pending.set(id, {
        resolve: (raw) => {
          unlisten();
          resolve(raw);
        },
        reject: (err) => {
          unlisten();
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

/**
 * The executor's side: answer every {id, request} frame of the session with {id, answer}, runs concurrently. Each
 * run's `cancelled` aborts on the home's {id, cancel} for it, or when the session fails.
 */
export async function serveSession(
  stream: Stream,
  answer: (raw: unknown, cancelled: AbortSignal) => Promise<unknown>,
  onError: (err: unknown) => void,
): Promise<void> {
  const out = new FrameQueue();
  const sink = stream.sink(out).catch(onError);
  const running = new Set<Promise<void>>();
  const cancels = new Map<number, AbortController>();
  try {
    for await (const raw of readFrames(stream.source, MAX_REQUEST_BYTES)) {
      const frame = raw as { id?: unknown; request?: unknown; cancel?: unknown } | null;
      if (typeof frame?.id !== 'number') throw new FrameError('a session frame carries a numeric id');
      if (typeof frame.cancel === 'number') {
        // Not answered: the home awaits the run's own answer.
        cancels.get(frame.cancel)?.abort(new Error("the home's caller left"));
        continue;
      }
      const id = frame.id;
      const cancel = new AbortController();
      cancels.set(id, cancel);
      const run = answer(frame.request, cancel.signal)
        .then(
          (a) => out.push(encodeFrame({ id, answer: a })),
          (err: unknown) => onError(err),
        )
        .finally(() => cancels.delete(id));
      running.add(run);
      void run.finally(() => running.delete(run));
    }
    // The home closed its side: the runs still on are answered, then this side closes too.
    await Promise.all(running);
  } catch (err) {
    onError(err);
    const failure = err instanceof Error ? err : new Error(String(err));
    for (const c of cancels.values()) c.abort(failure);
    stream.abort(failure);
  } finally {
    out.end();
    await sink;
  }
}
