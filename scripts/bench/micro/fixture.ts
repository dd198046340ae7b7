// A sealed compute's inputs as the node sees them: the kinetic-energy chain the compute bench sends, at a stamp,
// and the ledger's members of an identity's seal.
import { stampAt } from '../../../src/kernel/clock.js';
import { modulationFactor } from '../../../src/kernel/modulation.js';
import { metricShift } from '../../../src/kernel/parity.js';
import { evaluateChain } from '../../../src/kernel/operators/chain.js';
import { deriveKey } from '../../../src/kernel/receipt.js';
import { privateKeyFromRaw } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import type { BodyJob } from '../../../src/compute/sealed-body.js';
import type { TallyCharge } from '../../../src/records/types.js';

export const receiptKey = deriveKey(Buffer.from('micro-bench secret'), 'RECEIPT');

/** The sealing node's Ed25519 key (RFC 8032's first test vector: any fixed key signs at the same speed). */
export const nodeKey = privateKeyFromRaw(
  Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex'),
) as unknown as PrivateKey;

/** The job of a sealed kinetic-energy compute (mass varies: a fresh request) at `ns`. */
export function computeJob(mass: number, ns = 1_790_000_000_123_456_789n): Extract<BodyJob, { kind: 'compute' }> {
  const stamp = stampAt(ns);
  const R_t = modulationFactor(stamp.phase, 0);
  const chain = evaluateChain(
    { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: mass, velocity_m_s: 3 } },
    { R_t, svcond: stamp.svcond, phase: stamp.phase, phi0: 0 },
  );
  return {
    kind: 'compute',
    parts: {
      stamp,
      R_t,
      resultId: `res_${stamp.svcond}_0123456789abcdef`,
      resultDigest: 'cd'.repeat(32),
      shift: metricShift(stamp.phase, 0.4, 0),
      phi0: 0,
      node: 'm-2d711642b726b044',
      kernelVersion: '1.287.6',
      executedBy: null,
    },
    chain,
    average: chain.value,
    relError: 0,
  };
}

export const charge: TallyCharge = {
  action: 'compute',
  cost: 1,
  charged: 1,
  burned: 1,
  foundation: 0,
  funded_by: 'free',
  balance_after: { free: 99_999_123, paid: 0 },
};
export const envelope = {
  token_id: 'env_0123456789abcdef01234567',
  owner: 'zid_0123456789abcdef',
  face_value: 1,
  folder: 'inbox',
  funding: 'free' as const,
  soulbound: true,
  svcond: 2310884911,
  result_id: 'res_2310884911_0123456789abcdef',
  hash: 'ab'.repeat(32),
  seq: 42,
};
export const audit = { slug: 'm-2d711642b726b044', seq: 42, hash: 'ef'.repeat(32) };
