// libp2p 2.x needs Promise.withResolvers, which Node 20 lacks: load the polyfill before anything else.
import '../src/polyfill.js';
import { afterAll } from 'vitest';

// Files that share a worker (isolate: false) share fetch's connection pool too: a kept-alive socket to a node that
// a file stopped must not serve the next file's request to a port the system handed out again. Each file leaves
// with a fresh pool of the same class as Node's built-in one.
const globalDispatcher = Symbol.for('undici.globalDispatcher.1');
afterAll(async () => {
  const slot = globalThis as unknown as Record<symbol, { destroy(): Promise<void> } | undefined>;
  const used = slot[globalDispatcher];
  if (used === undefined) return;
  slot[globalDispatcher] = new (used.constructor as new () => { destroy(): Promise<void> })();
  await used.destroy().catch(() => undefined);
});
