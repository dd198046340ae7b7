// Releases and slashings of bonds a node has not heard (consensus/bonds.ts UNHEARD_BONDS_MAX): each is kept so a late
// bond stays released, and a member can sign them for bond ids it invents, so past the bound a further one is ignored
// (507 BOND_REGISTRY_FULL), while records of bonds heard here are applied as before. A real store; the node's key is
// generated here.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { Store } from '../../src/store/db.js';
import {
  BondService,
  bondAttestationText,
  releaseAttestationText,
  slashedAttestationText,
  type BondRecord,
  type ReleaseRecord,
  type SlashApplied,
} from '../../src/consensus/bonds.js';
import type { Ledger } from '../../src/tally/ledger.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { TEST_POLICY } from './helpers.js';

let dir = '';
let store: Store | null = null;
afterAll(async () => {
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('records of bonds not heard here', () => {
  it('are kept up to the bound, then ignored; a late bond frees its place, and the count survives a reload', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-unheard-'));
    store = await Store.open(join(dir, 'db'), { sync: false });
    const priv = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    const node = peerIdFromPrivateKey(priv as never).toString();
    const registry = () =>
      new BondService({
        store: store!,
        ledger: null as unknown as Ledger,
        policy: TEST_POLICY,
        nodeId: () => 'another-node',
        nowSvcond: () => 100,
        sign: () => '',
        verify: verifyText,
        unheardMax: 2,
      });
    const bonds = registry();
    await bonds.load();
    const id = (n: number) => `bond_${n.toString(16).padStart(24, '0')}`;
    const release = (n: number) => {
      const r: ReleaseRecord = { bond_id: id(n), zid: 'zid_a', node, svcond: 90 + n };
      return bonds.applyRelease({ release: r, attestation: signText(priv, releaseAttestationText(r)) }, { sender: node });
    };
    const slashing = (n: number) => {
      const s: SlashApplied = { bond_id: id(n), challenge_id: 'ch_1', node, token_ids: ['env_1'], svcond: 95 };
      return bonds.applySlashed({ slashed: s, attestation: signText(priv, slashedAttestationText(s)) }, { sender: node });
    };
    const bond = (n: number, svcond: number) => {
      const b: BondRecord = { bond_id: id(n), zid: 'zid_a', node, token_ids: Array.from({ length: TEST_POLICY.bondEnvelopes }, (_, i) => `env_${i}`), svcond };
      return bonds.applyBond({ bond: b, attestation: signText(priv, bondAttestationText(b)) }, { sender: node });
    };
    const full = { status: 507, code: 'BOND_REGISTRY_FULL', action: 'ignore' };

    await release(1);
    await slashing(2);
    expect(bonds.get(id(1))).toMatchObject({ bond: null, release: { release: { bond_id: id(1) } } });
    expect(bonds.get(id(2))).toMatchObject({ bond: null, slash_applied: { slashed: { bond_id: id(2) } } });
    await expect(release(3)).rejects.toMatchObject(full);
    await expect(slashing(3)).rejects.toMatchObject(full);
    expect(bonds.get(id(3))).toBeNull();

    // A record of a bond heard here is applied at the bound.
    await bond(4, 80);
    expect(bonds.ofNode(node)?.bond.bond_id).toBe(id(4));
    await release(4);
    expect(bonds.ofNode(node)).toBeNull();

    // The late bond of the first release stays released and frees its place.
    await bond(1, 85);
    expect(bonds.get(id(1))).toMatchObject({ bond: { bond: { bond_id: id(1) } }, release: { release: { bond_id: id(1) } } });
    expect(bonds.ofNode(node)).toBeNull();
    await release(3);
    expect(bonds.get(id(3))).toMatchObject({ bond: null });

    // Counted again from the store at load.
    const again = registry();
    await again.load();
    const r: ReleaseRecord = { bond_id: id(5), zid: 'zid_a', node, svcond: 99 };
    await expect(again.applyRelease({ release: r, attestation: signText(priv, releaseAttestationText(r)) }, { sender: node })).rejects.toMatchObject(full);
  });
});
