// docs/protocol.md is true: every worked example is read out of the document and recomputed from the document's own
// numbers with node:crypto and the RFC 8785 package `canonicalize` (not the node's code), and a running node is then
// held to the same examples (it verifies the document's receipts, accepts its event, refuses its malformed ones).
import { createHash, createHmac, createPrivateKey, createPublicKey, sign as edSign, verify as edVerify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerIdFromString } from '@libp2p/peer-id';
import { ManualClock } from '../../src/kernel/clock.js';
import { deriveKey, signBody } from '../../src/kernel/receipt.js';
import { VERIFY_REASONS, verifySealedResult } from '../../src/compute/verify-result.js';
import { bodyDigest, decodeEnvelope, eventId, handshakeFor, signingText, topicForType, verifyText } from '../../src/mesh/wire.js';
import { keyFingerprint } from '../../src/config/receipt-secret.js';
import { RESULTS_SEALED, resultsSealedBody } from '../../src/compute/announce.js';
import { CheckpointSchema, checkpointText, verifyCheckpoint } from '../../src/chain/checkpoints.js';
import { Frontier, leafHash } from '../../src/chain/merkle.js';
import { EXEC_REFUSALS, encodeFrame, execRequestSchema } from '../../src/consensus/exec-protocol.js';
import { PEER_HTTP_PROTOCOL, peerHttpRequestSchema } from '../../src/mesh/peer-http.js';
import {
  PEER_EXCHANGE_PROTOCOL,
  checkExchange,
  exchangeAnswer,
  exchangeAnswerSchema,
  exchangeRequest,
  exchangeRequestSchema,
} from '../../src/mesh/peer-exchange.js';
import { executionText, verifyExecution } from '../../src/consensus/executed-by.js';
import { plainJson, solverRequestDigest, solverResultDigest } from '../../src/compute/result-digest.js';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { deliveryBatch, TRANSFER_ACK_EVENT, TRANSFER_EVENT } from '../../src/tally/transfer-wire.js';
import { CHARGE_OUTCOME_EVENT, CHARGE_SETTLE_EVENT, settleBatch } from '../../src/tally/remote-charges.js';
import { CHAIN_CALLER_EVENT, voucherBody } from '../../src/http/chain-delegation.js';
import { call, bearer, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'protocol.md'), 'utf8');

/** The JSON of the block fenced as ```json example=<name>. */
function example<T = any>(name: string): T {
  const m = new RegExp('```json example=' + name + '\\n([\\s\\S]*?)\\n```').exec(DOC);
  if (!m) throw new Error(`docs/protocol.md has no example=${name}`);
  return JSON.parse(m[1]!) as T;
}

// ---- independent implementations of the document's primitives
const jcs = (v: unknown): string => {
  const t = canonicalize(v);
  if (t === undefined) throw new Error('no JCS form');
  return t;
};
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: Buffer | string, text: string): string => createHmac('sha256', key).update(text, 'utf8').digest('hex');
const keyOf = (secretHex: string, label: string): Buffer => createHmac('sha256', Buffer.from(secretHex, 'hex')).update(`svc-key:${label}`, 'ascii').digest();

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58(bytes: Buffer): string {
  let n = BigInt('0x' + bytes.toString('hex'));
  let out = '';
  while (n > 0n) {
    out = B58[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = '1' + out;
  }
  return out;
}
function unbase58(text: string): Buffer {
  let n = 0n;
  for (const c of text) n = n * 58n + BigInt(B58.indexOf(c));
  let hex = n.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const lead = /^1*/.exec(text)![0].length;
  return Buffer.concat([Buffer.alloc(lead), Buffer.from(hex, 'hex')]);
}
const PEER_ID_PREFIX = Buffer.from([0x00, 0x24, 0x08, 0x01, 0x12, 0x20]);
const edPrivate = (seedHex: string) =>
  createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
const edPublicRaw = (seedHex: string): Buffer => (createPublicKey(edPrivate(seedHex)).export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32);
const edPublicFromPeerId = (peerId: string) => {
  const bytes = unbase58(peerId);
  expect(bytes.subarray(0, 6).equals(PEER_ID_PREFIX)).toBe(true);
  return createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), bytes.subarray(6)]), format: 'der', type: 'spki' });
};
const unsigned = (body: Record<string, any>) => {
  const { svcProof: _p, ...rest } = body;
  const { svcProof: _c, ...cko } = rest.cko;
  return { ...rest, cko };
};

const keys = example('receipt-keys');
const compute = example('sealed-compute');
const event = example('event');
const handshake = example('handshake');

/** A body schema's members as docs/protocol.md §13 writes them: `name`, or `name?` for an optional one. */
function membersOf(schema: unknown): string[] {
  const shape = (schema as { shape: Record<string, { safeParse(v: unknown): { success: boolean } }> }).shape;
  return Object.keys(shape).map((k) => (shape[k]!.safeParse(undefined).success ? `${k}?` : k));
}

