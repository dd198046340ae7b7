// A custodian on a node the test composes in-process (its own store and key), every identity homed at `home()`, the
// members every node: for tests that drive the custody protocol's requests by hand (given-up-slot, gapped-chain).
import type { PrivateKey } from '@libp2p/interface';
import { Custodian } from '../../src/custody/custodian.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import type { Store } from '../../src/store/db.js';

export interface ComposedNode {
  id: string;
  key: PrivateKey;
  store: Store;
}

export function composedCustodian(n: ComposedNode, o: { home: () => string; members: () => string[]; secret: string; now: number }): Custodian {
  const c: Custodian = new Custodian({
    store: n.store,
    nodeId: () => n.id,
    sign: (text) => signText(n.key, text),
    homeOf: () => Promise.resolve(o.home()),
    debitFault: () => Promise.resolve(null),
    homeChange: () => Promise.resolve(null),
    fetch: null,
    verify: verifyText,
    custodiansOf: () => Promise.resolve(o.members()),
    chainAt: (z, from) => c.page(z, from),
    meshSecret: o.secret,
    nowSvcond: () => o.now,
  });
  return c;
}
