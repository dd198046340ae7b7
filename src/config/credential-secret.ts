// The node secret that provider credentials are encrypted under (llm/credentials.ts derives the AES key from it with
// HKDF). Kept in <dataDir>/credential-secret, 32 random bytes as hex, created once with mode 0600 and written like the
// receipt secret and the operator token (temp file, fsync, rename). Its own secret, not the receipt secret: a mesh
// shares its receipt secret, and an identity's API keys must open only on its home node.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from './error.js';
import { writeSecretFile } from './secret-file.js';

export const CREDENTIAL_SECRET_FILE = 'credential-secret';
const HEX_32 = /^[0-9a-f]{64}$/;

export async function loadOrCreateCredentialSecret(dir: string): Promise<Buffer> {
  const file = join(dir, CREDENTIAL_SECRET_FILE);
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (!HEX_32.test(text)) throw new ConfigError(`${file} must hold 64 lower-case hex digits`);
    return Buffer.from(text, 'hex');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = randomBytes(32);
  await writeSecretFile(file, secret.toString('hex'));
  return secret;
}
