// Server-sent event streams never buffer without bound for a client that does not read: the WebSocket hub's rule
// (HUB_DEFAULTS.maxBufferedBytes). Past it a live stream is ended — its close handlers release its slot, and the
// client reconnects with Last-Event-ID and resumes — and a replay of stored events waits for the client to read.
import type { ServerResponse } from 'node:http';
import { HUB_DEFAULTS } from '../streams/hub.js';

/** Unsent bytes past which a client of an event stream is let go. */
export const SSE_MAX_UNSENT_BYTES = HUB_DEFAULTS.maxBufferedBytes;

/** Is the client this far behind? Then its response is destroyed, and true. */
export function droppedWhenBehind(res: ServerResponse): boolean {
  if (res.writableLength <= SSE_MAX_UNSENT_BYTES) return false;
  res.destroy();
  return true;
}

/** Resolves once the client has read what is buffered (when more than half the bound waits), or has gone. */
export async function readByClient(res: ServerResponse): Promise<void> {
  if (res.destroyed || res.writableLength <= SSE_MAX_UNSENT_BYTES / 2) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
