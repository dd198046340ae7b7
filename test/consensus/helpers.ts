// What the in-process consensus tests share: a small contribution policy and fresh node keys.
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import type { ContributionPolicy } from '../../src/consensus/policy.js';
import { drawSeedOf, type DrawEvent } from '../../src/consensus/challenge-wire.js';
import { committeeOf } from '../../src/consensus/committee.js';
import { drawProver } from '../../src/mesh/draw-proof.js';
import { signingText, signText } from '../../src/mesh/wire.js';

/** A policy small enough to bond and decide in a test: 3 envelopes, a committee of 3, ten ticks to vote. */
export const TEST_POLICY = {
  bondEnvelopes: 3,
  committeeSize: 3,
  settleTicks: 4,
  deadlineTicks: 10,
  liveTicks: 32,
  challengeStake: 20,
  bondTermDays: 30,
  offload: 'never',
} as const satisfies ContributionPolicy;

/** A node key and its peer id. */
export interface Key {
  priv: PrivateKey;
  id: string;
}

export async function key(): Promise<Key> {
  const priv = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  return { priv, id: peerIdFromPrivateKey(priv as never).toString() };
}

const provers = new WeakMap<PrivateKey, (svcond: number) => string>();

/** `k`'s draw proof over its tick `svcond` (mesh/draw-proof.ts). */
export function drawProofOf(k: Key, svcond: number): string {
  let prove = provers.get(k.priv);
  if (!prove) provers.set(k.priv, (prove = drawProver(k.priv)));
  return prove(svcond);
}

/**
 * A tick event of `k` signed at `svcond` that advertises a bond and carries its draw proof: a challenge's draw event
 * (challenge-wire.ts drawSeedOf). `extra` adds to or replaces members of its body before it is signed.
 */
export function drawEvent(k: Key, svcond: number, extra: Record<string, unknown> = {}): DrawEvent {
  const body = { svcond, every: 4, mode: 'contributing', bondId: `bond_${k.id.slice(-8)}`, drawProof: drawProofOf(k, svcond), ...extra };
  const e = { type: 'tick' as const, sender: k.id, svcond, body };
  return { ...e, signature: signText(k.priv, signingText(e)) };
}

/** The committee of `size` a draw event gives a result's challenge over `eligible`. */
export function drawnCommittee(resultId: string, draw: DrawEvent, eligible: readonly string[], size: number): string[] {
  return committeeOf(drawSeedOf({ result_id: resultId, draw }), eligible, size);
}
