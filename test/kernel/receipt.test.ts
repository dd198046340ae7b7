// prepareSeal + finishSeal (the sealing path) against signBody/verifyBody and sealWhole: same proof and seal
// signature, the JSON bytes are the canonical JSON of the signed body, and any tampered field fails verification.
import { createPublicKey, generateKeyPairSync, sign as edSign, verify as edVerify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/kernel/canonical.js';
import {
  deriveKey,
  finishSeal,
  prepareSeal,
  sealSigningText,
  sealWhole,
  signBody,
  verifyBody,
  type SealSigner,
  type TickReceiptFacts,
} from '../../src/kernel/receipt.js';

const key = deriveKey(Buffer.from('test secret'), 'RECEIPT');
const nodeKey = generateKeyPairSync('ed25519').privateKey;
const sign: SealSigner = (data) => edSign(null, Buffer.from(data), nodeKey).toString('base64');
/** seal_signature checked with node:crypto over the text the document names (independent of finishSeal). */
const signatureHolds = (b: Record<string, unknown>) =>
  edVerify(null, Buffer.from(sealSigningText(b), 'utf8'), createPublicKey(nodeKey), Buffer.from(String(b.seal_signature), 'base64'));

function body(): Record<string, unknown> {
  return {
    result_id: 'res_1_ab',
    kind: 'compute',
    value: 9,
    unit: 'J',
    equations: ['E = 1/2 m v^2 = 9 J', 'KO42 · ∘ → π'],
    R_t: 0.9997184238014513,
    cko: { operatorChain: ['KO42', 'MECH_KINETIC_ENERGY'], R_t: 0.9997184238014513, metric_shift: { applied: false, variance: 3.168821468741362e-7 } },
    tally_charge: { cost: 1, balance_after: { free: 127, paid: 0 } },
    envelope: null,
    zeta: -0,
  };
}

/** Seal a body in one step (no ledger members added later). */
function seal(b: Record<string, unknown>): { proof: string; json: string } {
  const { proof, bytes } = finishSeal(key, sign, prepareSeal(b, []), {});
  return { proof, json: bytes.toString('utf8') };
}

describe('sealing a whole body', () => {
  it('gives the proof signBody gives over the body with its seal signature, and canonical text of the signed body', () => {
    const signature = sign(canonicalJson(body()));
    const expected = signBody(key, { ...body(), seal_signature: signature });
    const { proof, json } = seal(body());
    expect(proof).toBe(expected);
    const sealed = { ...body(), cko: { ...(body().cko as object), svcProof: proof }, seal_signature: signature, svcProof: proof };
    expect(JSON.parse(json).svcProof).toBe(expected);
    expect(JSON.parse(json).cko.svcProof).toBe(expected);
    expect(JSON.parse(json).seal_signature).toBe(signature);
    expect(json).toBe(canonicalJson(sealed));
    expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(sealed)));
    expect(verifyBody(key, JSON.parse(json))).toBe(true);
    expect(signatureHolds(JSON.parse(json))).toBe(true);
    // sealWhole (the bodies sealed at once) gives the same body.
    expect(canonicalJson(sealWhole(key, sign, body()))).toBe(json);
  });

  it('the proof covers the seal signature: another signature (or none) breaks svcProof, and a tampered body breaks both', () => {
    const { json } = seal(body());
    const other = generateKeyPairSync('ed25519').privateKey;
    const b = JSON.parse(json);
    const resigned = { ...b, seal_signature: edSign(null, Buffer.from(sealSigningText(b), 'utf8'), other).toString('base64') };
    expect(verifyBody(key, resigned)).toBe(false);
    const { seal_signature: _s, ...stripped } = b;
    expect(verifyBody(key, stripped)).toBe(false);
    expect(signatureHolds({ ...b, value: 10 })).toBe(false);
  });

  it('any tampered field fails verification', () => {
    const { json } = seal(body());
    for (const mutate of [
      (b: any) => (b.value = 10),
      (b: any) => (b.tally_charge.balance_after.free = 1000),
      (b: any) => (b.cko.metric_shift.applied = true),
      (b: any) => (b.equations[1] = 'x'),
      (b: any) => (b.extra = 1),
      (b: any) => delete b.envelope,
    ]) {
      const b = JSON.parse(json);
      mutate(b);
      expect(verifyBody(key, b)).toBe(false);
    }
  });

  it('refuses a body that already carries a proof or has no CKO object', () => {
    expect(() => seal({ ...body(), svcProof: 'x' })).toThrow();
    expect(() => seal({ value: 1 })).toThrow();
  });
});