describe('docs/protocol.md, recomputed from its own numbers', () => {
  it('§2 the three keys are HMAC(secret bytes, "svc-key:" + label)', () => {
    for (const label of ['RECEIPT', 'PROVE', 'SALT']) expect(keyOf(keys.secret_hex, label).toString('hex'), label).toBe(keys[`K_${label}`]);
    expect(new Set([keys.K_RECEIPT, keys.K_PROVE, keys.K_SALT]).size).toBe(3);
    expect(createHash('sha256').update(Buffer.from(keys.K_RECEIPT, 'hex')).digest('hex').slice(0, 16)).toBe(keys.receiptKeyFingerprint);
  });

  it('§1 the example stamp: tick, phase and R_t from unix_ns', () => {
    const ns = BigInt(compute.unix_ns);
    expect(compute.svcond).toBe(Number(ns / 777000777n));
    expect(compute.phase).toBe(Number(ns % 777000777n) / 777000777);
    expect(compute.R_t).toBe(1 + 0.001 * Math.sin(2 * Math.PI * compute.phase));
    expect(compute.cko).toMatchObject({ svcond: compute.svcond, phase: compute.phase, R_t: compute.R_t });
  });

  it('§3 svcProof = HMAC(K_RECEIPT, JCS(body without its two svcProof members)), and covers every other member', () => {
    const proof = example('sealed-compute-proof');
    const text = jcs(unsigned(compute));
    expect(Buffer.byteLength(text, 'utf8')).toBe(proof.signed_bytes);
    expect(sha256(text)).toBe(proof.signed_sha256);
    const expected = hmac(Buffer.from(keys.K_RECEIPT, 'hex'), text);
    expect(expected).toBe(proof.svcProof);
    expect(compute.svcProof).toBe(expected);
    expect(compute.cko.svcProof).toBe(expected);
    // The document says so: the signed text begins as it shows.
    expect(DOC).toContain(`is ${proof.signed_bytes} bytes of UTF-8`);
    expect(DOC).toContain(`begins \`${text.slice(0, 72)}…\``);
    for (const tamper of [
      (b: any) => (b.tally_charge.charged = 2),
      (b: any) => (b.envelope.folder = 'elsewhere'),
      (b: any) => (b.svcond_receipt.hmac = '0'.repeat(64)),
      (b: any) => (b.result_digest = '0'.repeat(64)),
      (b: any) => (b.node = 'someone else'),
    ]) {
      const b = structuredClone(compute);
      tamper(b);
      expect(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs(unsigned(b)))).not.toBe(expected);
    }
  });

  it("§3 seal_signature = Ed25519 by `node`'s key over JCS(body without svcProof, cko.svcProof and seal_signature); svcProof covers it", () => {
    const sig = example('sealed-compute-signature');
    const { seal_signature: given, ...rest } = unsigned(compute) as Record<string, any>;
    const text = jcs(rest);
    expect(Buffer.byteLength(text, 'utf8')).toBe(sig.signing_bytes);
    expect(sha256(text)).toBe(sig.signing_sha256);
    expect(compute.node).toBe(sig.node);
    expect(sig.node).toBe(event.peer_id);
    // Ed25519 is deterministic: the §7 seed signs to exactly the document's signature; the peer id's key verifies it.
    expect(edSign(null, Buffer.from(text, 'utf8'), edPrivate(event.seed_hex)).toString('base64')).toBe(sig.seal_signature);
    expect(given).toBe(sig.seal_signature);
    expect(edVerify(null, Buffer.from(text, 'utf8'), edPublicFromPeerId(compute.node), Buffer.from(given, 'base64'))).toBe(true);
    expect(edVerify(null, Buffer.from(jcs({ ...rest, value: 10 }), 'utf8'), edPublicFromPeerId(compute.node), Buffer.from(given, 'base64'))).toBe(false);
    // The proof's text holds the signature: another one (or none) changes the proof.
    const proofKey = Buffer.from(keys.K_RECEIPT, 'hex');
    expect(hmac(proofKey, jcs(rest))).not.toBe(compute.svcProof);
    expect(compute.executed_by).toBeNull();
  });

  it("§4 the tick receipt HMAC covers the receipt without hmac plus the body's value, unit and result_digest", () => {
    const r = example('tick-receipt');
    const { hmac: given, ...base } = compute.svcond_receipt;
    expect(r.hmac_input).toEqual({ ...base, value: compute.value, unit: compute.unit, result_digest: compute.result_digest });
    expect(Object.keys(compute.svcond_receipt).sort()).toEqual(['R_t', 'fields', 'hmac', 'phase', 'pulse_hz', 'svcond', 'tick_period_s', 'zeqond_ns']);
    expect(compute.svcond_receipt).toMatchObject({ pulse_hz: 1.287, tick_period_s: 0.777000777, zeqond_ns: 777000777 });
    expect(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs(r.hmac_input))).toBe(r.hmac);
    expect(given).toBe(r.hmac);
  });

  it('§5 result_digest of a chain = sha256(JCS({domain, fields: null, inputs, operators, unit, value}))', () => {
    const d = example('result-digest');
    expect(d.digest_input).toEqual({
      domain: compute.domain,
      fields: null,
      inputs: compute.inputs,
      operators: compute.operators,
      unit: compute.unit,
      value: compute.value,
    });
    expect(sha256(jcs(d.digest_input))).toBe(d.result_digest);
    expect(compute.result_digest).toBe(d.result_digest);
  });

  it('§6 a prove signature = HMAC(K_PROVE, JCS(receipt)), and not with K_RECEIPT', () => {
    const p = example('prove');
    expect(p.receipt.keyPrefix).toBe('PROVE');
    expect(p.algorithm).toBe('HMAC-SHA256');
    expect(hmac(Buffer.from(keys.K_PROVE, 'hex'), jcs(p.receipt))).toBe(p.signature);
    expect(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs(p.receipt))).not.toBe(p.signature);
  });

  it('§7 the peer id embeds the Ed25519 public key; the signature is Ed25519 over JCS({body, sender, svcond, type})', () => {
    expect(edPublicRaw(event.seed_hex).toString('hex')).toBe(event.public_key_hex);
    expect(base58(Buffer.concat([PEER_ID_PREFIX, Buffer.from(event.public_key_hex, 'hex')]))).toBe(event.peer_id);
    expect(event.peer_id.startsWith('12D3KooW')).toBe(true);
    const e = event.event;
    expect(e.sender).toBe(event.peer_id);
    expect(Object.keys(e).sort()).toEqual(['body', 'sender', 'signature', 'svcond', 'type']);
    expect(jcs({ body: e.body, sender: e.sender, svcond: e.svcond, type: e.type })).toBe(event.signing_text);
    // Ed25519 is deterministic: the seed signs to exactly the document's signature, which the peer id's key verifies.
    expect(edSign(null, Buffer.from(event.signing_text, 'utf8'), edPrivate(event.seed_hex)).toString('base64')).toBe(e.signature);
    expect(edVerify(null, Buffer.from(event.signing_text, 'utf8'), edPublicFromPeerId(e.sender), Buffer.from(e.signature, 'base64'))).toBe(true);
    expect(Object.keys(e.body).sort()).toEqual(['chainHeadsDigest', 'every', 'kernelVersion', 'sealedCount', 'svcond', 'url']);
  });

  it('§8 handshake = "v1=" + HMAC(UTF-8 of the mesh secret, sender|svcond|body digest); event id = sha256 of the same text', () => {
    const e = event.event;
    expect(handshake.sender).toBe(e.sender);
    expect(handshake.svcond).toBe(e.svcond);
    expect(sha256(jcs(e.body))).toBe(handshake.body_digest);
    expect(`${e.sender}|${e.svcond}|${handshake.body_digest}`).toBe(handshake.handshake_message);
    expect('v1=' + hmac(Buffer.from(handshake.mesh_secret, 'utf8'), handshake.handshake_message)).toBe(handshake.handshake);
    expect(sha256(handshake.handshake_message)).toBe(handshake.event_id);
  });

  it('§9 the libp2p message data is the UTF-8 JSON of {event, handshake}; the HTTP exchange carries the same', () => {
    const m = example('gossip-message');
    expect(m.topic).toBe('svc/ticks/1');
    expect(JSON.parse(m.data_utf8)).toEqual({ event: event.event, handshake: handshake.handshake });
    const a = example('gossip-accepted');
    expect(a.request.body).toEqual(event.event);
    expect(a.request.headers['x-node-handshake']).toBe(handshake.handshake);
    expect(a.response).toEqual({ accepted: true, duplicate: false, id: handshake.event_id });
    expect(example('gossip-duplicate').response).toEqual({ accepted: true, duplicate: true, id: handshake.event_id });
  });

  it('§11 the size example: {"p": 65528 × "x"} is exactly 65 536 bytes of JCS', () => {
    const s = example('size-limits');
    expect(Buffer.byteLength(jcs({ [s.member]: s.fill.repeat(s.accepted_fill_length) }))).toBe(s.max_body_bytes);
    expect(Buffer.byteLength(jcs({ [s.member]: s.fill.repeat(s.refused_fill_length) }))).toBe(s.max_body_bytes + 1);
  });

  it('§13 the checkpoint: its root is RFC 6962 over the rows, its signature Ed25519 by the home over JCS with the format', () => {
    const cp = example('checkpoint');
    const digest = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
    const leaves = (cp.rows_text as string[]).map((t) => digest(Buffer.from([0]), Buffer.from(t, 'utf8')));
    const node = (l: Buffer, r: Buffer) => digest(Buffer.from([1]), l, r);
    expect(leaves).toHaveLength(cp.checkpoint.tree_size);
    expect(node(node(leaves[0]!, leaves[1]!), leaves[2]!).toString('hex')).toBe(cp.checkpoint.root_hash);
    const { signature, ...signed } = cp.checkpoint;
    expect(jcs({ format: 'svc-chain-checkpoint/1', ...signed })).toBe(cp.signing_text);
    expect(cp.checkpoint.home).toBe(event.peer_id);
    expect(edSign(null, Buffer.from(cp.signing_text, 'utf8'), edPrivate(event.seed_hex)).toString('base64')).toBe(signature);
    expect(edVerify(null, Buffer.from(cp.signing_text, 'utf8'), createPublicKey(edPrivate(event.seed_hex)), Buffer.from(signature, 'base64'))).toBe(true);
  });

  it('§14 executed_by and the /svc/exec/1.0.0 request: digests, handshake, frame and signature from the numbers', () => {
    const x = example('execution');
    const r = x.request;
    expect(sha256(jcs({ solver: r.solver, inputs: r.inputs }))).toBe(r.request_digest);
    expect(r.handshake).toBe('v1=' + hmac(Buffer.from(x.mesh_secret, 'utf8'), `${x.home}|${r.svcond}|${r.request_digest}`));
    const text = Buffer.from(jcs(r), 'utf8');
    expect(text.length).toBe(x.request_frame.text_bytes);
    // LEB128: 7 bits a byte, low group first, the high bit set on every byte but the last.
    const varint: number[] = [];
    for (let n = text.length; ; n = Math.floor(n / 128)) {
      if (n < 128) {
        varint.push(n);
        break;
      }
      varint.push((n % 128) | 0x80);
    }
    expect(Buffer.from(varint).toString('hex')).toBe(x.request_frame.length_prefix_hex);
    expect(base58(Buffer.concat([PEER_ID_PREFIX, edPublicRaw(x.executor_seed_hex)]))).toBe(x.executor);
    const e = x.executed_by;
    expect({ node: e.node, svcond: e.svcond, request_digest: e.request_digest }).toEqual({
      node: x.executor,
      svcond: r.svcond,
      request_digest: r.request_digest,
    });
    const signing = jcs({
      attests: 'execution',
      node: e.node,
      bond_id: e.bond_id,
      svcond: e.svcond,
      request_digest: e.request_digest,
      result_digest: x.result_digest,
    });
    expect(signing).toBe(x.signing_text);
    expect(edSign(null, Buffer.from(signing, 'utf8'), edPrivate(x.executor_seed_hex)).toString('base64')).toBe(e.signature);
  });
});

