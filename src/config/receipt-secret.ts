// The receipt secret is bytes, written as hex wherever it is written: a data dir's `receipt-secret` file, the
// cluster data root's, SVC_RECEIPT_SECRET, the config's receiptSecret and `svc-node verify --secret`. One text is
// one key on every path (docs/protocol.md, "Receipt keys"). Text that is not hex is refused, never reinterpreted.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from './error.js';
import { writeSecretFile } from './secret-file.js';

export const RECEIPT_SECRET_FILE = 'receipt-secret';
/** A secret shorter than this is refused (16 bytes = 32 hex digits). */
export const RECEIPT_SECRET_MIN_BYTES = 16;
/** Hex of at least 16 bytes (either case). */
export const RECEIPT_SECRET_HEX = /^(?:[0-9a-fA-F]{2}){16,}$/;
export const RECEIPT_SECRET_RULE =
  'must be hex of at least 16 bytes (32+ hex digits), e.g. `openssl rand -hex 32`; a passphrase used before this rule keeps its key as the hex of its UTF-8 bytes';

/** The secret's bytes from its hex text (surrounding whitespace ignored); ConfigError naming `from` otherwise. */
export function decodeReceiptSecret(text: string, from: string): Buffer {
  const hex = text.trim();
  if (!RECEIPT_SECRET_HEX.test(hex)) throw new ConfigError(`the receipt secret in ${from} ${RECEIPT_SECRET_RULE}`);
  return Buffer.from(hex, 'hex');
}

/** The secret kept in `dir`, or null when the dir has no receipt-secret file. */
export async function readReceiptSecretFile(dir: string): Promise<Buffer | null> {
  const file = join(dir, RECEIPT_SECRET_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return decodeReceiptSecret(text, file);
}

/** The secret kept in `dir`, created once (32 random bytes, mode 0600, written through a temp file and rename). */
export async function loadOrCreateReceiptSecret(dir: string): Promise<Buffer> {
  const kept = await readReceiptSecretFile(dir);
  if (kept !== null) return kept;
  const file = join(dir, RECEIPT_SECRET_FILE);
  const secret = randomBytes(32);
  await writeSecretFile(file, secret.toString('hex'));
  return secret;
}

/** A short public name of a key derived from the receipt secret (its SHA-256, 16 hex digits): safe to show and log. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}
