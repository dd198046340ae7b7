// One long-lived exec stream per peer (consensus/exec-session.ts): frames split anywhere are read whole; many runs
// share one stream and their answers come back by id in any order; a stream that fails fails the runs waiting on
// it, and the next run opens a new one; a home whose caller left cancels its run, and the run's own answer still
// comes back. Over an in-memory stream pair (no libp2p).
import { describe, expect, it, vi } from 'vitest';
import type { Stream } from '@libp2p/interface';
import { encodeFrame, FrameError, type ExecRequest } from '../../src/consensus/exec-protocol.js';
import { ExecSessions, readFrames, serveSession } from '../../src/consensus/exec-session.js';
import { Pipe } from '../helpers/pipe.js';

function streamPair(): [Stream, Stream, () => void] {
  const ab = new Pipe();
  const ba = new Pipe();
  const side = (inbound: Pipe, outbound: Pipe): Stream =>
    ({
      source: inbound,
      sink: async (src: AsyncIterable<Uint8Array>) => {
        for await (const c of src) outbound.push(c);
        outbound.end();
      },
      abort: (err: Error) => {
        inbound.end(err);
        outbound.end(err);
      },
      close: async () => outbound.end(),
    }) as unknown as Stream;
  return [side(ba, ab), side(ab, ba), () => (ab.end(new Error('reset')), ba.end(new Error('reset')))];
}

const request = (n: number): ExecRequest => ({
  v: 1,
  solver: 'zeta',
  inputs: { n },
  request_digest: 'a'.repeat(64),
  svcond: 1,
  time_limit_s: 30,
  handshake: 'v1=x',
});

