// A result no ledger holds is challengeable when the challenge carries it (consensus/result-lookup.ts carriedResult):
// a liar composed here — a bonded mesh node that seals a zeta run ×(1 + 1e-6) and signs it, seal and execution, with
// its own key, but records it nowhere — is challenged with the signed result itself, and the challenge opens for
// re-execution against the liar's bond. The same body re-signed by another mesh member (who holds the receipt
// secret but not the liar's key) is refused, naming the check that failed. Tested on the ChallengeService intake
// (the full mesh flow is the cluster consensus tests'). The verdict document carries the result on: a node that
// receives the honest verdict applies it; one whose carried result is swapped — another result, the body re-signed
// by another key, a changed value under the old signature, no seal_signature, another executed_by — is refused,
// counted, and nothing of it is kept. A result of any size is challengeable: a mesh event larger than its bound
// carries it by result_sha256, and a receiver asks for it, checks its digest, and refuses (counted) a body that is
// not the one named or one it could not have.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { ChallengeService, type ChallengedResult, type ChallengeServiceOptions } from '../../src/consensus/challenges.js';
import type { BondService } from '../../src/consensus/bonds.js';
import { carriedResult } from '../../src/consensus/result-lookup.js';
import {
  carriedResultFault,
  forMesh,
  sealedDigestOf,
  challengeSigningText,
  commitmentOf,
  commitSigningText,
  voteSigningText,
  type VerdictDocument,
} from '../../src/consensus/challenge-wire.js';
import { GossipError } from '../../src/mesh/gossip-error.js';
import { MAX_BODY_BYTES } from '../../src/mesh/validator.js';
import { signExecution, verifyExecution } from '../../src/consensus/executed-by.js';
import { bytesSigner, signText, verifyText } from '../../src/mesh/wire.js';
import { stampAt } from '../../src/kernel/clock.js';
import { modulationFactor } from '../../src/kernel/modulation.js';
import { metricShift } from '../../src/kernel/parity.js';
import { deriveKey, sealWhole } from '../../src/kernel/receipt.js';
import { buildBody } from '../../src/compute/sealed-body.js';
import { plainJson, solverRequestDigest, solverResultDigest } from '../../src/compute/result-digest.js';
import { verifySealedResult } from '../../src/compute/verify-result.js';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { InputError } from '../../src/solvers/errors.js';
import { TEST_POLICY, drawEvent, key, type Key } from './helpers.js';

const receiptKey = deriveKey(Buffer.from('0123456789abcdef0123456789abcdef', 'hex'), 'RECEIPT');
const NS = 1_790_000_000_123_456_789n;
const policy = TEST_POLICY;

let liar: Key;
let forger: Key;
let others: Key[];
let honestDigest: string;
/** The liar's sealed result: zeta at n = 30, its value ×(1 + 1e-6), every digest and signature consistent. */
let lie: Record<string, any>;
const dirs: string[] = [];
const stores: Store[] = [];

/**
 * What the liar's patched build seals (at `ns`: another tick is another result), signed by `by`, naming `sealer` as
 * its node; `executor` signs executed_by (the sealer, unless the home placed the run on a peer).
 */
function liarSeals(by: Key, sealer: Key, ns = NS, executor = sealer): Record<string, any> {
  const zeta = defaultRegistry().get('zeta')!;
  const inputs = plainJson(zeta.resolve({ n: 30, count: 1 }) as Record<string, unknown>);
  const honest = zeta.run(inputs as never);
  const out = { ...honest, value: honest.value * (1 + 1e-6) };
  const outputs = plainJson(out.outputs);
  const resultDigest = solverResultDigest('zeta', inputs, out, outputs);
  const stamp = stampAt(ns);
  const executedBy = signExecution(
    (t) => signText(executor.priv, t),
    { node: executor.id, bond_id: 'bond_' + '1'.repeat(24), svcond: stamp.svcond, request_digest: solverRequestDigest('zeta', inputs) },
    resultDigest,
  );
  const body = buildBody(receiptKey, {
    kind: 'solver',
    parts: {
      stamp,
      R_t: modulationFactor(stamp.phase, 0),
      resultId: `res_${stamp.svcond}_00000000000000aa`,
      resultDigest,
      shift: metricShift(stamp.phase, 0, 0),
      phi0: 0,
      node: sealer.id,
      kernelVersion: '1.287.6',
      executedBy,
    },
    solver: { id: 'zeta', kind: zeta.kind },
    inputs,
    out: plainJson(out),
    outputs,
    relError: 0,
    extra: {},
  });
  return sealWhole(receiptKey, bytesSigner(by.priv), plainJson({ ...body, tally_charge: null, envelope: null, audit: null }));
}

