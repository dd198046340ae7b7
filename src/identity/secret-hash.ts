// How a node keeps the secrets an identity proves itself with (a password, the digest of a ZK equation): scrypt with
// a per-identity salt, r 8, p 1, and a cost N = 2^cost. The cost a hash was made with is kept beside it, so a node whose
// configured cost changes, or that holds a record made elsewhere, still checks it with the cost it was made at.
import { scrypt } from 'node:crypto';
import { DEFAULT_SCRYPT_COST } from '../config/scrypt-cost.js';

/** scrypt(secret, salt) at N = 2^cost: 32 bytes. Runs on libuv's thread pool, off the event loop. */
export function hashSecret(secret: string, saltHex: string, cost: number = DEFAULT_SCRYPT_COST): Promise<Buffer> {
  const N = 2 ** cost;
  // scrypt needs 128 · N · r bytes; Node refuses above maxmem (32 MiB by default), so it is given that plus headroom.
  const maxmem = 256 * N * 8;
  return new Promise((resolve, reject) =>
    scrypt(secret, Buffer.from(saltHex, 'hex'), 32, { N, r: 8, p: 1, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}
