// The draw proof of a tick event (docs/protocol.md §7): the sender's VRF proof (vrf.ts) over its own tick, carried by
// every tick event that advertises a bond. A challenge's committee is ranked by the draw event's VRF output (its
// `beta`), which the sender's key and the tick alone fix: the signer of a draw event can no longer try bodies until
// the committee suits it, as it could when the seed was its signature's hash.
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import { BoundedMap } from '../util/bounded-map.js';
import { SlidingWindow } from '../util/sliding-window.js';
import { vrfProver, vrfVerify } from './vrf.js';

/** What a node proves over for its tick event at `svcond`: the UTF-8 of `svc-draw|<svcond>`. */
export function drawAlpha(svcond: number): Buffer {
  return Buffer.from(`svc-draw|${svcond}`, 'utf8');
}

/** A node's draw proofs (hex), one per tick; a proof takes ~6 ms of CPU, once per tick event advertising a bond. */
export function drawProver(privateKey: PrivateKey): (svcond: number) => string {
  if (privateKey.type !== 'Ed25519') throw new Error('the node key must be Ed25519');
  // libp2p's raw Ed25519 private key is the seed (32 bytes) followed by the public key.
  const prover = vrfProver(Uint8Array.from(privateKey.raw.subarray(0, 32)));
  return (svcond) => prover.prove(drawAlpha(svcond)).proof;
}

// A draw is checked wherever its challenge is (intake, every entrance, each verdict document that carries it), and the
// intake looks over the latest tick events every 50 ms while it waits; a verification is ~5 ms, so the outputs of the
// proofs that verified are kept, and the proofs that did not (bounded each, so refusals cannot push outputs out).
const verified = new BoundedMap<string, string>(1024);
const refused = new BoundedMap<string, true>(1024);
const proofId = (sender: string, svcond: number, proof: string) => `${sender}|${svcond}|${proof}`;
const UNBONDED = 'unbonded';

/**
 * The VRF output (hex) of a draw proof by node `sender` over its tick `svcond`; null when the proof does not verify
 * under the key in the sender's peer id, or the sender is not an Ed25519 peer id.
 */
export function drawOutput(sender: string, svcond: number, proof: string): string | null {
  const id = proofId(sender, svcond, proof);
  const hit = verified.get(id);
  if (hit !== undefined) return hit;
  if (refused.has(id)) return null;
  let publicKey: Uint8Array;
  try {
    const pid = peerIdFromString(sender);
    if (pid.type !== 'Ed25519' || pid.publicKey === undefined) return null;
    publicKey = pid.publicKey.raw;
  } catch {
    return null;
  }
  const output = vrfVerify(publicKey, drawAlpha(svcond), proof);
  if (output !== null) verified.set(id, output);
  else refused.set(id, true);
  return output;
}

/**
 * The tick entrance's check of draw proofs. A verification costs ~4.6 ms of CPU (scripts/bench/micro/draw-proof.ts),
 * some 40 times an event's signature, and peer ids cost nothing: a node bonded here (whose bond is what its seat
 * costs) has every proof checked; the rest share `perSecond` checks (twice the tick events a second the mesh's
 * intervals aim at, which an honest mesh stays under), and past it their proofs go unchecked: their tick events are
 * taken without the contribution they advertise, as an older node's without a proof are. A tick event no newer than
 * the sender's latest changes neither its liveness nor a draw, so its proof is checked only if already known: a
 * sender re-signing old ticks with new bodies costs a lookup, not a verification.
 */
export class DrawProofCheck {
  /** Checks of proofs by nodes not bonded here, over the last second (one name: they share the budget). */
  private readonly unbonded: SlidingWindow;

  constructor(
    private readonly o: {
      perSecond: number;
      nowMs: () => number;
      bonded: (node: string) => boolean;
    },
  ) {
    this.unbonded = new SlidingWindow(o.perSecond, 1000, o.nowMs, 1);
  }

  /**
   * 'valid' or 'invalid' when the proof was checked; 'unchecked' past the budget for nodes not bonded here, or for a
   * tick event no newer than the sender's latest (`newer` false) whose proof was not checked before.
   */
  check(sender: string, svcond: number, proof: string, newer = true): 'valid' | 'invalid' | 'unchecked' {
    if (verified.has(proofId(sender, svcond, proof))) return 'valid';
    if (!newer) return 'unchecked';
    if (!this.o.bonded(sender)) {
      if (this.unbonded.heldUntil(UNBONDED) !== null) return 'unchecked';
      this.unbonded.add(UNBONDED);
    }
    return drawOutput(sender, svcond, proof) === null ? 'invalid' : 'valid';
  }
}
