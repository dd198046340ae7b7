// What the in-process consensus tests share: a small contribution policy and fresh node keys.
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import type { ContributionPolicy } from '../../src/consensus/policy.js';
import { drawSeedOf, type DrawEvent } from '../../src/consensus/challenge-wire.js';
import { committeeOf } from '../../src/consensus/committee.js';
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

/** A tick event of `k` signed at `svcond`: a challenge's draw event (challenge-wire.ts drawSeedOf). */
export function drawEvent(k: Key, svcond: number): DrawEvent {
  const e = { type: 'tick' as const, sender: k.id, svcond, body: { svcond, every: 4 } };
  return { ...e, signature: signText(k.priv, signingText(e)) };
}

/** The committee of `size` a draw event gives a result's challenge over `eligible`. */
export function drawnCommittee(resultId: string, draw: DrawEvent, eligible: readonly string[], size: number): string[] {
  return committeeOf(drawSeedOf({ result_id: resultId, draw }), eligible, size);
}
