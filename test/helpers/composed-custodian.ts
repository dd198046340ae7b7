// A custodian on a node the test composes in-process (its own store and key), every identity homed at `home()`, the
// members every node: for tests that drive the custody protocol's requests by hand (given-up-slot, gapped-chain).
import { join } from 'node:path';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { Custodian, type CustodianDeps } from '../../src/custody/custodian.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { Store } from '../../src/store/db.js';

export interface ComposedNode {
  id: string;
  key: PrivateKey;
  store: Store;
}

export function composedCustodian(
  n: ComposedNode,
  o: {
    home: () => string;
    members: () => string[];
    secret: string;
    now: number;
    changesAfter?: CustodianDeps['changesAfter'];
    ownHead?: CustodianDeps['ownHead'];
    takingOver?: CustodianDeps['takingOver'];
    /** Where it catches up from (absent: it does not). */
    fetch?: CustodianDeps['fetch'];
  },
): Custodian {
  const c: Custodian = new Custodian({
    store: n.store,
    nodeId: () => n.id,
    sign: (text) => signText(n.key, text),
    homeOf: () => Promise.resolve(o.home()),
    debitFault: () => Promise.resolve(null),
    homeChange: () => Promise.resolve(null),
    fetch: o.fetch ?? null,
    verify: verifyText,
    custodiansOf: () => Promise.resolve(o.members()),
    chainAt: (z, from) => c.page(z, from),
    meshSecret: o.secret,
    nowSvcond: () => o.now,
    ...(o.changesAfter === undefined ? {} : { changesAfter: o.changesAfter }),
    ...(o.ownHead === undefined ? {} : { ownHead: o.ownHead }),
    ...(o.takingOver === undefined ? {} : { takingOver: o.takingOver }),
  });
  return c;
}

/** `count` nodes, each with a fresh Ed25519 key (its peer id) and its own store under `dir`. */
export function composedNodes(dir: string, count: number): Promise<ComposedNode[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
      return { id: peerIdFromPrivateKey(key as never).toString(), key, store: await Store.open(join(dir, `n${i}`), { sync: false }) };
    }),
  );
}
