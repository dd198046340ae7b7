// Verifiers agree and recompute (compute/verify-result.ts): POST /api/svc/verify and `svc-node verify` give the same
// answer on the same documents. A result forged with the mesh's receipt secret — value changed, digest, tick receipt
// and svcProof all recomputed — is invalid without its sealer's signature, with another key's, or signed by a node
// nobody knows; outputs changed and re-signed (even by the sealer itself) are invalid with reason result_digest.
// The forger is composed here, from the node's own data dir (its receipt secret and node key).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalDigest } from '../../src/kernel/canonical.js';
import { deriveKey, sealWhole, signBody, tickReceipt, type SealSigner } from '../../src/kernel/receipt.js';
import { readReceiptSecretFile } from '../../src/config/receipt-secret.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { bytesSigner } from '../../src/mesh/wire.js';
import { solverResultDigest } from '../../src/compute/result-digest.js';
import { VERIFY_REASONS } from '../../src/compute/verify-result.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { runCliAsync, tempDirs } from '../helpers/cli.js';

const KE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

let t: TestNode;
let key: string;
let receiptKey: Buffer;
let nodeSigner: SealSigner;
let stranger: { id: string; sign: SealSigner };
let compute: Record<string, any>;
let solver: Record<string, any>;
const tempDir = tempDirs('svc-verify-');

