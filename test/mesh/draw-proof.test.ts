// The draw proof of a tick event: one output per sender and tick, checked under the sender's peer id, and the
// entrance's budget of checks for nodes not bonded here.
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { DrawProofCheck, drawOutput, drawProver } from '../../src/mesh/draw-proof.js';

async function node(): Promise<{ key: PrivateKey; id: string }> {
  const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  return { key, id: peerIdFromPrivateKey(key as never).toString() };
}

describe('draw proofs', () => {
  it("verify only under the sender's own peer id and over the tick they were made for", async () => {
    const [a, b] = [await node(), await node()];
    const proof = drawProver(a.key)(500);
    const output = drawOutput(a.id, 500, proof);
    expect(output).toMatch(/^[0-9a-f]{128}$/);
    expect(drawOutput(a.id, 501, proof)).toBeNull();
    expect(drawOutput(b.id, 500, proof)).toBeNull();
    expect(drawOutput('not-a-peer-id', 500, proof)).toBeNull();
    // The same tick gives the same output however often it is proved (a cached answer is the same as a fresh one).
    expect(drawOutput(a.id, 500, drawProver(a.key)(500))).toBe(output);
    expect(drawOutput(b.id, 500, drawProver(b.key)(500))).not.toBe(output);
  });

  it('the entrance checks every proof of a node bonded here, and the rest within a budget a second', async () => {
    const [bonded, fresh] = [await node(), await node()];
    let nowMs = 10_000;
    const check = new DrawProofCheck({ perSecond: 2, nowMs: () => nowMs, bonded: (n) => n === bonded.id });
    const bad = (svcond: number) => drawProver(fresh.key)(svcond + 1);
    // A node not bonded here: two checks a second, then unchecked until the second is over.
    expect([1, 2, 3, 4].map((t) => check.check(fresh.id, t, bad(t)))).toEqual(['invalid', 'invalid', 'unchecked', 'unchecked']);
    // A bonded node is checked whatever the budget: its proofs, good or bad.
    expect(check.check(bonded.id, 7, drawProver(bonded.key)(7))).toBe('valid');
    expect(check.check(bonded.id, 8, drawProver(bonded.key)(9))).toBe('invalid');
    nowMs += 1_000;
    expect(check.check(fresh.id, 5, drawProver(fresh.key)(5))).toBe('valid');
  });

  it("a tick event no newer than the sender's latest is checked only against the proofs already checked", async () => {
    const bonded = await node();
    const check = new DrawProofCheck({ perSecond: 100, nowMs: () => 0, bonded: () => true });
    const good = drawProver(bonded.key)(20);
    // An old tick re-signed with a proof never checked: no verification, whatever the proof.
    expect(check.check(bonded.id, 19, drawProver(bonded.key)(18), false)).toBe('unchecked');
    expect(check.check(bonded.id, 19, drawProver(bonded.key)(19), false)).toBe('unchecked');
    // The same tick again with the proof checked when it was the latest: known, no verification needed.
    expect(check.check(bonded.id, 20, good)).toBe('valid');
    expect(check.check(bonded.id, 20, good, false)).toBe('valid');
  });
});
