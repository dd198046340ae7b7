// The draw proof's cost (mesh/draw-proof.ts, an RFC 9381 VRF in JavaScript): what a node pays per tick event that
// advertises a bond (a proof when it sends one, a verification when it accepts one), beside node:crypto's Ed25519
// signature and verification of the same event (native). One JSON line, CPU µs per call (median of alternating
// blocks). Usage: npx tsx scripts/bench/micro/draw-proof.ts
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { vrfProver, vrfVerify } from '../../../src/mesh/vrf.js';
import { drawAlpha } from '../../../src/mesh/draw-proof.js';
import { signText, verifyText } from '../../../src/mesh/wire.js';
import { compare } from './lib.js';

const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
const sender = peerIdFromPrivateKey(key as never).toString();
const prover = vrfProver(Uint8Array.from(key.raw.subarray(0, 32)));
let tick = 1_000_000;
const proofs = new Map<number, string>();
const prove = () => {
  tick++;
  const p = prover.prove(drawAlpha(tick)).proof;
  proofs.set(tick, p);
  return p;
};
const text = JSON.stringify({ type: 'tick', sender, svcond: tick, body: { every: 4, mode: 'contributing', bondId: 'bond_x' } });
const signature = signText(key, text);
const proveVsSign = compare(prove, () => signText(key, text), { iterations: 20, rounds: 9 });
const ticks = [...proofs.keys()];
let i = 0;
const verify = () => {
  const t = ticks[i++ % ticks.length]!;
  return vrfVerify(prover.publicKey, drawAlpha(t), proofs.get(t)!);
};
const verifyVsEd = compare(verify, () => verifyText(sender, text, signature), { iterations: 20, rounds: 9 });
console.log(
  JSON.stringify({
    bench: 'draw-proof',
    proveUs: proveVsSign.optimisedUs,
    ed25519SignUs: proveVsSign.plainUs,
    verifyUs: verifyVsEd.optimisedUs,
    ed25519VerifyUs: verifyVsEd.plainUs,
    loadAverage: (await import('node:os')).loadavg()[0],
  }),
);
