// A bond gossiped with fewer envelopes than the policy's bondEnvelopes puts less at stake than every node assumes:
// the consensus.bond row rejects it (the attestation itself is genuine), and the registry never holds it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { Store } from '../../src/store/db.js';
import { BondService, bondAttestationText, type BondRecord } from '../../src/consensus/bonds.js';
import type { Ledger } from '../../src/tally/ledger.js';
import { GossipError } from '../../src/mesh/gossip-error.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { TEST_POLICY } from './helpers.js';

const policy = { ...TEST_POLICY, bondEnvelopes: 4 };
let dir = '';
let store: Store | null = null;
afterAll(async () => {
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('consensus.bond below the policy', () => {
  it('rejects a bond of fewer (distinct) envelopes than policy.bondEnvelopes, accepts one of exactly that many', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-bondsize-'));
    store = await Store.open(join(dir, 'db'), { sync: false });
    const priv = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const node = peerIdFromPrivateKey(priv as never).toString();
    const bonds = new BondService({
      store,
      ledger: null as unknown as Ledger,
      policy,
      nodeId: () => 'another-node',
      nowSvcond: () => 100,
      sign: () => '',
      verify: verifyText,
    });
    const attested = (bond: BondRecord) => ({ bond, attestation: signText(priv, bondAttestationText(bond)) });
    const small: BondRecord = { bond_id: 'bond_' + '1'.repeat(24), zid: 'zid_a', node, token_ids: ['env_1', 'env_2', 'env_3'], svcond: 90 };
    const padded: BondRecord = { ...small, bond_id: 'bond_' + '2'.repeat(24), token_ids: ['env_1', 'env_2', 'env_3', 'env_3'] };
    for (const b of [small, padded]) {
      const err = await bonds.applyBond(attested(b), { sender: node }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(GossipError);
      expect((err as GossipError).action).toBe('reject');
      expect((err as GossipError).message).toContain('4 distinct envelopes');
      expect(bonds.get(b.bond_id)).toBeNull();
    }
    const full: BondRecord = { ...small, bond_id: 'bond_' + '3'.repeat(24), token_ids: ['env_1', 'env_2', 'env_3', 'env_4'] };
    await bonds.applyBond(attested(full), { sender: node });
    expect(bonds.ofNode(node)?.bond.bond_id).toBe(full.bond_id);
  });
});
