// The framing of the node's libp2p stream protocols (/svc/exec/1.0.0, /svc/exec/1.1.0, /svc/http/1, /svc/stream/1): one frame = unsigned varint byte
// length + the RFC 8785 canonical JSON of the value as UTF-8 (the length-prefixing libp2p protocols use). A reader
// names the largest frame it takes, so a peer cannot make it buffer without bound.
import type { Stream } from '@libp2p/interface';
import { canonicalJson } from '../kernel/canonical.js';

function uvarint(n: number): Uint8Array {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Uint8Array.from(out);
}

/** One frame: varint length + the canonical JSON of `value` as UTF-8. */
export function encodeFrame(value: unknown): Uint8Array {
  const body = Buffer.from(canonicalJson(value), 'utf8');
  const prefix = uvarint(body.length);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix, 0);
  out.set(body, prefix.length);
  return out;
}

/** Write one frame and close the writing side. */
export async function writeFrame(stream: Pick<Stream, 'sink'>, value: unknown): Promise<void> {
  await stream.sink([encodeFrame(value)]);
}

export class FrameError extends Error {}

/**
 * Read one frame from a stream's source: its JSON value. Throws FrameError when the stream ends first, the length
 * is over `max`, or the text is not JSON.
 */
export async function readFrame(source: AsyncIterable<{ subarray(): Uint8Array }>, max: number): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let have = 0;
  let length = -1;
  let headerBytes = 0;
  for await (const chunk of source) {
    const bytes = chunk.subarray();
    chunks.push(bytes);
    have += bytes.length;
    if (length < 0) {
      const all = concat(chunks, have);
      let value = 0;
      let scale = 1;
      for (let i = 0; i < all.length && i < 5; i++) {
        const b = all[i]!;
        value += (b & 0x7f) * scale;
        scale *= 128;
        if ((b & 0x80) === 0) {
          length = value;
          headerBytes = i + 1;
          break;
        }
      }
      if (length < 0 && all.length >= 5) throw new FrameError('frame length is not a varint of at most 5 bytes');
      if (length > max) throw new FrameError(`frame of ${length} bytes is over the ${max}-byte limit`);
    }
    if (length >= 0 && have >= headerBytes + length) {
      const all = concat(chunks, have);
      try {
        return JSON.parse(Buffer.from(all.subarray(headerBytes, headerBytes + length)).toString('utf8')) as unknown;
      } catch {
        throw new FrameError('frame is not JSON');
      }
    }
  }
  throw new FrameError('the stream ended before a whole frame');
}

/** A request as a stream protocol handler reads it: its JSON value, or the FrameError its refusal names. */
export type RequestFrame = { value: unknown } | { refused: FrameError };

/**
 * Read the one request frame of an inbound stream, aborting the stream when it has not come whole within
 * `timeoutMs`. A frame that is cut short, over `maxBytes` or not JSON resolves to `refused` (the peer is answered a
 * refusal); a stream that fails (reset, aborted, the deadline) rejects: nobody is left to answer.
 */
export async function readRequestFrame(
  stream: { source: AsyncIterable<{ subarray(): Uint8Array }>; abort(err: Error): void },
  maxBytes: number,
  timeoutMs: number,
): Promise<RequestFrame> {
  const frames = readFrames(stream.source, maxBytes);
  try {
    return await firstFrame(frames, stream, timeoutMs);
  } finally {
    // Nothing more is read: the source is let go.
    void frames.return(undefined);
  }
}

/**
 * A request read as readRequestFrame reads it, from a sender that keeps its writing half open until it has the
 * answer (/svc/http/1), and `left`: aborted when the stream goes away before the answer is written, reset by the
 * sender (it stopped waiting: its client left) or lost with its connection. Nobody would read that answer. The end of
 * the sender's writing half alone is not leaving: a sender of an earlier version ends it with its request.
 */