/** The top-level members a §13 cell names: the `name`s outside parentheses (what is inside describes a member). */
function topMembers(cell: string): string[] {
  let text = cell;
  for (let before = ''; before !== text;) {
    before = text;
    text = text.replace(/\([^()]*\)/g, '');
  }
  return [...text.matchAll(/`([A-Za-z_][A-Za-z0-9_]*\??)`/g)].map((m) => m[1]!);
}

describe("docs/protocol.md: the project's code agrees", () => {
  let node: TestNode;
  let bare: TestNode;
  let key: string;

  beforeAll(async () => {
    // The document's receipt secret and mesh secret, and a clock at the document's stamp (so its event is fresh).
    const clock = new ManualClock(BigInt(compute.unix_ns));
    node = await startTestNode(
      { receiptSecret: keys.secret_hex, mesh: { secret: handshake.mesh_secret, p2pPort: 0, bootstrap: [] } },
      { clock, mesh: { autoPulse: false } },
    );
    bare = await startTestNode({}, { mesh: { autoPulse: false } });
    key = (await zkIdentity(node.url, 'protocol-doc')).key;
  });
  afterAll(async () => {
    await node?.destroy();
    await bare?.destroy();
  });

  it('the kernel derives the same keys and the same proof', () => {
    const secret = Buffer.from(keys.secret_hex, 'hex');
    for (const label of ['RECEIPT', 'PROVE', 'SALT']) expect(deriveKey(secret, label).toString('hex')).toBe(keys[`K_${label}`]);
    expect(keyFingerprint(deriveKey(secret, 'RECEIPT'))).toBe(keys.receiptKeyFingerprint);
    expect(signBody(deriveKey(secret, 'RECEIPT'), compute)).toBe(compute.svcProof);
  });

  it("a node keyed with the document's secret checks its sealed result as §3 says, and refuses it tampered", async () => {
    // This node has its own key and has never heard the example's node: every check holds but the sealer is unknown.
    const v = await call(node.url, 'POST', '/api/svc/verify', compute, bearer(key));
    expect(v.body).toEqual({
      valid: false,
      proof_valid: true,
      receipt_valid: true,
      seal_signature_valid: true,
      result_digest_valid: true,
      sealed_by: compute.node,
      sealer_known: false,
      result_id: compute.result_id,
      svcond: compute.svcond,
      reason: 'sealer_unknown',
      reasons: [{ code: 'sealer_unknown', message: VERIFY_REASONS.sealer_unknown }],
      verdict: null,
      challenge_id: null,
    });
    // The same function with the example's node known (as `svc-node verify --node` makes it): valid.
    const known = verifySealedResult(
      { receiptKey: deriveKey(Buffer.from(keys.secret_hex, 'hex'), 'RECEIPT'), isKnownNode: (n) => n === compute.node, verifySignature: verifyText },
      compute,
    );
    expect(known).toMatchObject({ valid: true, sealed_by: compute.node, reasons: [] });
    // §3's reason codes are the function's closed list, in the table's order.
    const section = DOC.slice(DOC.indexOf('## 3.'), DOC.indexOf('## 4.'));
    const codes = [...section.matchAll(/^\| \d \| .* \| `([a-z_]+)` \|$/gm)].map((m) => m[1]);
    expect(['not_a_result', ...codes]).toEqual(Object.keys(VERIFY_REASONS));
    const t = await call(node.url, 'POST', '/api/svc/verify', { ...compute, value: 10 }, bearer(key));
    expect(t.body).toMatchObject({ valid: false, proof_valid: false, receipt_valid: false, seal_signature_valid: false, result_digest_valid: false });
    const p = example('prove');
    const pv = await call(node.url, 'POST', '/api/svc/prove/verify', { receipt: p.receipt, signature: p.signature });
    expect(pv.body).toEqual({ valid: true, R_t: p.receipt.R_t, svcond: p.receipt.svcond, operatorIds: p.receipt.operatorIds, keyPrefix: 'PROVE' });
    const other = await call(node.url, 'POST', '/api/svc/prove/verify', { receipt: { ...p.receipt, keyPrefix: 'RECEIPT' }, signature: p.signature });
    expect(other.body.valid).toBe(false);
  });

  it("the same request sealed here has the document's result_digest, and its proofs follow §3-§4", async () => {
    const r = await call(
      node.url,
      'POST',
      '/api/svc/compute',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      bearer(key),
    );
    expect(r.status).toBe(200);
    expect(r.body.result_digest).toBe(compute.result_digest);
    expect(r.body.svcProof).toBe(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs(unsigned(r.body))));
    const { hmac: h, ...base } = r.body.svcond_receipt;
    expect(h).toBe(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs({ ...base, value: r.body.value, unit: r.body.unit, result_digest: r.body.result_digest })));
    // The stored body is the one sent: the kept template and the whole body give the same bytes.
    const again = await call(
      node.url,
      'POST',
      '/api/svc/compute',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      bearer(key),
    );
    expect(again.body.svcProof).toBe(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs(unsigned(again.body))));
  });

  it("a solver result's result_digest follows §5 (outputs digested first)", async () => {
    const r = await call(node.url, 'POST', '/api/svc/zeta', {}, bearer(key));
    expect(r.status, r.text).toBe(200);
    const b = r.body;
    expect(b.kind).toBe('solver');
    expect(b.result_digest).toBe(sha256(jcs({ fields: sha256(jcs(b.outputs)), inputs: b.inputs, solver: b.solver, unit: b.unit, value: b.value })));
    expect(b.svcProof).toBe(hmac(Buffer.from(keys.K_RECEIPT, 'hex'), jcs(unsigned(b))));
    const { seal_signature: sealSignature, ...rest } = unsigned(b) as Record<string, any>;
    expect(b.node).toBe(node.node.nodeId);
    expect(edVerify(null, Buffer.from(jcs(rest), 'utf8'), edPublicFromPeerId(b.node), Buffer.from(sealSignature, 'base64'))).toBe(true);
  });

  it("the mesh code computes the document's signing text, digest, handshake, id, topic and reads its message data", () => {
    const e = event.event;
    expect(signingText(e)).toBe(event.signing_text);
    expect(bodyDigest(e.body)).toBe(handshake.body_digest);
    expect(handshakeFor(handshake.mesh_secret, e.sender, e.svcond, handshake.body_digest)).toBe(handshake.handshake);
    expect(eventId(e.sender, e.svcond, handshake.body_digest)).toBe(handshake.event_id);
    expect(topicForType(e.type)).toBe(example('gossip-message').topic);
    expect(Buffer.from(peerIdFromString(e.sender).publicKey!.raw).toString('hex')).toBe(event.public_key_hex);
    expect(decodeEnvelope(new TextEncoder().encode(example('gossip-message').data_utf8))).toEqual({ event: e, handshake: handshake.handshake });
  });

  it("POST /api/mesh/gossip: the document's request gets the document's answers (accepted, then duplicate)", async () => {
    const a = example('gossip-accepted');
    const first = await call(node.url, a.request.method, a.request.path, a.request.body, { 'x-node-handshake': a.request.headers['x-node-handshake'] });
    expect(first.status).toBe(a.status);
    expect(first.body).toEqual(a.response);
    const d = example('gossip-duplicate');
    const second = await call(node.url, a.request.method, a.request.path, a.request.body, { 'x-node-handshake': a.request.headers['x-node-handshake'] });
    expect(second.status).toBe(d.status);
    expect(second.body).toEqual(d.response);
  });

  it("every malformed event of §10 is 400 INVALID_EVENT with the document's message", async () => {
    const cases = example<{ rule: string; set?: Record<string, unknown>; remove?: string[]; as_array?: boolean; message: string }[]>('invalid-events');
    expect(cases.length).toBeGreaterThanOrEqual(10);
    for (const c of cases) {
      const e: Record<string, unknown> = { ...event.event, ...c.set };
      for (const k of c.remove ?? []) delete e[k];
      const r = await call(node.url, 'POST', '/api/mesh/gossip', c.as_array ? [e] : e, { 'x-node-handshake': handshake.handshake });
      expect(r.status, c.rule).toBe(400);
      expect(r.body.error.code, c.rule).toBe('INVALID_EVENT');
      expect(r.body.error.message, c.rule).toBe(c.message);
    }
  });

  it("§10 MESH_DISABLED: a node without a mesh secret answers the document's 503 before looking at the body", async () => {
    const d = example('mesh-disabled');
    const r = await call(bare.url, d.request.method, d.request.path, d.request.body);
    expect(r.status).toBe(d.status);
    expect(r.body.error).toMatchObject({ code: d.response.error.code, message: d.response.error.message, status: d.status });
    expect(Object.keys(r.body.error).sort()).toEqual(Object.keys(d.response.error).sort());
  });

  it('§11 sizes: the 65 536-byte body is accepted and one byte more refused; an HTTP body over 1 MiB is 413', async () => {
    const s = example('size-limits');
    const send = async (length: number) => {
      const body = { [s.member]: s.fill.repeat(length) };
      const e = { type: 'test.size', sender: event.peer_id, svcond: event.event.svcond, body };
      const signature = edSign(null, Buffer.from(jcs({ body, sender: e.sender, svcond: e.svcond, type: e.type }), 'utf8'), edPrivate(event.seed_hex)).toString(
        'base64',
      );
      const hs = 'v1=' + hmac(Buffer.from(handshake.mesh_secret, 'utf8'), `${e.sender}|${e.svcond}|${sha256(jcs(body))}`);
      return call(node.url, 'POST', '/api/mesh/gossip', { ...e, signature }, { 'x-node-handshake': hs });
    };
    const ok = await send(s.accepted_fill_length);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.accepted).toBe(true);
    const refused = await send(s.refused_fill_length);
    expect(refused.status).toBe(s.refused.status);
    expect(refused.body.error).toMatchObject({ code: s.refused.code, message: s.refused.message });
    const big = await call(node.url, 'POST', '/api/mesh/gossip', JSON.stringify({ pad: 'x'.repeat(s.http_body_limit_bytes) }), {
      'x-node-handshake': handshake.handshake,
    });
    expect(big.status).toBe(s.http_refused.status);
    expect(big.body.error).toMatchObject({ code: s.http_refused.code, limit_bytes: s.http_refused.limit_bytes });
  });

  it("§13 lists every event type: the types with a row are the node's handler table, on their topics, with its members", async () => {
    const section = DOC.slice(DOC.indexOf('## 13. Event types'));
    const rows = [...section.matchAll(/^\| `([^`]+)` \| `([^`]+)` \| (yes|no) \| [^|]* \| ([^|]*) \|/gm)].map((m) => ({
      type: m[1]!,
      topic: m[2]!,
      row: m[3] === 'yes',
      members: topMembers(m[4]!),
    }));
    const table = node.node.mesh.gossip;
    expect(
      rows
        .filter((r) => r.row)
        .map((r) => r.type)
        .sort(),
    ).toEqual(table.types());
    for (const r of rows) {
      expect(r.topic, r.type).toBe(topicForType(r.type));
      if (!r.row) continue;
      expect(r.members.sort(), r.type).toEqual(membersOf(table.bodySchema(r.type)).sort());
    }
    // The sealed-result announcement, with the members a sealed compute's announcement has, and its summaries'.
    const sealed = rows.find((r) => r.type === RESULTS_SEALED);
    expect(sealed?.row).toBe(true);
    const resultsCell = section.split('\n').find((l) => l.startsWith(`| \`${RESULTS_SEALED}\``))!;
    const summaryMembers = membersOf(resultsSealedBody.shape.results.element);
    for (const k of summaryMembers) expect(resultsCell, k).toContain(`\`${k}\``);
    // Listed by the announcement only when its owner publishes it.
    const publisher = (await zkIdentity(node.url, 'protocol-doc-publisher')).key;
    expect((await call(node.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(publisher))).status).toBe(200);
    const c = await call(
      node.url,
      'POST',
      '/api/svc/compute',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2.5, velocity_m_s: 3 } },
      bearer(publisher),
    );
    expect(c.status, c.text).toBe(200);
    // Announced once the seal's batch is durable, after the answer: waited for.
    type Listed = { event: { type: string; body: Record<string, unknown> } };
    const announced = await waitUntil(async () => {
      const events = (await call(node.url, 'GET', '/api/mesh/events?limit=500')).body.events as Listed[];
      return events.find(
        (e) => e.event.type === RESULTS_SEALED && (e.event.body.results as { result_id: string }[]).some((r) => r.result_id === c.body.result_id),
      );
    }, 'the node announces its sealed result');
    expect(Object.keys(announced.event.body).sort()).toEqual(sealed!.members.sort());
    const listed = (announced.event.body.results as Record<string, unknown>[]).find((r) => r.result_id === c.body.result_id)!;
    expect(Object.keys(listed).sort()).toEqual(summaryMembers.sort());
    expect(listed).toMatchObject({ result_digest: c.body.result_digest, value: c.body.value, kind: 'compute' });
    // The direct (never gossiped) types, with the transfer delivery's body.
    const direct = [...section.matchAll(/^\| `([^`]+)` \| [^|]*\| [^|]*\| ([^|]*) \|$/gm)].map((m) => ({ type: m[1]!, members: topMembers(m[2]!) }));
    expect(direct.map((d) => d.type)).toEqual([TRANSFER_EVENT, TRANSFER_ACK_EVENT, CHAIN_CALLER_EVENT, CHARGE_SETTLE_EVENT, CHARGE_OUTCOME_EVENT]);
    expect(direct[0]!.members).toEqual(Object.keys(deliveryBatch.shape));
    expect(direct[1]!.members).toEqual(['acks']);
    expect(direct[2]!.members).toEqual(membersOf(voucherBody));
    const callerRow = section.split('\n').find((l) => l.startsWith(`| \`${CHAIN_CALLER_EVENT}\``))!;
    for (const k of Object.keys(voucherBody.shape.charge.unwrap().shape)) expect(callerRow, k).toContain(`\`${k}\``);
    expect(direct[3]!.members).toEqual(Object.keys(settleBatch.shape));
    expect(direct[4]!.members).toEqual(['outcomes']);
  });

  it("§13 the node's checkpoint schema, signing text and verification take the document's checkpoint, and its Merkle root", () => {
    const cp = example('checkpoint');
    expect(CheckpointSchema.parse(cp.checkpoint)).toEqual(cp.checkpoint);
    const { signature: _s, ...signed } = cp.checkpoint;
    expect(checkpointText(signed)).toBe(cp.signing_text);
    expect(verifyCheckpoint(cp.checkpoint, verifyText)).toBe(true);
    expect(verifyCheckpoint({ ...cp.checkpoint, tree_size: 4 }, verifyText)).toBe(false);
    const frontier = new Frontier();
    for (const t of cp.rows_text as string[]) frontier.append(leafHash(Buffer.from(t, 'utf8')));
    expect(frontier.root().toString('hex')).toBe(cp.checkpoint.root_hash);
  });

  it("§14 the node's request schema, frame, handshake, digests and execution check agree with the document", () => {
    const x = example('execution');
    const r = x.request;
    expect(execRequestSchema.parse(r)).toEqual(r);
    const frame = Buffer.from(encodeFrame(r));
    expect(frame.subarray(0, 2).toString('hex')).toBe(x.request_frame.length_prefix_hex);
    expect(frame.subarray(2).toString('utf8')).toBe(jcs(r));
    expect(handshakeFor(x.mesh_secret, x.home, r.svcond, r.request_digest)).toBe(r.handshake);
    expect(solverRequestDigest(r.solver, r.inputs)).toBe(r.request_digest);
    const zeta = defaultRegistry().get('zeta')!;
    const out = zeta.run(zeta.resolve(r.inputs) as never);
    expect(solverResultDigest('zeta', r.inputs, out, plainJson(out.outputs))).toBe(x.result_digest);
    expect(executionText(x.executed_by, x.result_digest)).toBe(x.signing_text);
    expect(verifyExecution(verifyText, x.executed_by, x.result_digest)).toBe(true);
    expect(verifyExecution(verifyText, { ...x.executed_by, svcond: r.svcond + 1 }, x.result_digest)).toBe(false);
    const section = DOC.slice(DOC.indexOf('## 14.'));
    const codes = /Refusal codes: ([^.]*)\./
      .exec(section.replace(/\n/g, ' '))![1]!
      .match(/`([A-Z_]+)`/g)!
      .map((c) => c.slice(1, -1));
    expect(codes.sort()).toEqual([...new Set(Object.values(EXEC_REFUSALS))].sort());
  });
});

