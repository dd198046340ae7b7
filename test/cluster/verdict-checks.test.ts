// Every node checks every challenge and verdict against its own state (architecture.md §6), on four real nodes on
// 127.0.0.1 (A, B, C, D; committees of 2, so a challenge of A's result opened at B draws {C, D}). Every operator
// bonds and contributes. The liar is composed here: a key that is no node of the mesh but holds its secret, posting
// to /api/mesh/gossip a verdict on A's real, published result whose challenge and votes it signed with fresh keys.
//   1. an honest challenge is decided on every node, and its document verifies at a node that checks its state; the
//      same document with its carried result swapped (another result, re-signed by another key, a changed value, no
//      seal_signature) is refused by every node and pohc/verify says which check failed;
//   2. a challenge of a result larger than an event body (lorenz at its default inputs) is opened, decided on every
//      node (its events name the body by result_sha256; the nodes ask for it) and verified by pohc/verify; the same
//      verdict naming another result_sha256 is refused by every node once the body it gets does not match;
//   3. the forged verdict (fresh-key committees of 3, of 2 and of 1) is refused by every node (Reject, counted,
//      seen in metrics), slashes nobody, and pohc/verify calls it invalid;
//   4. D stopped: once it has not been heard for liveTicks it is not drawn, and no committee smaller than the
//      policy's is formed (409 SVC_NO_COMMITTEE).
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bondedOperator, contributingConfig, CONTRIBUTING_NODE_OPTIONS, openChallenge } from '../helpers/contributing.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import {
  VERDICT_EVENT,
  challengeIdOf,
  challengeSigningText,
  commitmentOf,
  commitSigningText,
  verifyVerdictDocument,
  voteSigningText,
  type ChallengeRecord,
  type SignedCommit,
  type SignedVote,
  type VerdictDocument,
  forMesh,
  sealedDigestOf,
} from '../../src/consensus/challenge-wire.js';
import { canonicalJson } from '../../src/kernel/canonical.js';
import { MAX_BODY_BYTES } from '../../src/mesh/validator.js';
import { drawEvent, drawnCommittee } from '../consensus/helpers.js';
import { quorumOf } from '../../src/consensus/policy.js';
import { buildEnvelope, bytesSigner, signText, verifyText } from '../../src/mesh/wire.js';
import { deriveKey, sealWhole } from '../../src/kernel/receipt.js';
import { stampAt, systemClock } from '../../src/kernel/clock.js';

const MESH_SECRET = 'verdict-checks-secret-0123456789ab';
const BOND = 2;
const LIVE_TICKS = 6;
const config = contributingConfig({
  secret: MESH_SECRET,
  receiptSecret: 'ce'.repeat(32),
  contribution: { bondEnvelopes: BOND, committeeSize: 2, settleTicks: 1, deadlineTicks: 8, liveTicks: LIVE_TICKS },
  sections: { metrics: { port: 0 } },
});
const RANDOM_DIGEST = 'ab'.repeat(32);

interface Key {
  priv: PrivateKey;
  id: string;
}
async function freshKey(): Promise<Key> {
  const priv = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  return { priv, id: peerIdFromPrivateKey(priv as never).toString() };
}

let a: TestNode;
let b: TestNode;
let c: TestNode;
let d: TestNode;
const nodes = () => [a, b, c, d];
const ops: Record<string, { zid: string; key: string; bondId: string }> = {};

/** A published zeta run by A's operator, executed with its bond at stake. */
async function resultOfA(n: number): Promise<{ result_id: string; result_digest: string; executed_by: ChallengeRecord['executed_by'] }> {
  const r = await call(a.url, 'POST', '/api/svc/zeta', { n, count: 1 }, bearer(ops.a!.key));
  expect(r.status, r.text).toBe(200);
  expect(r.body.executed_by?.bond_id).toBe(ops.a!.bondId);
  return r.body;
}

