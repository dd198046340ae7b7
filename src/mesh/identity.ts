// The node's persistent Ed25519 key: <dataDir>/node-key (libp2p protobuf encoding, file mode 0600), created on
// first start. Its libp2p peer id is the node id.
import { chmod, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { PeerId, PrivateKey } from '@libp2p/interface';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { writeSecretFile } from '../config/secret-file.js';
import { makeDirs } from '../util/make-dirs.js';

export const NODE_KEY_FILE = 'node-key';

export interface NodeIdentity {
  privateKey: PrivateKey;
  peerId: PeerId;
  /** The peer id as a string: the node id. */
  nodeId: string;
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

export async function loadOrCreateNodeKey(dataDir: string): Promise<NodeIdentity> {
  await makeDirs(dataDir);
  const file = join(dataDir, NODE_KEY_FILE);
  let privateKey: PrivateKey;
  try {
    const bytes = await readFile(file);
    // @libp2p/crypto 5 is typed against a newer @libp2p/interface than libp2p 2.10; the key objects are the same.
    privateKey = privateKeyFromProtobuf(bytes) as unknown as PrivateKey;
    if (privateKey.type !== 'Ed25519') throw new Error(`${file} holds a ${privateKey.type} key; an Ed25519 key is required`);
    const mode = (await stat(file)).mode & 0o777;
    if (mode !== 0o600) await chmod(file, 0o600);
  } catch (err) {
    if (!isMissing(err)) throw err;
    privateKey = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    // Write to a temp file created 0600, fsync, then rename: never a half-written or world-readable key.
    await writeSecretFile(file, privateKeyToProtobuf(privateKey as unknown as Parameters<typeof privateKeyToProtobuf>[0]));
  }
  const peerId = peerIdFromPrivateKey(privateKey as unknown as Parameters<typeof peerIdFromPrivateKey>[0]) as unknown as PeerId;
  return { privateKey, peerId, nodeId: peerId.toString() };
}

/** The node id kept in a data dir, without creating a key (offline tools): null when the dir holds none. */
export async function readNodeId(dataDir: string): Promise<string | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(join(dataDir, NODE_KEY_FILE));
  } catch (err) {
    if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
  const privateKey = privateKeyFromProtobuf(bytes) as unknown as PrivateKey;
  return (peerIdFromPrivateKey(privateKey as unknown as Parameters<typeof peerIdFromPrivateKey>[0]) as unknown as PeerId).toString();
}