export async function readHeldRequest(
  stream: { source: AsyncIterable<{ subarray(): Uint8Array }>; abort(err: Error): void; readonly writeStatus: string },
  maxBytes: number,
  timeoutMs: number,
): Promise<RequestFrame & { left: AbortSignal }> {
  const frames = readFrames(stream.source, maxBytes);
  const request = await firstFrame(frames, stream, timeoutMs);
  const left = new AbortController();
  const gone = (why: unknown) => left.abort(why instanceof Error ? why : new Error('the stream closed before its answer'));
  void (async () => {
    for (;;) if ((await frames.next()).done) return;
  })().then(
    // A stream that can no longer be written went with its connection; one still writable only had its sender's end.
    () => stream.writeStatus !== 'ready' && gone(null),
    gone,
  );
  return { ...request, left: left.signal };
}

/** The first frame of `frames`, under readRequestFrame's deadline and refusals. */
async function firstFrame(frames: AsyncGenerator<unknown>, stream: { abort(err: Error): void }, timeoutMs: number): Promise<RequestFrame> {
  const late = new Error(`request not received within ${timeoutMs} ms`);
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    stream.abort(late);
  }, timeoutMs);
  try {
    const first = await frames.next();
    if (first.done) return { refused: new FrameError('the stream ended before a whole frame') };
    return { value: first.value };
  } catch (err) {
    if (expired) throw late;
    if (err instanceof FrameError) return { refused: err };
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Write one answer frame and close the stream; a stream that fails on the way is aborted. Resolves to that failure, or null. */
export async function answerFrame(stream: Pick<Stream, 'sink'> & { close(): Promise<void>; abort(err: Error): void }, value: unknown): Promise<Error | null> {
  try {
    await writeFrame(stream, value);
    await stream.close();
    return null;
  } catch (err) {
    const failure = err instanceof Error ? err : new Error(String(err));
    stream.abort(failure);
    return failure;
  }
}

/** Frames from a stream's source, one JSON value each, until the stream ends (a stream of many frames). */
export async function* readFrames(source: AsyncIterable<{ subarray(): Uint8Array }>, max: number): AsyncGenerator<unknown> {
  let buf: Uint8Array = new Uint8Array(0);
  for await (const chunk of source) {
    const bytes = chunk.subarray();
    const joined = new Uint8Array(buf.length + bytes.length);
    joined.set(buf, 0);
    joined.set(bytes, buf.length);
    buf = joined;
    for (;;) {
      let length = -1;
      let header = 0;
      let value = 0;
      let scale = 1;
      for (let i = 0; i < buf.length && i < 5; i++) {
        const b = buf[i]!;
        value += (b & 0x7f) * scale;
        scale *= 128;
        if ((b & 0x80) === 0) {
          length = value;
          header = i + 1;
          break;
        }
      }
      if (length < 0) {
        if (buf.length >= 5) throw new FrameError('frame length is not a varint of at most 5 bytes');
        break;
      }
      if (length > max) throw new FrameError(`frame of ${length} bytes is over the ${max}-byte limit`);
      if (buf.length < header + length) break;
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.from(buf.subarray(header, header + length)).toString('utf8')) as unknown;
      } catch {
        throw new FrameError('frame is not JSON');
      }
      buf = buf.subarray(header + length);
      yield parsed;
    }
  }
}

/** What a stream's sink reads: frames pushed one by one until end(); `bytes` is what is queued and not yet taken. */
export class FrameQueue implements AsyncIterable<Uint8Array> {
  private readonly queue: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  private queued = 0;

  get bytes(): number {
    return this.queued;
  }

  push(frame: Uint8Array): void {
    if (this.ended) return;
    this.queue.push(frame);
    this.queued += frame.length;
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      while (this.queue.length > 0) {
        const frame = this.queue.shift()!;
        this.queued -= frame.length;
        yield frame;
      }
      if (this.ended) return;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = null;
    }
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  chunks.length = 0;
  chunks.push(out);
  return out;
}