describe('exec sessions', () => {
  it('reads frames split at any byte, and refuses one over the limit', async () => {
    const bytes = Buffer.concat([encodeFrame({ a: 1 }), encodeFrame({ b: [2, 3] }), encodeFrame('c')]);
    const pipe = new Pipe();
    for (const b of bytes) pipe.push(Uint8Array.of(b));
    pipe.end();
    const got: unknown[] = [];
    for await (const v of readFrames(pipe, 1024)) got.push(v);
    expect(got).toEqual([{ a: 1 }, { b: [2, 3] }, 'c']);
    const big = new Pipe();
    big.push(encodeFrame({ x: 'y'.repeat(100) }));
    big.end();
    await expect(async () => {
      for await (const _ of readFrames(big, 10)) void _;
    }).rejects.toBeInstanceOf(FrameError);
  });

  it('many runs share one stream; answers come back by id in any order; a failed stream fails its runs and the next run opens another', async () => {
    const opened: (() => void)[] = [];
    const sessions = new ExecSessions(async () => {
      const [client, server, reset] = streamPair();
      opened.push(reset);
      // The executor answers each request after a delay that reverses their order.
      void serveSession(
        server,
        async (raw) => {
          const n = (raw as ExecRequest).inputs.n as number;
          await new Promise((r) => setTimeout(r, 50 - n * 10));
          return { ok: true, n };
        },
        () => undefined,
      );
      return client;
    });
    const signal = AbortSignal.timeout(5_000);
    const answers = await Promise.all([0, 1, 2, 3, 4].map((n) => sessions.request('peer-b', request(n), signal)));
    expect(answers).toEqual([0, 1, 2, 3, 4].map((n) => ({ ok: true, n })));
    expect(sessions.stats).toMatchObject({ opened: 1, requests: 5 });
    // The stream breaks with a run in flight: that run fails; the next one opens a new stream.
    const pending = sessions.request('peer-b', request(0), signal);
    opened[0]!();
    await expect(pending).rejects.toThrow();
    expect(await sessions.request('peer-b', request(3), signal)).toEqual({ ok: true, n: 3 });
    expect(sessions.stats.opened).toBe(2);
    // A run not answered in time is given up on; the session stays.
    const quick = sessions.request('peer-b', { ...request(0), inputs: { n: -100 } }, AbortSignal.timeout(20));
    await expect(quick).rejects.toThrow('no answer in time');
    expect(await sessions.request('peer-b', request(4), signal)).toEqual({ ok: true, n: 4 });
    expect(sessions.stats.opened).toBe(2);
    sessions.closeAll();
  });

  /** Sessions to one executor serving with `answer`; the runs' `cancelled` signals, by input n. */
  function servedBy(answer: (raw: unknown, cancelled: AbortSignal) => Promise<unknown>) {
    const reset: (() => void)[] = [];
    const sessions = new ExecSessions(async () => {
      const [client, server, r] = streamPair();
      reset.push(r);
      void serveSession(server, answer, () => undefined);
      return client;
    });
    return { sessions, reset };
  }

  it('a cancel reaches only its run, which answers as it ends (dropped while waiting, or its output once started)', async () => {
    const signals = new Map<number, AbortSignal>();
    const { sessions } = servedBy(async (raw, cancelled) => {
      const n = (raw as ExecRequest).inputs.n as number;
      signals.set(n, cancelled);
      // Run 1 waits for a worker and leaves the queue when cancelled; runs 2 and 3 have started and finish.
      if (n === 1) return new Promise((resolve) => cancelled.addEventListener('abort', () => resolve({ ok: false, code: 'SVC_BAD_REQUEST' })));
      await new Promise((r) => setTimeout(r, 50));
      return { ok: true, n };
    });
    const signal = AbortSignal.timeout(5_000);
    const [leave1, leave2] = [new AbortController(), new AbortController()];
    const runs = [sessions.request('peer-b', request(1), signal, leave1.signal), sessions.request('peer-b', request(2), signal, leave2.signal)];
    const third = sessions.request('peer-b', request(3), signal);
    await vi.waitFor(() => expect(signals.size).toBe(3));
    leave1.abort();
    leave2.abort();
    expect(await Promise.all(runs)).toEqual([
      { ok: false, code: 'SVC_BAD_REQUEST' },
      { ok: true, n: 2 },
    ]);
    expect(await third).toEqual({ ok: true, n: 3 });
    expect([1, 2, 3].map((n) => signals.get(n)!.aborted)).toEqual([true, true, false]);
    // Left before the session carried it: nothing is sent.
    const gone = new AbortController();
    gone.abort(new Error('left'));
    await expect(sessions.request('peer-b', request(4), signal, gone.signal)).rejects.toThrow('left');
    expect(signals.has(4)).toBe(false);
    sessions.closeAll();
  });

  it('an executor that does not know cancels answers the cancel frame under its own id: the run is still awaited', async () => {
    // As an earlier executor: every frame is a request, answered by its id (the cancel is a malformed one).
    const { sessions } = servedBy(async (raw) => {
      if (raw === undefined) return { ok: false, code: 'SVC_INVALID_INPUT' };
      await new Promise((r) => setTimeout(r, 50));
      return { ok: true, n: (raw as ExecRequest).inputs.n };
    });
    const leave = new AbortController();
    const run = sessions.request('peer-b', request(5), AbortSignal.timeout(5_000), leave.signal);
    await new Promise((r) => setTimeout(r, 10));
    leave.abort();
    expect(await run).toEqual({ ok: true, n: 5 });
    sessions.closeAll();
  });

  it('a session that fails drops the runs still waiting at the executor', async () => {
    const signals: AbortSignal[] = [];
    const { sessions, reset } = servedBy((_raw, cancelled) => {
      signals.push(cancelled);
      return new Promise(() => undefined);
    });
    const run = sessions.request('peer-b', request(6), AbortSignal.timeout(5_000));
    await vi.waitFor(() => expect(signals).toHaveLength(1));
    reset[0]!();
    await expect(run).rejects.toThrow();
    await vi.waitFor(() => expect(signals[0]!.aborted).toBe(true));
  });
});