/** This mesh's verifier: the receipt key, and the nodes it has heard (the liar and the others, not the forger's claim). */
const verify = (known: string[]) => (body: unknown) =>
  verifySealedResult({ receiptKey, isKnownNode: (n) => known.includes(n), verifySignature: verifyText }, body);

beforeAll(async () => {
  const all = await Promise.all([0, 1, 2, 3, 4, 5].map(() => key()));
  liar = all[0]!;
  forger = all[1]!;
  others = all.slice(2);
  lie = liarSeals(liar, liar);
  const zeta = defaultRegistry().get('zeta')!;
  const honest = zeta.run(zeta.resolve(lie.inputs) as never);
  honestDigest = solverResultDigest('zeta', lie.inputs, honest, plainJson(honest.outputs));
});
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('carriedResult', () => {
  it("accepts the liar's signed result: the request to re-execute, its stamp, the liar's digest and bond; honest re-execution disagrees", () => {
    const known = [liar.id, ...others.map((k) => k.id)];
    const r = carriedResult(verify(known), lie.result_id, lie);
    expect(r).toEqual({
      result_id: lie.result_id,
      request: { kind: 'solver', solver: 'zeta', inputs: lie.inputs },
      stamp_svcond: lie.svcond,
      result_digest: lie.result_digest,
      executed_by: lie.executed_by,
      owner: null,
      published: true,
      sealed: lie,
    });
    expect(verifyExecution(verifyText, r.executed_by!, r.result_digest)).toBe(true);
    expect(honestDigest).not.toBe(lie.result_digest);
  });

  it('refuses a result re-signed by another mesh member, one by a node nobody knows, one tampered, or one that is another result', () => {
    const known = [liar.id, forger.id];
    const reasonOf = (body: unknown, id = lie.result_id, k = known) => {
      try {
        carriedResult(verify(k), id, body);
      } catch (err) {
        expect(err).toBeInstanceOf(InputError);
        expect((err as InputError).status).toBe(400);
        return (err as Error).message.replace(/^invalid input result: /, '');
      }
      return 'accepted';
    };
    // The forger holds the receipt secret: its re-signed body keeps a good proof, not the liar's signature.
    expect(reasonOf(liarSeals(forger, liar))).toBe('the carried result does not verify: seal_signature');
    expect(reasonOf(lie, lie.result_id, [forger.id])).toBe('the carried result does not verify: sealer_unknown');
    expect(reasonOf({ ...lie, value: lie.value * 2 })).toMatch(/^the carried result does not verify: proof, receipt, seal_signature, result_digest$/);
    expect(reasonOf(lie, 'res_1_00000000000000bb')).toBe(`the carried result is ${lie.result_id}, not res_1_00000000000000bb`);
  });
});

/** Every member of the committee commits to, then reveals, the true digest at the opener: its verdict document. */
async function decideHonestly(opener: ChallengeService, c: { challenge_id: string; committee: string[] }, now: number, salt: string): Promise<VerdictDocument> {
  for (const m of c.committee) {
    const k = others.find((o) => o.id === m)!;
    const commit = { challenge_id: c.challenge_id, voter: m, commitment: commitmentOf(honestDigest, salt), svcond: now };
    await opener.applyCommit({ commit, signature: signText(k.priv, commitSigningText(commit)) }, { sender: m });
  }
  for (const m of c.committee) {
    const k = others.find((o) => o.id === m)!;
    const vote = { challenge_id: c.challenge_id, voter: m, digest: honestDigest, svcond: now, salt };
    await opener.applyVote({ vote, signature: signText(k.priv, voteSigningText(vote)) }, { sender: m });
  }
  return opener.document(c.challenge_id)!;
}

