// The operator token: the bearer secret of the node's operator routes (POST /api/tally/grants). Generated once as
// <dataDir>/operator-token (mode 0600, written like the receipt secret: temp file, fsync, rename), shown by
// `svc-node keys`. The node keeps only its SHA-256 digest in memory and compares digests in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from './error.js';
import { writeSecretFile } from './secret-file.js';

export const OPERATOR_TOKEN_FILE = 'operator-token';
export const OPERATOR_TOKEN_PATTERN = /^op_[0-9a-f]{64}$/;

/** The token kept in `dir`, or null when there is none. */
export async function readOperatorToken(dir: string): Promise<string | null> {
  const file = join(dir, OPERATOR_TOKEN_FILE);
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (!OPERATOR_TOKEN_PATTERN.test(text)) throw new ConfigError(`${file} must hold op_ followed by 64 lower-case hex digits`);
  return text;
}

/** The token kept in `dir`, created once: `op_` + 32 random bytes in hex. */
export async function loadOrCreateOperatorToken(dir: string): Promise<string> {
  const kept = await readOperatorToken(dir);
  if (kept !== null) return kept;
  const file = join(dir, OPERATOR_TOKEN_FILE);
  const token = `op_${randomBytes(32).toString('hex')}`;
  await writeSecretFile(file, token);
  return token;
}

export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Does `presented` match the token of `digest`? Digests of equal length are compared in constant time. */
export function matchesToken(presented: string, digest: Buffer): boolean {
  return timingSafeEqual(tokenDigest(presented), digest);
}
