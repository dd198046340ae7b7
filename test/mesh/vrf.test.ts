// ECVRF-EDWARDS25519-SHA512-TAI against RFC 9381's own vectors (Appendix B.3): the proof byte for byte pins
// encode_to_curve, the nonce, the challenge and the scalar arithmetic; beta pins proof_to_hash.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ed25519 } from '@noble/curves/ed25519';
import { vrfProver, vrfVerify } from '../../src/mesh/vrf.js';

const RFC9381 = [
  {
    sk: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    pk: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    alpha: '',
    pi: '8657106690b5526245a92b003bb079ccd1a92130477671f6fc01ad16f26f723f26f8a57ccaed74ee1b190bed1f479d9727d2d0f9b005a6e456a35d4fb0daab1268a1b0db10836d9826a528ca76567805',
    beta: '90cf1df3b703cce59e2a35b925d411164068269d7b2d29f3301c03dd757876ff66b71dda49d2de59d03450451af026798e8f81cd2e333de5cdf4f3e140fdd8ae',
  },
  {
    sk: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    pk: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    alpha: '72',
    pi: 'f3141cd382dc42909d19ec5110469e4feae18300e94f304590abdced48aed5933bf0864a62558b3ed7f2fea45c92a465301b3bbf5e3e54ddf2d935be3b67926da3ef39226bbc355bdc9850112c8f4b02',
    beta: 'eb4440665d3891d668e7e0fcaf587f1b4bd7fbfe99d0eb2211ccec90496310eb5e33821bc613efb94db5e5b54c70a848a0bef4553a41befc57663b56373a5031',
  },
  {
    sk: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    pk: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    alpha: 'af82',
    pi: '9bc0f79119cc5604bf02d23b4caede71393cedfbb191434dd016d30177ccbf8096bb474e53895c362d8628ee9f9ea3c0e52c7a5c691b6c18c9979866568add7a2d41b00b05081ed0f58ee5e31b3a970e',
    beta: '645427e5d00c62a23fb703732fa5d892940935942101e456ecca7bb217c61c452118fec1219202a0edcf038bb6373241578be7217ba85a2687f7a0310b2df19f',
  },
];
const hex = (s: string) => Buffer.from(s, 'hex');

describe('ECVRF-EDWARDS25519-SHA512-TAI', () => {
  it.each(RFC9381)("reproduces RFC 9381's proof and output for alpha '$alpha'", (v) => {
    const prover = vrfProver(hex(v.sk));
    expect(Buffer.from(prover.publicKey).toString('hex')).toBe(v.pk);
    expect(prover.prove(hex(v.alpha))).toEqual({ proof: v.pi, output: v.beta });
    expect(vrfVerify(hex(v.pk), hex(v.alpha), v.pi)).toBe(v.beta);
  });

  it('refuses a proof of another input, under another key, with any byte of Gamma, c or s changed, or of the wrong length', () => {
    const [a, b] = RFC9381;
    expect(vrfVerify(hex(a!.pk), hex('00'), a!.pi)).toBeNull();
    expect(vrfVerify(hex(b!.pk), hex(a!.alpha), a!.pi)).toBeNull();
    for (const at of [0, 31, 32, 47, 48, 79]) {
      const bytes = hex(a!.pi);
      bytes[at]! ^= 0x01;
      expect(vrfVerify(hex(a!.pk), hex(a!.alpha), bytes.toString('hex')), `byte ${at}`).toBeNull();
    }
    expect(vrfVerify(hex(a!.pk), hex(a!.alpha), a!.pi.slice(0, 158))).toBeNull();
    expect(vrfVerify(hex(a!.pk), hex(a!.alpha), a!.pi.toUpperCase())).toBeNull();
    // s ≥ the group order: the same s + L would verify arithmetically, so it is refused as a second encoding.
    const L = ed25519.Point.CURVE().n;
    const pi = hex(a!.pi);
    let s = 0n;
    for (let i = 79; i >= 48; i--) s = (s << 8n) | BigInt(pi[i]!);
    let wide = s + L;
    for (let i = 48; i < 80; i++) {
      pi[i] = Number(wide & 0xffn);
      wide >>= 8n;
    }
    expect(vrfVerify(hex(a!.pk), hex(a!.alpha), pi.toString('hex'))).toBeNull();
  });

  it("refuses a small-order public key, under which a proof of an output of its maker's choosing verifies", () => {
    // With Y the identity, Gamma the identity and s = 1: U = B and V = H whatever c is, so c is computed from them
    // (RFC 9381 §5.4.3) and the proof checks out arithmetically; only the key's validation refuses it.
    const Y = ed25519.Point.ZERO.toBytes();
    const alpha = Buffer.from('svc-draw|1');
    let H: InstanceType<typeof ed25519.Point> | null = null;
    for (let ctr = 0; H === null; ctr++) {
      const h = createHash('sha512')
        .update(Buffer.from([3, 1]))
        .update(Y)
        .update(alpha)
        .update(Buffer.from([ctr, 0]))
        .digest();
      try {
        H = ed25519.Point.fromBytes(h.subarray(0, 32), false).clearCofactor();
      } catch {
        H = null;
      }
    }
    const points = [Y, H.toBytes(), ed25519.Point.ZERO.toBytes(), ed25519.Point.BASE.toBytes(), H.toBytes()];
    const c = createHash('sha512')
      .update(Buffer.from([3, 2]))
      .update(Buffer.concat(points))
      .update(Buffer.from([0]))
      .digest()
      .subarray(0, 16);
    const s1 = Buffer.alloc(32);
    s1[0] = 1;
    const forged = Buffer.concat([ed25519.Point.ZERO.toBytes(), c, s1]).toString('hex');
    expect(vrfVerify(Y, alpha, forged)).toBeNull();
  });

  it('gives one output per key and input: proving again gives the same proof, other inputs give other outputs', () => {
    const prover = vrfProver(hex(RFC9381[1]!.sk));
    const first = prover.prove(Buffer.from('svc-draw|7'));
    expect(prover.prove(Buffer.from('svc-draw|7'))).toEqual(first);
    const outputs = new Set(Array.from({ length: 8 }, (_, i) => prover.prove(Buffer.from(`svc-draw|${i}`)).output));
    expect(outputs.size).toBe(8);
  });
});