describe('docs/protocol.md §17, /svc/http/1', () => {
  it('the request digest, handshake and frame follow from the numbers', () => {
    const x = example('peer-http');
    const { handshake, ...rest } = x.request;
    expect(sha256(jcs(rest))).toBe(x.digest);
    expect(handshake).toBe('v1=' + hmac(Buffer.from(x.mesh_secret, 'utf8'), `${x.home}|${x.request.svcond}|${x.digest}`));
    const text = Buffer.from(jcs(x.request), 'utf8');
    expect(text.length).toBe(x.request_frame.text_bytes);
    expect(Buffer.from([(text.length % 128) | 0x80, Math.floor(text.length / 128)]).toString('hex')).toBe(x.request_frame.length_prefix_hex);
  });

  it("the node's request schema, frame and handshake agree with the document", () => {
    const x = example('peer-http');
    const r = x.request;
    expect(peerHttpRequestSchema.parse(r)).toEqual(r);
    const { handshake: _h, ...rest } = r;
    expect(handshakeFor(x.mesh_secret, x.home, r.svcond, bodyDigest(rest))).toBe(r.handshake);
    const frame = Buffer.from(encodeFrame(r));
    expect(frame.subarray(0, 2).toString('hex')).toBe(x.request_frame.length_prefix_hex);
    expect(frame.subarray(2).toString('utf8')).toBe(jcs(r));
    expect(DOC).toContain(`**\`${PEER_HTTP_PROTOCOL}\`**`);
  });
});

