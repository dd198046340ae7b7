// Nodes with real Ed25519 keys and peer ids, and the promises they sign (custody/promise.ts), for the tests of promise
// and change checks.
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { promiseSigningText, type PromiseBody, type SignedPromise } from '../../src/custody/promise.js';
import { signText } from '../../src/mesh/wire.js';

export type Signer = { id: string; key: Parameters<typeof signText>[0] };

/** `n` nodes, each a fresh key and its peer id. */
export async function keyedNodes(n: number): Promise<Signer[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
      return { id: peerIdFromPrivateKey(key as never).toString(), key };
    }),
  );
}

/** The promise `signer` signs: of `zid`, holding nothing, unless `body` says otherwise. */
export function signedPromise(zid: string, signer: Signer, body: Partial<PromiseBody> & Pick<PromiseBody, 'epoch' | 'candidate'>): SignedPromise {
  const promise: PromiseBody = { zid, head: null, ...body };
  return { promise, node: signer.id, signature: signText(signer.key, promiseSigningText(promise)) };
}