/** A ChallengeService run by `me` over a fresh store, its clock at `now`, every key bonded (one operator each). */
async function service(
  me: Key,
  now: number,
  onHold: () => void = () => undefined,
  recorded: ChallengedResult | null = null,
  extra: Partial<ChallengeServiceOptions> = {},
): Promise<ChallengeService> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-carried-'));
  dirs.push(dir);
  const store = await Store.open(join(dir, 'db'), { sync: false });
  stores.push(store);
  const known = [liar.id, ...others.map((k) => k.id)];
  const s = new ChallengeService({
    store,
    policy,
    bonds: { ofNode: () => null, get: () => null, holderOf: () => liar.id } as unknown as BondService,
    nodeId: () => me.id,
    nowSvcond: () => now,
    sign: (t) => signText(me.priv, t),
    verify: verifyText,
    // A record's facts when given, else the carried result: as node/consensus.ts wires the lookup.
    lookup: async (id, carried): Promise<ChallengedResult | null> => recorded ?? (carried === undefined ? null : carriedResult(verify(known), id, carried)),
    verifyResult: verify(known),
    // The draw event: the first of the others but the home ticks right after the clock.
    tickEvents: () => [drawEvent(others[1]!, now + 1)],
    // Every key bonded, one operator each, and heard contributing at every tick of the live window.
    candidates: () =>
      [liar, ...others].map((k, i) => ({
        node: k.id,
        zid: `zid_${i}`,
        bondId: `bond_${i}`,
        bondSvcond: 0,
        heard: Array.from({ length: 40 }, (_, t) => ({ svcond: now - 39 + t, mode: 'contributing', bondId: `bond_${i}` })),
      })),
    verifyExecution: (r) => verifyExecution(verifyText, r.executed_by, r.result_digest),
    holdStake: async (zid, amount) => {
      onHold();
      return { hold: { zid, amount, from_free: amount, from_paid: 0 }, ops: [], rollback: () => undefined };
    },
    ...extra,
  });
  await s.load();
  return s;
}

describe('ChallengeService.open with a carried result', () => {
  it('opens a challenge against the liar for a result no ledger holds; without the result it is 404', async () => {
    const home = others[0]!;
    const now = lie.svcond + 20;
    const s = await service(home, now);
    await expect(s.open('zid_challenger', lie.result_id, honestDigest)).rejects.toMatchObject({ status: 404, code: 'SVC_NOT_FOUND' });
    const e = await s.open('zid_challenger', lie.result_id, honestDigest, lie);
    const c = e.challenge.challenge;
    expect(e.state).toBe('opened');
    expect(c).toMatchObject({
      result_id: lie.result_id,
      executed_by: lie.executed_by,
      executor_digest: lie.result_digest,
      claimed_digest: honestDigest,
      request: { kind: 'solver', solver: 'zeta', inputs: lie.inputs },
      stamp_svcond: lie.svcond,
    });
    // The signed challenge carries the result on, outside the opener's signature.
    expect(e.challenge.result).toEqual(lie);
    expect(verifyText(home.id, challengeSigningText(c), e.challenge.signature)).toBe(true);
    // The liar executed it, so it sits on no committee for its own result.
    expect(c.committee).not.toContain(liar.id);
    expect(c.committee).toHaveLength(3);
  });

  it('refuses a recorded result whose home gave no body to carry, before any stake is held', async () => {
    let held = 0;
    const { sealed: _b, ...facts } = carriedResult(verify([liar.id]), lie.result_id, lie);
    const s = await service(others[0]!, lie.svcond + 20, () => held++, facts);
    await expect(s.open('zid_challenger', lie.result_id, honestDigest)).rejects.toMatchObject({
      status: 400,
      code: 'SVC_INVALID_INPUT',
      message: expect.stringContaining(`the home of ${lie.result_id} gave none`),
    });
    expect(held).toBe(0);
  });
});