beforeAll(async () => {
  t = await startTestNode();
  key = (await zkIdentity(t.url, 'verify-result')).key;
  receiptKey = deriveKey((await readReceiptSecretFile(t.dataDir))!, 'RECEIPT');
  nodeSigner = bytesSigner((await loadOrCreateNodeKey(t.dataDir)).privateKey);
  const strangerKey = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  stranger = { id: peerIdFromPrivateKey(strangerKey as never).toString(), sign: bytesSigner(strangerKey) };
  compute = (await call(t.url, 'POST', '/api/svc/compute', KE, bearer(key))).body;
  solver = (await call(t.url, 'POST', '/api/svc/zeta', { n: 5 }, bearer(key))).body;
  expect(compute.seal_signature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
});
afterAll(() => t?.destroy());

/** The body without its seal and proofs, its tick receipt recomputed with the receipt secret for its value and digest. */
function unsealed(b: Record<string, any>): Record<string, any> {
  const { svcProof: _p, seal_signature: _s, ...rest } = structuredClone(b);
  const { svcProof: _c, ...cko } = rest.cko;
  const { hmac: _h, ...r } = rest.svcond_receipt;
  rest.svcond_receipt = tickReceipt(receiptKey, { ...r, value: rest.value, unit: rest.unit, result_digest: rest.result_digest });
  return { ...rest, cko };
}

/** What a mesh member holding the receipt secret can make: the body re-proved, signed by `sign` or not signed at all. */
function forge(b: Record<string, any>, sign: SealSigner | null): Record<string, any> {
  const body = unsealed(b);
  if (sign) return sealWhole(receiptKey, sign, body);
  const proof = signBody(receiptKey, body);
  return { ...body, cko: { ...body.cko, svcProof: proof }, svcProof: proof };
}

/** The value changed, its digest recomputed (§5) so the body is self-consistent. */
function wrongValue(b: Record<string, any>): Record<string, any> {
  const c = structuredClone(b);
  c.value = c.value * (1 + 1e-6);
  c.result_digest = canonicalDigest({ operators: c.operators, domain: c.domain, inputs: c.inputs, value: c.value, unit: c.unit, fields: null });
  return c;
}

/** A solver result's outputs changed, its result_digest left as it was. */
function tamperedOutputs(b: Record<string, any>): Record<string, any> {
  const c = structuredClone(b);
  const name = Object.keys(c.outputs).find((k) => typeof c.outputs[k] === 'number' || Array.isArray(c.outputs[k]))!;
  c.outputs[name] = Array.isArray(c.outputs[name]) ? [...c.outputs[name], 0] : c.outputs[name] + 1;
  expect(solverResultDigest(c.solver, c.inputs, { value: c.value, unit: c.unit }, c.outputs)).not.toBe(c.result_digest);
  return c;
}

async function viaApi(doc: unknown) {
  const r = await call(t.url, 'POST', '/api/svc/verify', doc, bearer(key));
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function viaCli(doc: unknown, extra: string[] = []) {
  const file = join(await tempDir(), 'result.json');
  await writeFile(file, JSON.stringify(doc));
  const r = await runCliAsync(['verify', file, '--data-dir', t.dataDir, ...extra]);
  const answer = JSON.parse(r.stdout);
  expect(r.status, r.stderr).toBe(answer.valid ? 0 : 1);
  return answer;
}

describe('POST /api/svc/verify and svc-node verify', () => {
  it('a genuine result: valid, every check true, sealed by the node', async () => {
    for (const doc of [compute, solver]) {
      const api = await viaApi(doc);
      expect(api).toMatchObject({
        valid: true,
        proof_valid: true,
        receipt_valid: true,
        seal_signature_valid: true,
        result_digest_valid: true,
        sealed_by: t.node.nodeId,
        sealer_known: true,
        reason: null,
        reasons: [],
      });
    }
  });

  it('forged with the receipt secret: unsigned, signed by another key, or by a node nobody knows — invalid, each with its reason; the CLI says the same', async () => {
    const unsigned = forge(wrongValue(compute), null);
    const otherKey = forge(wrongValue(compute), stranger.sign);
    const unknownNode = forge({ ...wrongValue(compute), node: stranger.id }, stranger.sign);
    const outputs = forge(tamperedOutputs(solver), null);
    const outputsSigned = forge(tamperedOutputs(solver), nodeSigner);
    const cases: [string, Record<string, any>, string[]][] = [
      ['no seal_signature', unsigned, ['seal_signature']],
      ["another key's signature", otherKey, ['seal_signature']],
      ['signed by an unknown node', unknownNode, ['sealer_unknown']],
      ['outputs changed, re-proved with the receipt key', outputs, ['seal_signature', 'result_digest']],
      ['outputs changed, re-signed by the sealer itself', outputsSigned, ['result_digest']],
      ['the genuine compute', compute, []],
    ];
    for (const [name, doc, reasons] of cases) {
      const api = await viaApi(doc);
      // Each forgery keeps a proof and tick receipt that hold: only the named checks fail.
      expect(api.proof_valid, name).toBe(true);
      expect(api.receipt_valid, name).toBe(true);
      expect(
        api.reasons.map((r: { code: string }) => r.code),
        name,
      ).toEqual(reasons);
      expect(api.reason, name).toBe(reasons[0] ?? null);
      expect(api.valid, name).toBe(reasons.length === 0);
      for (const r of api.reasons) expect(r.message).toBe(VERIFY_REASONS[r.code as keyof typeof VERIFY_REASONS]);
      const cli = await viaCli(doc);
      const { value: _v, unit: _u, ...checks } = cli;
      // The API adds what a verdict says of the result (a node's registry); the offline CLI checks the document alone.
      const { verdict: _verdict, challenge_id: _challenge, ...apiChecks } = api;
      expect(api).toMatchObject({ verdict: null, challenge_id: null });
      expect(checks, name).toEqual(apiChecks);
    }
    // Offline, a node given with --node is a known sealer: the stranger's own (self-consistent) seal then verifies.
    const own = forge({ ...compute, node: stranger.id }, stranger.sign);
    expect((await viaCli(own)).reasons.map((r: { code: string }) => r.code)).toEqual(['sealer_unknown']);
    expect(await viaCli(own, ['--node', stranger.id])).toMatchObject({ valid: true, sealed_by: stranger.id });
  }, 120_000);

  it('not a result object: not_a_result', async () => {
    expect(await viaApi([1, 2])).toMatchObject({ valid: false, reason: 'not_a_result' });
  });
});
