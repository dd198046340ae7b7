// How a node keeps the secrets an identity proves itself with (a password, the digest of a ZK equation): scrypt with
// a per-identity salt, r 8, p 1, and a cost N = 2^cost. The cost a hash was made with is kept beside it, so a node whose
// configured cost changes, or that holds a record made elsewhere, still checks it with the cost it was made at.
//
// scrypt runs on libuv's thread pool, which LevelDB's reads and writes and the file system share (4 threads unless
// UV_THREADPOOL_SIZE says otherwise). Unbounded, 16 anonymous logins in flight took every thread for ~0.1 s each and
// durable sealing fell from ~2,300 to ~130 a second (performance.md, "Identities' secrets"). So at most SCRYPT_RUNNING
// run at once (util/pool-gate.ts) and the rest of the pool and of the cores stays free; beyond SCRYPT_WAITING waiting,
// a caller is told to come back (429).
import { scrypt } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { DEFAULT_SCRYPT_COST } from '../config/scrypt-cost.js';
import { ServiceError } from '../kernel/errors.js';
import { PoolGate, THREADPOOL_SIZE } from '../util/pool-gate.js';

/**
 * scrypt computations at once at most: two threads of the pool are left to the store and the file system, and half
 * the cores to everything else (each computation keeps a core busy).
 */
export const SCRYPT_RUNNING = Math.max(1, Math.min(THREADPOOL_SIZE - 2, Math.floor(availableParallelism() / 2)));
/** Computations waiting at most (a few seconds of work at the default cost); beyond, 429. */
export const SCRYPT_WAITING = 64;

const gate = new PoolGate(SCRYPT_RUNNING, SCRYPT_WAITING);

function busy(): ServiceError {
  return new ServiceError(429, 'SVC_RATE_LIMIT', 'too many sign-ins and registrations on this node at once: try again in a second', {
    limit: SCRYPT_RUNNING + SCRYPT_WAITING,
    window_seconds: 1,
    retry_after_seconds: 1,
    reset_at: new Date(Date.now() + 1000).toISOString(),
    scope: 'node',
  });
}

/** Computations running and waiting now (tests, metrics). */
export function scryptLoad(): { running: number; waiting: number } {
  return gate.load();
}

/** scrypt(secret, salt) at N = 2^cost: 32 bytes, on libuv's thread pool, at most SCRYPT_RUNNING at once. */
export function hashSecret(secret: string, saltHex: string, cost: number = DEFAULT_SCRYPT_COST): Promise<Buffer> {
  const N = 2 ** cost;
  // scrypt needs 128 · N · r bytes; Node refuses above maxmem (32 MiB by default), so it is given that plus headroom.
  const maxmem = 256 * N * 8;
  return gate.run(
    () =>
      new Promise<Buffer>((resolve, reject) =>
        scrypt(secret, Buffer.from(saltHex, 'hex'), 32, { N, r: 8, p: 1, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
      ),
    busy,
  );
}