describe('a verdict document carries the challenged result', () => {
  const SALT = 'a5'.repeat(16);
  let doc: VerdictDocument;
  let now: number;

  beforeAll(async () => {
    // The honest committee re-executes, commits and reveals the true digest: the liar's result is upheld at the opener.
    now = lie.svcond + 20;
    const opener = await service(others[0]!, now);
    const e = await opener.open('zid_challenger', lie.result_id, honestDigest, lie);
    doc = await decideHonestly(opener, e.challenge.challenge, now, SALT);
    expect(doc.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: honestDigest });
    expect(doc.challenge.result).toEqual(lie);
  });

  /** The document with its challenge carrying `result` instead (undefined: none), and naming no result_sha256. */
  const carrying = (result: Record<string, any> | undefined): VerdictDocument => {
    const { result: _r, result_sha256: _d, ...challenge } = doc.challenge;
    return { ...doc, challenge: result === undefined ? challenge : { ...challenge, result } };
  };
  const swapped = (): [string, VerdictDocument, string][] => {
    const { seal_signature: _s, ...unsigned } = lie;
    const other = liarSeals(liar, liar, NS + 7_000_000_000n);
    return [
      ['another result of the liar', carrying(other), `the carried result is ${other.result_id}, not the challenge's ${lie.result_id}`],
      ['the body re-signed by another key', carrying(liarSeals(forger, liar)), 'the carried result does not verify: seal_signature'],
      [
        'a changed value under the old signature',
        carrying({ ...lie, value: lie.value / (1 + 1e-6) }),
        'the carried result does not verify: proof, receipt, seal_signature, result_digest',
      ],
      ['no seal_signature', carrying(unsigned), 'the carried result does not verify: proof, seal_signature'],
      ['no result at all', carrying(undefined), 'the challenge carries no sealed result'],
      // Resealed whole by the liar with another bond named: a valid sealed result, but not the challenged executed_by.
      [
        'the same result under another executed_by',
        carrying(
          sealWhole(receiptKey, bytesSigner(liar.priv), plainJson({ ...unsigned, executed_by: { ...lie.executed_by, bond_id: 'bond_' + '2'.repeat(24) } })),
        ),
        "the carried result's executed_by is not the challenge's: another executor, bond or signature",
      ],
    ];
  };

  it('a node that never heard the challenge refuses every swapped result, counts it, and keeps nothing', async () => {
    const receiver = await service(others[3]!, now);
    const id = doc.verdict.challenge_id;
    let refused = 0;
    for (const [what, bad, reason] of swapped()) {
      const err = await receiver.applyVerdict(bad).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(GossipError);
      expect(err, what).toMatchObject({ action: 'reject', status: 400, code: 'INVALID_VERDICT' });
      expect((err as Error).message, what).toContain(reason);
      expect(receiver.stats().refused_verdicts, what).toBe(++refused);
      expect(await receiver.find(id), what).toBeNull();
    }
    // The honest document, the same signed challenge, votes and verdict with the liar's own result: applied.
    await receiver.applyVerdict(doc);
    const applied = await receiver.find(id);
    expect(applied).toMatchObject({ state: 'upheld', verdict: { outcome: 'upheld', deciding_digest: honestDigest } });
    expect(applied!.challenge.result).toEqual(lie);
    expect(receiver.stats().refused_verdicts).toBe(refused);
  });

  it('a node that holds the challenge refuses a verdict whose result is swapped all the same', async () => {
    const receiver = await service(others[2]!, now);
    await receiver.applyOpened(doc.challenge, { sender: others[0]!.id });
    for (const [what, bad, reason] of swapped()) {
      await expect(receiver.applyVerdict(bad), what).rejects.toMatchObject({
        action: 'reject',
        code: 'INVALID_VERDICT',
        message: expect.stringContaining(reason),
      });
      expect((await receiver.find(doc.verdict.challenge_id))?.verdict, what).toBeNull();
    }
    expect(receiver.stats().refused_verdicts).toBe(swapped().length);
    // A challenge whose result is swapped is refused at intake too: the opened event carries the result.
    const fresh = await service(others[1]!, now);
    await expect(fresh.applyOpened(carrying(liarSeals(forger, liar)).challenge, { sender: others[0]!.id })).rejects.toMatchObject({
      code: 'INVALID_CHALLENGE',
      message: 'the carried result does not verify: seal_signature',
    });
    await receiver.applyVerdict(doc);
    expect(await receiver.find(doc.verdict.challenge_id)).toMatchObject({ state: 'upheld' });
  });

  it("pohc's check names the failed check, and passes the honest document and a run its home placed on the liar", () => {
    const known = [liar.id, ...others.map((k) => k.id)];
    expect(carriedResultFault(doc.challenge, verify(known))).toBeNull();
    for (const [what, bad, reason] of swapped()) expect(carriedResultFault(bad.challenge, verify(known)), what).toBe(reason);
    // A run the liar executed for a home that placed it there: the home seals it, the liar's executed_by inside.
    const placed = liarSeals(others[0]!, others[0]!, NS, liar);
    expect(placed).toMatchObject({ node: others[0]!.id, executed_by: lie.executed_by, result_digest: lie.result_digest });
    expect(carriedResultFault(carrying(placed).challenge, verify(known))).toBeNull();
    // Verified by a node that does not know the liar: its sealer is no node of this mesh.
    expect(carriedResultFault(doc.challenge, verify(others.map((k) => k.id)))).toBe('the carried result does not verify: sealer_unknown');
  });
});

