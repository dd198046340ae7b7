// The request/answer shape of the one-frame stream protocols (mesh/frame.ts): a request read under a deadline (a
// bad frame is a refusal to answer, a failed or silent stream is not), a held request's stream watched for its sender
// leaving, and an answer written then closed (a stream that fails on the way is aborted). Over an in-memory stream
// (no libp2p).
import { describe, expect, it } from 'vitest';
import type { Stream } from '@libp2p/interface';
import { answerFrame, encodeFrame, FrameError, readHeldRequest, readRequestFrame } from '../../src/mesh/frame.js';
import { Pipe } from '../helpers/pipe.js';

/** One side of a stream: chunks pushed into its source, what its sink takes, and how it was closed or aborted. */
class FakeStream {
  readonly source = new Pipe();
  readonly written: Uint8Array[] = [];
  aborted: Error | null = null;
  closed = false;
  /** As libp2p's: 'ready' until this side writes, or until the stream goes (reset, its connection lost). */
  writeStatus = 'ready';
  sinkFails: Error | null = null;

  push(...chunks: Uint8Array[]): this {
    for (const c of chunks) this.source.push(c);
    return this;
  }

  end(err?: Error): this {
    this.source.end(err);
    return this;
  }

  sink: Stream['sink'] = async (src) => {
    if (this.sinkFails) throw this.sinkFails;
    for await (const c of src) this.written.push(c.subarray());
  };

  close = async (): Promise<void> => {
    this.closed = true;
  };

  abort = (err: Error): void => {
    this.aborted = err;
    this.end(err);
  };
}

describe('readRequestFrame', () => {
  it('reads a frame that comes in pieces as its JSON value', async () => {
    const frame = encodeFrame({ v: 1, entries: ['a', 'b'] });
    const stream = new FakeStream().push(frame.subarray(0, 3), frame.subarray(3));
    expect(await readRequestFrame(stream, 1024, 5_000)).toEqual({ value: { v: 1, entries: ['a', 'b'] } });
    expect(stream.aborted).toBeNull();
  });

  it('answers an oversize, cut-short or non-JSON frame with the FrameError to refuse it with', async () => {
    const oversize = await readRequestFrame(new FakeStream().push(encodeFrame({ x: 'y'.repeat(200) })), 100, 5_000);
    expect('refused' in oversize && oversize.refused).toBeInstanceOf(FrameError);
    expect('refused' in oversize && oversize.refused.message).toMatch(/over the 100-byte limit/);
    const cut = await readRequestFrame(new FakeStream().push(encodeFrame({ a: 1 }).subarray(0, 4)).end(), 100, 5_000);
    expect('refused' in cut && cut.refused.message).toMatch(/ended before a whole frame/);
    const notJson = await readRequestFrame(new FakeStream().push(Uint8Array.from([3, 0x7b, 0x7b, 0x7b])), 100, 5_000);
    expect('refused' in notJson && notJson.refused.message).toMatch(/not JSON/);
  });

  it('aborts a stream whose request does not come within the deadline, and rejects (nobody to answer)', async () => {
    const stream = new FakeStream().push(encodeFrame({ a: 1 }).subarray(0, 2));
    await expect(readRequestFrame(stream, 1024, 30)).rejects.toThrow(/not received within 30 ms/);
    expect(stream.aborted?.message).toMatch(/not received within 30 ms/);
  });

  it('rejects with the failure of a stream that is reset', async () => {
    const reset = new Error('stream reset');
    const stream = new FakeStream().push(Uint8Array.from([10])).end(reset);
    await expect(readRequestFrame(stream, 1024, 5_000)).rejects.toBe(reset);
  });
});

describe('readHeldRequest', () => {
  const settle = () => new Promise((r) => setTimeout(r, 20));

  it('the sender ending its writing half is not leaving: an earlier sender ends it with its request', async () => {
    const stream = new FakeStream().push(encodeFrame({ a: 1 }));
    const held = await readHeldRequest(stream, 1024, 5_000);
    expect(held).toMatchObject({ value: { a: 1 } });
    stream.end();
    await settle();
    expect(held.left.aborted).toBe(false);
  });

  it('a reset before the answer is leaving: `left` aborts with the stream’s failure', async () => {
    const stream = new FakeStream().push(encodeFrame({ a: 1 }));
    const held = await readHeldRequest(stream, 1024, 5_000);
    await settle();
    expect(held.left.aborted).toBe(false);
    const reset = new Error('stream reset');
    stream.end(reset);
    await settle();
    expect(held.left.reason).toBe(reset);
  });

  it('a stream gone with its connection (no longer writable) is leaving too', async () => {
    const stream = new FakeStream().push(encodeFrame({ a: 1 }));
    const held = await readHeldRequest(stream, 1024, 5_000);
    stream.writeStatus = 'closed';
    stream.end();
    await settle();
    expect(held.left.aborted).toBe(true);
  });

  it('refuses a bad frame as readRequestFrame does', async () => {
    const cut = await readHeldRequest(new FakeStream().push(encodeFrame({ a: 1 }).subarray(0, 4)).end(), 100, 5_000);
    expect('refused' in cut && cut.refused.message).toMatch(/ended before a whole frame/);
  });
});

describe('answerFrame', () => {
  it('writes the answer as one frame, then closes the stream', async () => {
    const stream = new FakeStream();
    expect(await answerFrame(stream, { ok: true, n: 2 })).toBeNull();
    expect(Buffer.concat(stream.written)).toEqual(Buffer.from(encodeFrame({ n: 2, ok: true })));
    expect(stream.closed).toBe(true);
    expect(stream.aborted).toBeNull();
  });

  it('aborts a stream that fails while the answer is written, and resolves to that failure', async () => {
    const stream = new FakeStream();
    stream.sinkFails = new Error('connection closed');
    const failure = await answerFrame(stream, { ok: false });
    expect(failure?.message).toBe('connection closed');
    expect(stream.aborted).toBe(failure);
    expect(stream.closed).toBe(false);
  });
});
