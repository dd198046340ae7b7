// The framing of the node's libp2p stream protocols (/svc/exec/1.0.0, /svc/http/1): one frame = unsigned varint byte
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