describe('hmacHex', () => {
  it('equals createHmac for keys shorter than, equal to and longer than the block', async () => {
    const { createHmac, randomBytes } = await import('node:crypto');
    const { hmacHex } = await import('../../src/kernel/receipt.js');
    // RFC 4231 test case 2: key "Jefe", "what do ya want for nothing?".
    expect(hmacHex(Buffer.from('Jefe'), 'what do ya want for nothing?')).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    // RFC 4231 test case 6: 131-byte key (hashed first), "Test Using Larger Than Block-Size Key - Hash Key First".
    expect(hmacHex(Buffer.alloc(131, 0xaa), 'Test Using Larger Than Block-Size Key - Hash Key First')).toBe(
      '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
    );
    for (const size of [0, 1, 32, 63, 64, 65, 200]) {
      const key = randomBytes(size);
      for (const message of ['', 'a', 'é∘→ "x"', 'x'.repeat(5000)]) {
        const expected = createHmac('sha256', key).update(message).digest('hex');
        expect(hmacHex(key, message)).toBe(expected);
        expect(hmacHex(key, Buffer.from(message, 'utf8'))).toBe(expected);
      }
    }
  });
});

describe('prepareSeal + finishSeal (ledger members added after serialisation)', () => {
  it('give the bytes and proof of sealing the whole body at once', () => {
    const whole = body();
    const { tally_charge, envelope, ...rest } = body();
    const later = { tally_charge, envelope, audit: { slug: 'm-1', seq: 7, hash: 'ab'.repeat(32) } };
    whole.audit = later.audit;
    const prepared = prepareSeal(rest, ['audit', 'envelope', 'tally_charge']);
    const { proof, sealSignature, bytes } = finishSeal(key, sign, prepared, later);
    expect(sealSignature).toBe(sign(canonicalJson(whole)));
    expect(proof).toBe(signBody(key, { ...whole, seal_signature: sealSignature }));
    const signed = { ...whole, cko: { ...(whole.cko as object), svcProof: proof }, seal_signature: sealSignature, svcProof: proof };
    expect(bytes.toString('utf8')).toBe(canonicalJson(signed));
    expect(verifyBody(key, JSON.parse(bytes.toString('utf8')))).toBe(true);
    expect(signatureHolds(JSON.parse(bytes.toString('utf8')))).toBe(true);
  });

  it('signs the text without its proofs when two proofs share one place', async () => {
    const { hmacHex } = await import('../../src/kernel/receipt.js');
    // Hand-made slots: two svcProof members and an audit member at the start of the key "b".
    const slot = (name: string) => ({ name, commaBefore: false, commaAfter: true, offset: 7 });
    const prepared = { bytes: Buffer.from('{"a":1,"b":2}'), slots: [slot('audit'), slot('svcProof'), slot('svcProof')] };
    const { proof, bytes } = finishSeal(key, sign, prepared, { audit: 5 });
    expect(proof).toBe(hmacHex(key, '{"a":1,"audit":5,"b":2}'));
    expect(bytes.toString('utf8')).toBe(`{"a":1,"audit":5,"svcProof":"${proof}","svcProof":"${proof}","b":2}`);
  });

  it('refuses a body that already has a ledger member or has no CKO', () => {
    expect(() => prepareSeal(body(), ['tally_charge'])).toThrow();
    expect(() => prepareSeal({ value: 1 }, [])).toThrow();
  });
});

describe('tickReceipt', () => {
  it('is the receipt of spec 2.2, whose hmac is what verification recomputes', async () => {
    const { canonicalJson } = await import('../../src/kernel/canonical.js');
    const { hmacHex, tickReceipt } = await import('../../src/kernel/receipt.js');
    const key = Buffer.from('tick receipt key');
    const cases: TickReceiptFacts[] = [
      { svcond: 2310558463, phase: 0.6909045986706909, R_t: 0.9990681462116127, value: 9, unit: 'J', result_digest: 'ab'.repeat(32), fields: {} },
      {
        svcond: 1,
        phase: 0,
        R_t: 1,
        value: -2.5e-300,
        unit: 'kg*m/s',
        result_digest: 'cd'.repeat(32),
        fields: { momentum: { value: -2.5e-300, unit: 'kg*m/s' } },
      },
      {
        svcond: 99,
        phase: 0.999999,
        R_t: 1.000999,
        value: 1e21,
        unit: 'Ω·m',
        result_digest: '00'.repeat(32),
        fields: { z: { value: 1, unit: 'K' }, a: { value: 2, unit: 'Pa' } },
      },
    ];
    for (const c of cases) {
      const receipt = JSON.parse(canonicalJson(tickReceipt(key, c)));
      const { hmac, ...base } = receipt;
      expect(base).toEqual({
        pulse_hz: 1.287,
        tick_period_s: 0.777000777,
        zeqond_ns: 777000777,
        svcond: c.svcond,
        phase: c.phase,
        R_t: c.R_t,
        fields: c.fields,
      });
      expect(hmac).toBe(hmacHex(key, canonicalJson({ ...base, value: c.value, unit: c.unit, result_digest: c.result_digest })));
    }
  });
});