/** The liar's verdict: A's real result "upheld" by a committee of `size` fresh keys, each voting the liar's claim. */
async function forgedVerdict(liar: Key, result: Awaited<ReturnType<typeof resultOfA>>, size: number, policySize = size): Promise<VerdictDocument> {
  const members = await Promise.all(Array.from({ length: size }, () => freshKey()));
  const now = stampAt(systemClock.nowNs()).svcond;
  const id = challengeIdOf(result.result_id, `zid_liar_${size}`);
  const eligible = members.map((m) => m.id).sort();
  const draw = drawEvent(
    members.find((m) => m.id === eligible[0])!,
    now + 1,
  );
  const challenge: ChallengeRecord = {
    challenge_id: id,
    result_id: result.result_id,
    challenger: `zid_liar_${size}`,
    challenger_home: liar.id,
    claimed_digest: RANDOM_DIGEST,
    executor_digest: result.result_digest,
    executed_by: result.executed_by,
    request: { kind: 'solver', solver: 'zeta', inputs: {} },
    stamp_svcond: now - 2,
    svcond: now,
    deadline_svcond: draw.svcond + 8, // the policy's deadlineTicks from the draw event
    committee_size: policySize,
    quorum: quorumOf(policySize),
    eligible,
    committee: drawnCommittee(result.result_id, draw, eligible, policySize),
    draw,
  };
  // Each fresh member commits, then reveals: the document alone is consistent (pohc's own checks pass it).
  const salt = 'f0'.repeat(16);
  const commits: SignedCommit[] = members.map((m) => {
    const commit = { challenge_id: id, voter: m.id, commitment: commitmentOf(RANDOM_DIGEST, salt), svcond: now };
    return { commit, signature: signText(m.priv, commitSigningText(commit)) };
  });
  const votes: SignedVote[] = members.map((m) => {
    const vote = { challenge_id: id, voter: m.id, digest: RANDOM_DIGEST, svcond: now, salt };
    return { vote, signature: signText(m.priv, voteSigningText(vote)) };
  });
  return {
    challenge: { challenge, signature: signText(liar.priv, challengeSigningText(challenge)) },
    commits,
    votes,
    verdict: { challenge_id: id, outcome: 'upheld', deciding_digest: RANDOM_DIGEST },
  };
}

async function gossipAs(as: Key, url: string, type: string, body: unknown) {
  const env = await buildEnvelope(as.priv, as.id, MESH_SECRET, type, stampAt(systemClock.nowNs()).svcond, body);
  return call(url, 'POST', '/api/mesh/gossip', env.event, { 'x-node-handshake': env.handshake });
}

beforeAll(async () => {
  a = await startTestNode(config([]), CONTRIBUTING_NODE_OPTIONS);
  const boot = [a.node.mesh.multiaddrs()[0]!];
  [b, c, d] = await Promise.all([
    startTestNode(config(boot), CONTRIBUTING_NODE_OPTIONS),
    startTestNode(config(boot), CONTRIBUTING_NODE_OPTIONS),
    startTestNode(config(boot), CONTRIBUTING_NODE_OPTIONS),
  ]);
  await waitFor(() => nodes().every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 3), 40_000, 'tick events from every peer');
  const [opA, opB, opC, opD] = await Promise.all([
    bondedOperator(a, 'vc-a', BOND),
    bondedOperator(b, 'vc-b', BOND),
    bondedOperator(c, 'vc-c', BOND),
    bondedOperator(d, 'vc-d', BOND),
  ]);
  Object.assign(ops, { a: opA!, b: opB!, c: opC!, d: opD! });
  await waitFor(() => nodes().every((n) => n.node.bonds.active().length === 4), 30_000, 'every bond at every node');
  await waitFor(
    () => nodes().every((n) => n.node.mesh.peers().filter((p) => p.mode === 'contributing' && p.bondId).length === 3),
    30_000,
    'every node hears every operator contributing',
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(nodes().map((n) => n?.destroy()));
});