describe('docs/protocol.md §18, /svc/peers/1', () => {
  it('the request and answer digests, handshakes and frame follow from the numbers', () => {
    const x = example('peer-exchange');
    const secret = Buffer.from(x.mesh_secret, 'utf8');
    const { handshake: rh, ...request } = x.request;
    expect(sha256(jcs(request))).toBe(x.request_digest);
    expect(rh).toBe('v1=' + hmac(secret, `${x.asker}|${x.request.svcond}|${x.request_digest}`));
    const { handshake: ah, ...answer } = x.answer;
    expect(sha256(jcs(answer))).toBe(x.answer_digest);
    expect(ah).toBe('v1=' + hmac(secret, `${x.answerer}|${x.answer.svcond}|${x.answer_digest}`));
    const text = Buffer.from(jcs(x.request), 'utf8');
    expect(text.length).toBe(x.request_frame.text_bytes);
    expect(Buffer.from([text.length]).toString('hex')).toBe(x.request_frame.length_prefix_hex);
  });

  it("the node's schemas, handshakes and frame agree with the document", () => {
    const x = example('peer-exchange');
    expect(exchangeRequestSchema.parse(x.request)).toEqual(x.request);
    expect(exchangeAnswerSchema.parse(x.answer)).toEqual(x.answer);
    expect(exchangeRequest(x.mesh_secret, x.asker, x.request.svcond)).toEqual(x.request);
    expect(exchangeAnswer(x.mesh_secret, x.answerer, x.answer.svcond, x.answer.full, x.answer.peers)).toEqual(x.answer);
    expect(() => checkExchange(x.mesh_secret, x.answerer, x.answer.svcond, x.answer)).not.toThrow();
    // The answer's handshake names its sender: it does not pass as the asker's, nor with another secret.
    expect(() => checkExchange(x.mesh_secret, x.asker, x.answer.svcond, x.answer)).toThrow(/handshake/);
    expect(() => checkExchange('another-secret-0123456789abcdef', x.answerer, x.answer.svcond, x.answer)).toThrow(/handshake/);
    expect(() => checkExchange(x.mesh_secret, x.answerer, x.answer.svcond + 121, x.answer)).toThrow(/tick/);
    const frame = Buffer.from(encodeFrame(x.request));
    expect(frame.subarray(0, 1).toString('hex')).toBe(x.request_frame.length_prefix_hex);
    expect(frame.subarray(1).toString('utf8')).toBe(jcs(x.request));
    expect(DOC).toContain(`**\`${PEER_EXCHANGE_PROTOCOL}\`**`);
  });
});
