// The one way a node writes a secret of its data dir (receipt secret, operator token, credential secret, node key):
// to a temp file created 0600, fsynced, then renamed — never a half-written or world-readable secret.
import { open, rename } from 'node:fs/promises';

export async function writeSecretFile(file: string, content: string | Uint8Array): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(content);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}