describe('verdicts every node checks', () => {
  it('an honest challenge is decided on every node; its document verifies against a node’s own state', async () => {
    const result = await resultOfA(3);
    const ch = await zkIdentity(b.url, 'vc-challenger');
    const opened = await openChallenge(b.url, ch.key, { result_id: result.result_id, claimed_digest: RANDOM_DIGEST });
    expect(opened.status, opened.text).toBe(201);
    expect([...opened.body.committee].sort()).toEqual([c.node.nodeId, d.node.nodeId].sort());
    const seen = await Promise.all(
      nodes().map((n) =>
        waitFor(
          async () => {
            const r = await call(n.url, 'GET', `/api/tally/consensus/${opened.body.challenge_id}`);
            return r.status === 200 && r.body.verdict ? r.body : null;
          },
          30_000,
          `the verdict at ${n.url}`,
        ),
      ),
    );
    for (const v of seen) expect(v.verdict.outcome).toBe('rejected');
    const ok = await call(d.url, 'POST', '/api/protocol/pohc/verify', seen[0].document);
    expect(ok.body).toMatchObject({ valid: true, folded_outcome: 'rejected', reasons: [] });
    for (const n of nodes()) expect(n.node.challenges.stats()).toMatchObject({ refused_challenges: 0, refused_verdicts: 0 });

    // The liar keeps the document and swaps the result it carries.
    const doc = seen[0].document as VerdictDocument;
    const sealed = doc.challenge.result!;
    expect(sealed).toMatchObject({ result_id: result.result_id, result_digest: result.result_digest, node: a.node.nodeId, executed_by: result.executed_by });
    const liar = await freshKey();
    const another = (await resultOfA(6)) as unknown as Record<string, never>;
    const { seal_signature: _s, svcProof: _p, ...unsigned } = sealed;
    const receiptKey = deriveKey(Buffer.from('ce'.repeat(32), 'hex'), 'RECEIPT');
    const swaps: [string, unknown, string][] = [
      ['another result', another, `the carried result is ${String(another.result_id)}, not the challenge's ${result.result_id}`],
      // The liar holds the receipt secret: its re-signed body keeps a good proof, not A's signature.
      ['re-signed by another key', sealWhole(receiptKey, bytesSigner(liar.priv), unsigned), 'the carried result does not verify: seal_signature'],
      [
        'a changed value under the old signature',
        { ...sealed, value: (sealed.value as number) * (1 + 1e-6) },
        'the carried result does not verify: proof, receipt, seal_signature, result_digest',
      ],
      ['no seal_signature', { ...unsigned, svcProof: sealed.svcProof }, 'the carried result does not verify: proof, seal_signature'],
    ];
    // Swapped inline, with no result_sha256 to hold it to: the body's own checks refuse it.
    const { result_sha256: _d, ...signedOnly } = doc.challenge;
    for (const [what, swapped, reason] of swaps) {
      const bad = { ...doc, challenge: { ...signedOnly, result: swapped } };
      const verify = await call(d.url, 'POST', '/api/protocol/pohc/verify', bad);
      expect(verify.status, what).toBe(200);
      expect(verify.body, what).toMatchObject({ valid: false, folded_outcome: 'rejected', reasons: [`result: ${reason}`] });
      for (const n of nodes()) {
        const r = await gossipAs(liar, n.url, VERDICT_EVENT, bad);
        expectError(r, 400, 'INVALID_VERDICT');
        expect(r.body.error.message, what).toBe(`its carried result is refused here: ${reason}`);
      }
    }
    for (const n of nodes()) {
      expect(n.node.challenges.stats()).toMatchObject({ refused_verdicts: swaps.length });
      // The verdict each node holds stands, with A's own result.
      const held = await call(n.url, 'GET', `/api/tally/consensus/${opened.body.challenge_id}`);
      expect(held.body.verdict.outcome).toBe('rejected');
      expect(held.body.document.challenge.result).toEqual(sealed);
    }
  }, 90_000);

  it('a result larger than an event body is challenged, decided everywhere and verified; a verdict naming another digest is refused', async () => {
    const run = await call(a.url, 'POST', '/api/svc/lorenz', {}, bearer(ops.a!.key));
    expect(run.status, run.text).toBe(200);
    expect(run.body.executed_by?.bond_id).toBe(ops.a!.bondId);
    const sealed = run.body as Record<string, unknown>;
    expect(Buffer.byteLength(canonicalJson(sealed))).toBeGreaterThan(MAX_BODY_BYTES);
    const ch = await zkIdentity(b.url, 'vc-challenger-large');
    const opened = await openChallenge(b.url, ch.key, { result_id: sealed.result_id as string, claimed_digest: RANDOM_DIGEST });
    expect(opened.status, opened.text).toBe(201);
    const id = opened.body.challenge_id as string;
    const seen = await Promise.all(
      nodes().map((n) =>
        waitFor(
          async () => {
            const r = await call(n.url, 'GET', `/api/tally/consensus/${id}`);
            return r.status === 200 && r.body.verdict ? r.body : null;
          },
          30_000,
          `the verdict at ${n.url}`,
        ),
      ),
    );
    // Every node holds the body in full, asked for by its digest (no event could carry it), and the same verdict.
    for (const v of seen) {
      expect(v.verdict.outcome).toBe('rejected');
      expect(v.challenge).toMatchObject({ result: sealed, result_sha256: sealedDigestOf(sealed) });
    }
    for (const n of nodes()) expect(n.node.challenges.stats()).toMatchObject({ sealed_unavailable: 0 });
    const doc = seen[0].document as VerdictDocument;
    const ok = await call(d.url, 'POST', '/api/protocol/pohc/verify', doc);
    expect(ok.body).toMatchObject({ valid: true, folded_outcome: 'rejected', reasons: [] });

    // The liar re-sends the verdict as an event names its body, under another result_sha256: the body every node
    // gets (its own copy, the opener's, the home's) is not that one.
    const liar = await freshKey();
    const onMesh = forMesh(doc);
    expect(onMesh.challenge.result).toBeUndefined();
    const other = { ...onMesh, challenge: { ...onMesh.challenge, result_sha256: 'cd'.repeat(32) } };
    const before = nodes().map((n) => n.node.challenges.stats().refused_verdicts);
    for (const n of nodes()) {
      const r = await gossipAs(liar, n.url, VERDICT_EVENT, other);
      expectError(r, 400, 'INVALID_VERDICT');
      expect(r.body.error.message).toContain(`its carried result is refused here: its sealed result (result_sha256 ${'cd'.repeat(32)}) could not be had`);
      expect(r.body.error.message).toContain('is not the one result_sha256 names');
    }
    nodes().forEach((n, i) => expect(n.node.challenges.stats()).toMatchObject({ refused_verdicts: before[i]! + 1, sealed_unavailable: 1 }));
    // The verdict named by its true digest is taken (a duplicate here), and every node's verdict stands.
    for (const n of nodes()) expect((await gossipAs(liar, n.url, VERDICT_EVENT, onMesh)).status).toBeLessThan(300);
    for (const n of nodes()) expect((await call(n.url, 'GET', `/api/tally/consensus/${id}`)).body.verdict.outcome).toBe('rejected');
  }, 90_000);

  it('a forged verdict with a fresh-key committee of 3, of 2 or of 1 is refused by every node and slashes nobody', async () => {
    const result = await resultOfA(4);
    const liar = await freshKey();
    const forged = [await forgedVerdict(liar, result, 3), await forgedVerdict(liar, result, 2), await forgedVerdict(liar, result, 1)];
    for (const doc of forged) {
      expect(verifyVerdictDocument(doc, verifyText).valid).toBe(true);
      for (const n of nodes()) {
        const r = await gossipAs(liar, n.url, VERDICT_EVENT, doc);
        expectError(r, 400, 'INVALID_VERDICT');
        expect(r.body.error.message).toMatch(/policy's is 2|holds no bond known here/);
      }
      // Also anyone's own check says so.
      const verify = await call(c.url, 'POST', '/api/protocol/pohc/verify', doc);
      expect(verify.body.valid).toBe(false);
      expect(verify.body.reasons.join(' ')).toContain("checked against this node's bonds and liveness");
    }
    // The committee of 2 has the policy's size: what refuses it is that its members hold no bond here.
    expect((await gossipAs(liar, a.url, VERDICT_EVENT, forged[1])).body.error.message).toContain('holds no bond known here');
    for (const n of nodes()) {
      expect(n.node.challenges.stats().refused_verdicts).toBeGreaterThanOrEqual(3);
      for (const doc of forged) expect((await call(n.url, 'GET', `/api/tally/consensus/${doc.verdict.challenge_id}`)).status).toBe(404);
      // A's bond stands everywhere; A's operator is still bonded and contributing.
      expect(n.node.bonds.ofNode(a.node.nodeId)?.bond.bond_id).toBe(ops.a!.bondId);
    }
    const status = await call(a.url, 'GET', '/api/contribute/status', undefined, bearer(ops.a!.key));
    expect(status.body).toMatchObject({ bonded: true, mode: 'contributing' });
    const metrics = await fetch(b.node.metricsUrl!).then((r) => r.text());
    const line = metrics.split('\n').find((l) => l.startsWith('svc_consensus_refused{kind="verdict"}'));
    expect(Number(line?.split(' ')[1])).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('a stopped node is not drawn once it has not been heard for liveTicks; no smaller committee is formed', async () => {
    const result = await resultOfA(5);
    await d.stop();
    const stoppedAt = b.node.mesh.nowSvcond();
    // D's last tick event falls out of B's live window.
    await waitFor(() => b.node.mesh.nowSvcond() > stoppedAt + LIVE_TICKS + 1, 20_000, 'D silent for liveTicks');
    const ch = await zkIdentity(b.url, 'vc-challenger-2');
    const r = await call(b.url, 'POST', '/api/tally/consensus/challenges', { result_id: result.result_id, claimed_digest: RANDOM_DIGEST }, bearer(ch.key));
    const refused = expectError(r, 409, 'SVC_NO_COMMITTEE');
    expect(refused).toMatchObject({ eligible: 1, committee_size: 2, live_ticks: LIVE_TICKS });
    // Nothing was held: the challenge does not exist.
    expect((await call(b.url, 'GET', `/api/tally/consensus/${challengeIdOf(result.result_id, ch.zid)}`)).status).toBe(404);
  }, 60_000);
});
