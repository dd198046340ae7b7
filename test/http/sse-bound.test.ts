// An event stream's client that does not read is let go past the bound, and a replay waits for the client to read:
// over a real HTTP server on 127.0.0.1 and a client socket that stops reading.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { droppedWhenBehind, readByClient, SSE_MAX_UNSENT_BYTES } from '../../src/http/sse-bound.js';

let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = null;
});

/** A server whose one response is handed to `handle`; a client that sends a GET and then reads nothing until resumed. */
async function stalledClient(handle: (res: ServerResponse) => void) {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    handle(res);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write('GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  socket.pause();
  return socket;
}

const CHUNK = `data: ${'x'.repeat(64 * 1024)}\n\n`;

describe('event streams and clients that do not read', () => {
  it('a live stream to a client that stops reading is ended once more than the bound waits unsent', async () => {
    let written = 0;
    const ended = new Promise<void>((resolve) => {
      void stalledClient((res) => {
        res.once('close', () => resolve());
        const tick = setInterval(() => {
          if (droppedWhenBehind(res)) return clearInterval(tick);
          res.write(CHUNK);
          written += CHUNK.length;
        }, 2);
      });
    });
    await ended;
    // The kernel's socket buffers take some before the stream's own buffer grows; far less than without a bound.
    expect(written).toBeGreaterThan(SSE_MAX_UNSENT_BYTES);
    expect(written).toBeLessThan(64 * SSE_MAX_UNSENT_BYTES);
  }, 30_000);

  it('a replay waits for the client to read, and goes on when it does', async () => {
    let waiting = false;
    let finished = false;
    const socket = await stalledClient((res) => {
      void (async () => {
        for (let i = 0; i < 200; i++) {
          res.write(CHUNK);
          waiting = true;
          await readByClient(res);
          waiting = false;
          expect(res.writableLength).toBeLessThanOrEqual(SSE_MAX_UNSENT_BYTES);
        }
        finished = true;
        res.end();
      })();
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(waiting).toBe(true);
    expect(finished).toBe(false);
    socket.resume();
    const end = Date.now() + 20_000;
    while (!finished && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(finished).toBe(true);
  }, 30_000);
});
