import { createServer } from 'node:net';

// Ports are taken below Linux's ephemeral range (32768–60999): a port from there, released and listened on later
// (a restarted node keeps its port), can meanwhile be handed to any listen(0) or outbound connection of the
// machine. Below it only explicit choices land, and each test worker draws from its own band of them.
const LOW = 20_000;
const HIGH = 32_767;
const BANDS = 8;
const BAND = Math.floor((HIGH - LOW + 1) / BANDS);
const worker = Number(process.env.VITEST_POOL_ID ?? process.pid) % BANDS;
let next = (process.pid * 7) % BAND;

/** A port on 127.0.0.1 that nothing listens on (a test then listens on it, or dials it to meet a closed port). */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < BAND; tries++) {
    const port = LOW + worker * BAND + (next++ % BAND);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in band ${worker} (${LOW + worker * BAND}–${LOW + (worker + 1) * BAND - 1})`);
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A port on 127.0.0.1 that something listens on (a listener that hangs up on whoever connects, so closing it does not
 * wait): what a node meets when its port is taken. `release` closes it.
 */
export async function busyPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const port = await freePort();
  const held = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => held.listen(port, '127.0.0.1', () => resolve()));
  return { port, release: () => new Promise<void>((resolve) => held.close(() => resolve())) };
}
