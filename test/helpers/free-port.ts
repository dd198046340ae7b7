import { createServer } from 'node:net';

/** A port on 127.0.0.1 that nothing listens on: bound to port 0, then released (a test then listens on it, or
 * dials it to meet a closed port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