describe('a result larger than a mesh event travels by its digest', () => {
  const SALT = 'b6'.repeat(16);
  /** A valid sealed result of the liar's (its digest covers no padding member) whose verdict no event body can hold. */
  let big: Record<string, any>;
  let doc: VerdictDocument;
  let now: number;

  beforeAll(async () => {
    const { seal_signature: _s, svcProof: _p, ...unsigned } = lie;
    big = sealWhole(receiptKey, bytesSigner(liar.priv), plainJson({ ...unsigned, pad: 'x'.repeat(MAX_BODY_BYTES) }));
    expect(verify([liar.id])(big).valid).toBe(true);
    now = lie.svcond + 20;
    const opener = await service(others[0]!, now);
    const e = await opener.open('zid_challenger', lie.result_id, honestDigest, big);
    expect(e.challenge).toMatchObject({ result: big, result_sha256: sealedDigestOf(big) });
    doc = await decideHonestly(opener, e.challenge.challenge, now, SALT);
    expect(doc.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: honestDigest });
    // The HTTP document carries the body in full.
    expect(doc.challenge.result).toEqual(big);
  });

  it('the mesh event leaves the body out and names it by result_sha256; a small one stays inline', () => {
    const onMesh = forMesh(doc);
    expect(onMesh.challenge.result).toBeUndefined();
    expect(onMesh.challenge.result_sha256).toBe(sealedDigestOf(big));
    expect(Buffer.byteLength(JSON.stringify(onMesh))).toBeLessThan(MAX_BODY_BYTES);
    expect(forMesh(doc.challenge)).toEqual({ ...onMesh.challenge });
    const small = forMesh({ challenge: doc.challenge.challenge, signature: doc.challenge.signature, result: lie });
    expect(small).toMatchObject({ result: lie, result_sha256: sealedDigestOf(lie) });
  });

  it('a receiver asks for the body, checks its digest and applies the verdict; a challenge it holds gives the body after', async () => {
    const asked: string[] = [];
    const receiver = await service(others[3]!, now, undefined, null, {
      sealedSources: () => [
        {
          from: 'the opener',
          get: async () => {
            asked.push('opener');
            return big;
          },
        },
      ],
    });
    await receiver.applyVerdict(forMesh(doc));
    const applied = await receiver.find(doc.verdict.challenge_id);
    expect(applied).toMatchObject({ state: 'upheld', challenge: { result: big, result_sha256: sealedDigestOf(big) } });
    expect(asked).toEqual(['opener']);
    // The same verdict again (as it is re-announced): the body is the one held, nothing asked.
    await receiver.applyVerdict(forMesh(doc));
    expect(asked).toEqual(['opener']);
    expect(receiver.stats()).toMatchObject({ refused_verdicts: 0, sealed_unavailable: 0 });
  });

  it('a body that is not the one the digest names, or none to be had, is asked for again a bounded number of times, then refused and counted', async () => {
    let asks = 0;
    const other = liarSeals(liar, liar, NS + 9_000_000_000n);
    const receiver = await service(others[2]!, now, undefined, null, {
      sealedAttempts: 3,
      sealedRetryMs: 5,
      // The home unreachable; the opener with no body at first, then another result.
      sealedSources: () => [
        {
          from: 'the home',
          get: async () => {
            throw new Error('unreachable');
          },
        },
        {
          from: 'the opener',
          get: async () => {
            asks++;
            return asks === 1 ? null : other;
          },
        },
      ],
    });
    const id = doc.verdict.challenge_id;
    const err = await receiver.applyVerdict(forMesh(doc)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GossipError);
    expect(err).toMatchObject({ action: 'reject', status: 400, code: 'INVALID_VERDICT' });
    expect((err as Error).message).toContain(`its sealed result (result_sha256 ${sealedDigestOf(big)}) could not be had in 3 rounds of asking`);
    expect(asks).toBe(3);
    expect(receiver.stats()).toMatchObject({ refused_verdicts: 1, refused_challenges: 1, sealed_unavailable: 1 });
    expect(await receiver.find(id)).toBeNull();
    // A body that came inline but is not the one its digest names is refused without asking.
    const lying = { ...forMesh(doc), challenge: { ...forMesh(doc).challenge, result: other } };
    await expect(receiver.applyVerdict(lying)).rejects.toMatchObject({
      code: 'INVALID_VERDICT',
      message: expect.stringContaining('the carried result is not the one its result_sha256 names'),
    });
    expect(asks).toBe(3);
    // The refusal names the last round's last reason: the opener's body is not the one named.
    expect((err as Error).message).toMatch(/: the sealed result the opener gave is not the one result_sha256 names$/);
  });
});
