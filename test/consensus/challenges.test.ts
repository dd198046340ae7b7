// Challenges without a network (architecture.md §6): intake's refusals; and the gossip rows' abuse cases — forged, misdirected and replayed votes,
// votes from non-members, equivocation, a forged challenge or verdict — on a ChallengeService over a real store,
// with real Ed25519 node keys. Every node folds the same votes to the same verdict.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Store, type Op } from '../../src/store/db.js';
import { ChallengeService, type ChallengeServiceOptions, type ChallengedResult } from '../../src/consensus/challenges.js';
import type { ChallengeState } from '../../src/consensus/challenge-lifecycle.js';
import { createHash } from 'node:crypto';
import { privateKeyFromRaw } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import {
  challengeIdOf,
  challengeSigningText,
  challengeFault,
  commitDeadlineOf,
  drawEventOf,
  drawSeedOf,
  commitmentOf,
  commitSigningText,
  type SignedCommit,
  verifyVerdictDocument,
  voteSigningText,
  type ChallengeRecord,
  type SignedChallenge,
  type SignedVote,
  type VerdictDocument,
} from '../../src/consensus/challenge-wire.js';
import type { BondService } from '../../src/consensus/bonds.js';
import { GossipError } from '../../src/mesh/gossip-error.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { foldVotes } from '../../src/consensus/verdict.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { signExecution } from '../../src/consensus/executed-by.js';
import type { ExecutedBy } from '../../src/records/types.js';
import { committeeOf } from '../../src/consensus/committee.js';
import { TEST_POLICY, drawEvent, drawProofOf, drawnCommittee, key, type Key } from './helpers.js';
import { drawOutput } from '../../src/mesh/draw-proof.js';

const REQUEST_DIGEST = 'd'.repeat(64);
/** executed_by as the executor (keys[0]) signs it for `digest`. */
function executedBy(bondId: string, digest = EXEC): ExecutedBy {
  return signExecution((t) => signText(keys[0]!.priv, t), { node: keys[0]!.id, bond_id: bondId, svcond: 900, request_digest: REQUEST_DIGEST }, digest);
}

const CLAIM = 'c'.repeat(64);
const EXEC = 'e'.repeat(64);
const OTHER = '0'.repeat(64);
const policy = TEST_POLICY;
/** docs/protocol.md §15's worked example of the draw: its seed, and its committee of 2 over peer_a … peer_d. */
const DOC_EXAMPLE = {
  seed32: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  sender: '12D3KooWQK1wnefoLrcVHbbnf5tLzbopUd3K3bFAoJpA7YJgL5pV',
  proof:
    'ca099a1e7fb047b8c6a4f60a5da32bf13bbe3368524688062398eb754debd2a6733b246be06a5e50cc14c702b2e58b510156f5a13a81c083645f924a462e1685bb2244e24c718fb1855c3a7b8f2b0500',
  output: '1d83a288a4c666dccc1b3ab76f7b743e7075b80fdb7f54f606b83bc662829eb18776303b26fd65f545fe4d6de6fac5d6f8c1a54150d6ba2cd00045fc76c4ff4f',
  seed: '58a25ddf81c680fa44dbe1460d043001b6f7a05274228f8ada00e387fe52f887',
  committee: ['peer_c', 'peer_a'],
};

let keys: Key[] = [];
const dirs: string[] = [];
const stores: Store[] = [];
let now = 1_000;

beforeAll(async () => {
  keys = await Promise.all([0, 1, 2, 3, 4, 5].map(() => key()));
});
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A ChallengeService as node `me` runs it; bonds: every key but the executor settled long ago and contributing. */
async function service(
  me: Key,
  lookup: (id: string) => Promise<ChallengedResult | null> = async () => null,
  publish?: (type: string, body: unknown) => Promise<void>,
  extra: Partial<ChallengeServiceOptions> = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'svc-chall-'));
  dirs.push(dir);
  const store = await Store.open(join(dir, 'db'), { sync: false });
  stores.push(store);
  // The registry holds every bond the tests name under the executor, keys[0].
  const bonds = { ofNode: () => null, get: () => null, holderOf: () => keys[0]!.id } as unknown as BondService;
  const held: string[] = [];
  const s = new ChallengeService({
    store,
    policy,
    bonds,
    nodeId: () => me.id,
    nowSvcond: () => now,
    sign: (t) => signText(me.priv, t),
    verify: verifyText,
    lookup,
    // The draw event: the first key but the executor and the home ticks right after the clock.
    tickEvents: () => [drawEvent(keys[2]!, now + 1)],
    // Every key heard contributing at every tick since 900 (the tests' clock starts at 1000).
    candidates: () =>
      keys.map((k, i) => ({
        node: k.id,
        zid: `zid_${i}`,
        bondId: `bond_${i}`,
        bondSvcond: 0,
        heard: Array.from({ length: now - 899 }, (_, t) => ({ svcond: 900 + t, mode: 'contributing', bondId: `bond_${i}` })),
      })),
    holdStake: async (zid, amount) => {
      if (zid === 'zid_poor') throw new ServiceError(402, 'INSUFFICIENT_BALANCE', 'poor');
      return { hold: { zid, amount, from_free: amount, from_paid: 0 }, ops: [], rollback: () => held.pop() };
    },
    ...(publish ? { publish } : {}),
    ...extra,
  });
  await s.load();
  return committing(s);
}

/** keys[0] executes, keys[1] is the challenger's home; eligible are keys[2..5]. */
function signedChallenge(resultId = 'res_1_a', claim = CLAIM, opener = keys[1]!): SignedChallenge {
  const id = challengeIdOf(resultId, 'zid_challenger');
  const eligible = keys
    .slice(2)
    .map((k) => k.id)
    .sort();
  const c: ChallengeRecord = {
    challenge_id: id,
    result_id: resultId,
    challenger: 'zid_challenger',
    challenger_home: opener.id,
    claimed_digest: claim,
    executor_digest: EXEC,
    executed_by: executedBy('bond_' + 'a'.repeat(24)),
    request: { kind: 'solver', solver: 'zeta', inputs: {} },
    stamp_svcond: now - 5,
    svcond: now,
    deadline_svcond: now + 1 + policy.deadlineTicks, // the draw event's tick + deadlineTicks
    committee_size: 3,
    quorum: 2,
    eligible,
    committee: drawnCommittee(resultId, drawEvent(keys[2]!, now + 1), eligible, 3),
    draw: drawEvent(keys[2]!, now + 1),
  };
  return { challenge: c, signature: signText(opener.priv, challengeSigningText(c)) };
}

/** The salt a key uses for a digest here (fixed, so a vote made twice is the same vote). */
const saltOf = (by: Key, digest: string) => createHash('sha256').update(`${by.id}|${digest}`).digest('hex').slice(0, 32);

/** A member's revealed vote: digest and salt, signed. Its commit is commitOf(by, vote). */
function vote(by: Key, challengeId: string, digest: string, svcond = now): SignedVote {
  const v = { challenge_id: challengeId, voter: by.id, digest, svcond, salt: saltOf(by, digest) };
  return { vote: v, signature: signText(by.priv, voteSigningText(v)) };
}

/** The commit a vote opens, signed by its voter at `svcond` (by default the vote's tick). */
function commitOf(by: Key, sv: SignedVote, svcond = sv.vote.svcond): SignedCommit {
  const c = { challenge_id: sv.vote.challenge_id, voter: by.id, commitment: commitmentOf(sv.vote.digest, sv.vote.salt!), svcond };
  return { commit: c, signature: signText(by.priv, commitSigningText(c)) };
}

/**
 * The service as the gossip rows drive it, with every member committing before it reveals: a vote applied (or cast)
 * is preceded by its voter's commit, and a challenge learned takes the commits of votes held before it.
 */
function committing(s: ChallengeService): ChallengeService {
  const made: { by: Key; sv: SignedVote }[] = [];
  const commit = async (by: Key | undefined, sv: SignedVote) => {
    if (!by) return;
    made.push({ by, sv });
    if (await s.find(sv.vote.challenge_id)) await s.applyCommit(commitOf(by, sv), { sender: by.id }).catch(() => undefined);
  };
  const applyVote = s.applyVote.bind(s);
  const castVote = s.castVote.bind(s);
  const applyOpened = s.applyOpened.bind(s);
  // A vote carrying another's salt (a copy) is applied as it is: its voter committed nothing.
  const own = (sv: SignedVote) => keys.find((k) => k.id === sv.vote.voter && sv.vote.salt === saltOf(k, sv.vote.digest));
  s.applyVote = async (sv, ev) => {
    await commit(sv.vote.voter === ev.sender ? own(sv) : undefined, sv);
    return applyVote(sv, ev);
  };
  s.castVote = async (sv) => {
    await commit(own(sv), sv);
    return castVote(sv);
  };
  s.applyOpened = async (sc, ev) => {
    await applyOpened(sc, ev);
    for (const m of made)
      if (m.sv.vote.challenge_id === sc.challenge.challenge_id) await s.applyCommit(commitOf(m.by, m.sv), { sender: m.by.id }).catch(() => undefined);
  };
  return s;
}

const member = (sc: SignedChallenge, i: number) => keys.find((k) => k.id === sc.challenge.committee[i])!;
const outsider = (sc: SignedChallenge) => keys.find((k) => !sc.challenge.committee.includes(k.id))!;

async function refusal(p: Promise<unknown>): Promise<GossipError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GossipError);
    return err as GossipError;
  }
  throw new Error('expected a GossipError');
}

describe('intake at the challenger home', () => {
  const found = (over: Partial<ChallengedResult> = {}): ChallengedResult => ({
    result_id: 'res_9_b',
    request: { kind: 'solver', solver: 'zeta', inputs: {} },
    stamp_svcond: now - 3,
    result_digest: EXEC,
    executed_by: executedBy('bond_' + 'b'.repeat(24)),
    owner: 'zid_owner',
    published: true,
    ...over,
  });
  const code = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return [(err as ServiceError).status, (err as ServiceError).code];
    }
    return null;
  };

  it('refuses unknown and unpublished results, results with no bond, a claim equal to the executor, a poor challenger', async () => {
    const s = await service(keys[1]!, async (id) =>
      id === 'res_unknown' ? null : id === 'res_unpub' ? found({ published: false }) : id === 'res_free' ? found({ executed_by: null }) : found(),
    );
    expect(await code(s.open('zid_a', 'res_unknown', CLAIM))).toEqual([404, 'SVC_NOT_FOUND']);
    expect(await code(s.open('zid_a', 'res_unpub', CLAIM))).toEqual([403, 'SVC_RESULT_UNPUBLISHED']);
    expect(await code(s.open('zid_a', 'res_free', CLAIM))).toEqual([409, 'SVC_NOT_AT_STAKE']);
    expect(await code(s.open('zid_a', 'res_9_b', EXEC))).toEqual([400, 'SVC_INVALID_INPUT']);
    expect(await code(s.open('zid_poor', 'res_9_b', CLAIM))).toEqual([402, 'INSUFFICIENT_BALANCE']);
    expect(s.all()).toEqual([]);
  });

  it('opens one challenge per result and identity, with a committee that excludes the executor and the home', async () => {
    const s = await service(keys[1]!, async () => found());
    const e = await s.open('zid_a', 'res_9_b', CLAIM);
    const c = e.challenge.challenge;
    expect(c.challenge_id).toBe(challengeIdOf('res_9_b', 'zid_a'));
    expect(c.committee).toHaveLength(3);
    expect(c.committee).not.toContain(keys[0]!.id);
    expect(c.committee).not.toContain(keys[1]!.id);
    expect(e.stake).toEqual({ zid: 'zid_a', amount: 20, from_free: 20, from_paid: 0 });
    expect(verifyText(keys[1]!.id, challengeSigningText(c), e.challenge.signature)).toBe(true);
    expect(await code(s.open('zid_a', 'res_9_b', OTHER))).toEqual([409, 'SVC_CONFLICT']);
    // Another identity may challenge the same result.
    expect((await s.open('zid_b', 'res_9_b', CLAIM)).state).toBe('opened');
    expect(s.openAgainst('bond_' + 'b'.repeat(24))).toHaveLength(2);
  });

  it('no committee can be formed: 409 SVC_NO_COMMITTEE, nothing held', async () => {
    const s = await service(keys[1]!, async () => found());
    (s as unknown as { o: { candidates: () => unknown[] } }).o.candidates = () => [];
    expect(await code(s.open('zid_a', 'res_9_b', CLAIM))).toEqual([409, 'SVC_NO_COMMITTEE']);
  });
});

describe("a challenge is checked against this node's own state", () => {
  /** A challenge of res_s by `opener` listing `eligible`, with the committee of `size` the ranking draws from them. */
  /** Keys made in a test, besides the mesh's. */
  const fresh: Key[] = [];
  /** The draw event of a listed node (a key of the mesh, else a fresh one's). */
  const drawOf = (node: string) =>
    drawEvent(
      [...keys, ...fresh].find((k) => k.id === node)!,
      now + 1,
    );
  function listing(eligible: string[], size = 3, resultId = 'res_s', opener = keys[1]!): SignedChallenge {
    const base = signedChallenge(resultId, CLAIM, opener).challenge;
    const sorted = [...eligible].sort();
    const c: ChallengeRecord = {
      ...base,
      committee_size: size,
      quorum: Math.floor(size / 2) + 1,
      eligible: sorted,
      committee: drawnCommittee(resultId, drawOf(sorted[0]!), sorted, size),
      draw: drawOf(sorted[0]!),
    };
    return { challenge: c, signature: signText(opener.priv, challengeSigningText(c)) };
  }
  const ids = (from: number, to: number) => keys.slice(from, to).map((k) => k.id);

  it('fresh keys listed as a committee of 3 or of 1, a committee smaller than the policy, a live node left out: refused and counted', async () => {
    const s = await service(keys[4]!);
    fresh.push(...(await Promise.all([key(), key(), key()])));
    const forged3 = listing(fresh.map((k) => k.id));
    expect((await refusal(s.applyOpened(forged3, { sender: keys[1]!.id }))).message).toContain('holds no bond known here');
    const forged1 = listing([fresh[0]!.id], 1, 'res_s1');
    expect((await refusal(s.applyOpened(forged1, { sender: keys[1]!.id }))).message).toContain("the policy's is 3");
    // Policy size, but only two listed: a committee of 2.
    const small = listing(ids(2, 4), 3, 'res_s2');
    expect(small.challenge.committee).toHaveLength(2);
    expect((await refusal(s.applyOpened(small, { sender: keys[1]!.id }))).message).toContain('smaller than');
    // Three of the four live nodes: the fourth, heard contributing all along, is left out.
    const partial = listing(ids(2, 5), 3, 'res_s3');
    expect((await refusal(s.applyOpened(partial, { sender: keys[1]!.id }))).message).toContain(`${keys[5]!.id} were heard contributing`);
    expect(s.all()).toEqual([]);
    expect(s.stats()).toMatchObject({ refused_challenges: 4 });
    // The same checks hold a verdict resting on such a challenge: refused, counted, nothing recorded.
    const f0 = fresh[0]!;
    const sv = vote(f0, forged1.challenge.challenge_id, CLAIM);
    const doc: VerdictDocument = {
      challenge: forged1,
      commits: [commitOf(f0, sv)],
      votes: [sv],
      verdict: { challenge_id: sv.vote.challenge_id, outcome: 'upheld', deciding_digest: CLAIM },
    };
    expect(verifyVerdictDocument(doc, verifyText).valid).toBe(true); // the document alone is consistent
    const refused = await refusal(s.applyVerdict(doc));
    expect([refused.action, refused.code]).toEqual(['reject', 'INVALID_VERDICT']);
    expect(s.all()).toEqual([]);
    expect(s.stats()).toMatchObject({ refused_verdicts: 1 });
  });

  it('a listed node not heard contributing around the challenge is refused; without a record of those ticks it is not kept, unpenalised', async () => {
    const heardUntil = { tick: now - 40 };
    const quiet = keys[5]!.id;
    const opts: Partial<ChallengeServiceOptions> = {};
    const s = await service(keys[4]!, undefined, undefined, opts);
    const inner = s as unknown as { o: ChallengeServiceOptions };
    const all = inner.o.candidates;
    // keys[5] was last heard 40 ticks before the challenge (the live window is 32).
    inner.o.candidates = () => all().map((c) => (c.node === quiet ? { ...c, heard: c.heard.filter((h) => h.svcond <= heardUntil.tick) } : c));
    const sc = listing(ids(2, 6), 3, 'res_q');
    expect((await refusal(s.applyOpened(sc, { sender: keys[1]!.id }))).message).toContain(`${quiet} is listed eligible, but was not heard contributing`);
    // The same listing, at a node whose record starts after the challenge's window: nothing found wrong, nothing
    // confirmed either — not kept (ignored, the opener not penalised) and counted.
    inner.o.livenessCovers = () => false;
    const unchecked = await refusal(s.applyOpened(sc, { sender: keys[1]!.id }));
    expect([unchecked.action, unchecked.message]).toEqual(['ignore', expect.stringContaining("not checkable against this node's records")]);
    expect(s.get(sc.challenge.challenge_id)).toBeNull();
    expect(s.stats()).toMatchObject({ unverifiable_challenges: 1 });
  });
});

describe('the draw: a seed signed after the challenge by a node of the eligible set', () => {
  const ids = (from: number, to: number) => keys.slice(from, to).map((k) => k.id);
  it('grinding challenge ids picks nothing: one draw event gives one committee for every challenger; the committee is what the draw event after T gives', async () => {
    const eligible = ids(2, 6).sort();
    const draw = drawEvent(keys[3]!, now + 1);
    // 200 challenger identities, 200 challenge ids: the same seats (the seed is SHA-256(result_id|draw signature)).
    const seats = new Set(
      Array.from({ length: 200 }, (_, i) => {
        const c = { ...signedChallenge('res_grind').challenge, challenger: `zid_${i}`, challenge_id: challengeIdOf('res_grind', `zid_${i}`), draw };
        return drawnCommittee(c.result_id, c.draw, eligible, 3).join(',');
      }),
    );
    expect(seats.size).toBe(1);
    // What does pick the seats is the draw event, which no challenger can sign (it is a node of the set's, after T):
    // over the tick events the eligible nodes sign in the 12 ticks after T, the committee takes several values and
    // every eligible node sits on one — so before T no id and no identity tells the challenger its committee.
    const drawn = eligible.flatMap((node) =>
      Array.from({ length: 12 }, (_, t) =>
        drawnCommittee(
          'res_grind',
          drawEvent(
            keys.find((k) => k.id === node)!,
            now + 1 + t,
          ),
          eligible,
          3,
        ),
      ),
    );
    expect(new Set(drawn.map((c) => c.join(','))).size).toBeGreaterThanOrEqual(3);
    expect(new Set(drawn.flat())).toEqual(new Set(eligible));
    // The worked example of docs/protocol.md §15: the key of RFC 8032's first test vector, its draw proof over tick 1,
    // the VRF output, the seed and the committee recomputed from its numbers.
    const docKey = privateKeyFromRaw(Buffer.from(DOC_EXAMPLE.seed32 + DOC_EXAMPLE.publicKey, 'hex')) as unknown as Key['priv'];
    const sender = peerIdFromPrivateKey(docKey as never).toString();
    expect(sender).toBe(DOC_EXAMPLE.sender);
    expect(drawProofOf({ priv: docKey, id: sender }, 1)).toBe(DOC_EXAMPLE.proof);
    expect(drawOutput(sender, 1, DOC_EXAMPLE.proof)).toBe(DOC_EXAMPLE.output);
    const example = {
      result_id: 'res_example',
      draw: { type: 'tick' as const, sender, svcond: 1, body: { bondId: 'bond_example', drawProof: DOC_EXAMPLE.proof }, signature: 'c2lnbmF0dXJl' },
    };
    expect(drawSeedOf(example)).toBe(createHash('sha256').update(`res_example|${DOC_EXAMPLE.output}`).digest('hex'));
    expect(drawSeedOf(example)).toBe(DOC_EXAMPLE.seed);
    expect(committeeOf(drawSeedOf(example), ['peer_a', 'peer_b', 'peer_c', 'peer_d'], 2)).toEqual(DOC_EXAMPLE.committee);
  });

  it("the draw's signer cannot try bodies: every body it signs at one tick gives one committee; a proof of another tick or none is refused", async () => {
    const eligible = ids(2, 6).sort();
    const signer = keys[3]!;
    // 40 bodies at one tick (its free slots, its heads digest, a member a newer node might add): 40 signatures, and
    // under the signature's hash as the seed they gave several committees; under the VRF output, one.
    const bodies = Array.from({ length: 40 }, (_, i) => drawEvent(signer, now + 1, { freeSlots: i, chainHeadsDigest: `h${i}` }));
    expect(new Set(bodies.map((d) => d.signature)).size).toBe(40);
    const bySignature = new Set(bodies.map((d) => committeeOf(createHash('sha256').update(`res_grind|${d.signature}`).digest('hex'), eligible, 3).join()));
    expect(bySignature.size).toBeGreaterThan(1);
    expect(new Set(bodies.map((d) => drawnCommittee('res_grind', d, eligible, 3).join())).size).toBe(1);
    // The proof is over the event's own tick, by its own sender, and must be there when the event advertises a bond.
    const opener = keys[1]!;
    const s = await service(keys[4]!);
    const base = signedChallenge('res_draw_proof');
    const withDraw = (draw: ChallengeRecord['draw']): SignedChallenge => {
      const c = { ...base.challenge, draw, deadline_svcond: draw.svcond + policy.deadlineTicks };
      return { challenge: c, signature: signText(opener.priv, challengeSigningText(c)) };
    };
    const drawer = keys.find((k) => k.id === base.challenge.draw.sender)!;
    const otherTick = drawEvent(drawer, now + 1, { drawProof: drawProofOf(drawer, now + 2) });
    const otherKey = drawEvent(drawer, now + 1, { drawProof: drawProofOf(keys[5]!, now + 1) });
    const none = drawEvent(drawer, now + 1, { drawProof: undefined });
    const noBond = drawEvent(drawer, now + 1, { bondId: null });
    for (const draw of [otherTick, otherKey, none, noBond]) {
      expect(challengeFault(withDraw(draw), verifyText)).toContain('no valid drawProof');
      expect((await refusal(s.applyOpened(withDraw(draw), { sender: opener.id }))).message).toContain('no valid drawProof');
      // None of them is a draw event the intake would take either.
      expect(drawEventOf([draw], eligible, now)).toBeNull();
    }
    expect(drawEventOf([base.challenge.draw], base.challenge.eligible, now)).toEqual(base.challenge.draw);
    expect(s.all()).toEqual([]);
  });

  it('a challenge whose draw event is substituted is refused by every check: another node later, a key outside the set, a tampered event, a committee not from it', async () => {
    const s = await service(keys[4]!);
    const base = signedChallenge('res_draw');
    const resign = (c: ChallengeRecord): SignedChallenge => ({ challenge: c, signature: signText(keys[1]!.priv, challengeSigningText(c)) });
    const withDraw = (draw: ChallengeRecord['draw']) =>
      resign({
        ...base.challenge,
        draw,
        deadline_svcond: draw.svcond + policy.deadlineTicks,
        committee: drawnCommittee('res_draw', draw, base.challenge.eligible, 3),
      });
    // A later tick event of another node: the others heard keys[2]..keys[5] tick right after T, so it is not the first.
    const inner = s as unknown as { o: ChallengeServiceOptions };
    const all = inner.o.candidates;
    inner.o.candidates = () => all().map((c) => ({ ...c, heard: [...c.heard, { svcond: now + 1, mode: 'contributing', bondId: c.bondId }] }));
    const clock = inner.o.nowSvcond;
    inner.o.nowSvcond = () => now + 6;
    const later = withDraw(drawEvent(keys[5]!, now + 6));
    expect((await refusal(s.applyOpened(later, { sender: keys[1]!.id }))).message).toContain('the draw takes the first tick event after');
    inner.o.candidates = all;
    inner.o.nowSvcond = clock;
    // The opener's own key, or the executor's: not a node of the eligible set.
    expect((await refusal(s.applyOpened(withDraw(drawEvent(keys[1]!, now + 1)), { sender: keys[1]!.id }))).message).toContain(
      'not from a node of the eligible set',
    );
    expect((await refusal(s.applyOpened(withDraw(drawEvent(keys[0]!, now + 1)), { sender: keys[1]!.id }))).message).toContain(
      'not from a node of the eligible set',
    );
    // Signed for a tick ahead of the clock (made in advance, so that it is the first after T whenever T is): whoever
    // signed it chose its committee.
    expect((await refusal(s.applyOpened(withDraw(drawEvent(keys[2]!, now + 20)), { sender: keys[1]!.id }))).message).toContain(
      "more than 4 ticks ahead of this node's clock",
    );
    // Signed before T, or its body changed after signing.
    expect((await refusal(s.applyOpened(withDraw(drawEvent(keys[2]!, now)), { sender: keys[1]!.id }))).message).toContain('not signed after');
    const signedDraw = drawEvent(keys[2]!, now + 1);
    const tampered = { ...signedDraw, body: { ...(signedDraw.body as object), every: 8 } };
    expect((await refusal(s.applyOpened(withDraw(tampered), { sender: keys[1]!.id }))).message).toContain('not signed by its sender');
    // The right draw event with another draw's committee.
    const moved = resign({ ...base.challenge, committee: drawnCommittee('res_draw', drawEvent(keys[3]!, now + 2), base.challenge.eligible, 3) });
    if (moved.challenge.committee.join() !== base.challenge.committee.join())
      expect((await refusal(s.applyOpened(moved, { sender: keys[1]!.id }))).message).toContain('seed');
    expect(s.all()).toEqual([]);
    // pohc's document check refuses the same substitutions: a verdict resting on a draw of the opener's own.
    const doc: VerdictDocument = {
      challenge: withDraw(drawEvent(keys[1]!, now + 1)),
      commits: [],
      votes: [],
      verdict: { challenge_id: base.challenge.challenge_id, outcome: 'no_quorum', deciding_digest: null },
    };
    expect(verifyVerdictDocument(doc, verifyText).reasons.join()).toContain('draw event');
    // The record as the opener drew it is taken.
    await s.applyOpened(base, { sender: keys[1]!.id });
    expect(s.get(base.challenge.challenge_id)!.state).toBe('opened');
  });
});

describe('the gossip rows', () => {
  it('a challenge must come from its opener, signed, with the committee its eligible set gives', async () => {
    const s = await service(keys[4]!);
    const sc = signedChallenge();
    expect((await refusal(s.applyOpened(sc, { sender: keys[2]!.id }))).code).toBe('INVALID_CHALLENGE');
    const forged = { ...sc, signature: signText(keys[2]!.priv, challengeSigningText(sc.challenge)) };
    expect((await refusal(s.applyOpened(forged, { sender: keys[1]!.id }))).message).toContain("not signed by the challenger's home");
    const reordered = { ...sc.challenge, committee: [...sc.challenge.committee].reverse() };
    const packed = { challenge: reordered, signature: signText(keys[1]!.priv, challengeSigningText(reordered)) };
    expect((await refusal(s.applyOpened(packed, { sender: keys[1]!.id }))).message).toContain('committee');
    // An opener that names another executor digest than the one the executor signed: rejected by everyone.
    const moved = { ...sc.challenge, executor_digest: OTHER };
    const lying = { challenge: moved, signature: signText(keys[1]!.priv, challengeSigningText(moved)) };
    expect((await refusal(s.applyOpened(lying, { sender: keys[1]!.id }))).message).toContain('executed_by');
    expect(s.all()).toEqual([]);
    await s.applyOpened(sc, { sender: keys[1]!.id });
    await s.applyOpened(sc, { sender: keys[1]!.id }); // idempotent
    expect(s.all()).toHaveLength(1);
    expect(s.get(sc.challenge.challenge_id)!.state).toBe('opened');
  });

  it('a copied vote without a matching commit does not count; a commit after the window is not taken', async () => {
    const s = await service(keys[4]!);
    const sc = signedChallenge('res_copy');
    const id = sc.challenge.challenge_id;
    await s.applyOpened(sc, { sender: keys[1]!.id });
    const [m0, m1, m2] = [member(sc, 0), member(sc, 1), member(sc, 2)];
    await s.applyVote(vote(m0, id, CLAIM), { sender: m0.id }); // committed, then revealed
    // m1 committed nothing and copies m0's reveal (digest and salt), signed as its own vote.
    const seen = vote(m0, id, CLAIM).vote;
    const copy = { ...seen, voter: m1.id };
    await s.applyVote({ vote: copy, signature: signText(m1.priv, voteSigningText(copy)) }, { sender: m1.id });
    expect(s.get(id)!.votes).toHaveLength(2);
    expect(s.get(id)!.state).toBe('voting'); // one counted vote: no quorum of 2 yet
    // Its commit, made once the reveals are out (past the commit window here), is not taken either.
    const start = now;
    try {
      now = commitDeadlineOf(sc.challenge) + 3;
      const late = await refusal(s.applyCommit(commitOf(m1, { vote: copy, signature: '' }, start), { sender: m1.id }));
      expect([late.action, late.message]).toEqual(['ignore', `the commit window of ${id} has closed here`]);
      expect(s.stats()).toMatchObject({ late_commits: 1 });
      expect(s.get(id)!.state).toBe('voting');
    } finally {
      now = start;
    }
    await s.applyVote(vote(m2, id, CLAIM), { sender: m2.id });
    expect(s.get(id)!.verdict).toMatchObject({ outcome: 'upheld', tally: { [CLAIM]: 2 }, uncommitted_votes: 1 });
    const doc = s.document(id)!;
    expect(doc.commits!.map((k) => k.commit.voter).sort()).toEqual([m0.id, m2.id].sort());
    expect(verifyVerdictDocument(doc, verifyText)).toMatchObject({ valid: true, fold: { uncommittedVotes: 1 } });
    // Without the commits, no vote counts: the document does not hold.
    expect(verifyVerdictDocument({ ...doc, commits: [] }, verifyText).valid).toBe(false);
  });

  it('forged, misdirected and replayed votes are rejected; non-member votes ignored and counted; equivocation recorded', async () => {
    const s = await service(keys[4]!);
    const sc = signedChallenge('res_2_x');
    const id = sc.challenge.challenge_id;
    await s.applyOpened(sc, { sender: keys[1]!.id });
    const m0 = member(sc, 0);
    const m1 = member(sc, 1);
    const m2 = member(sc, 2);
    // Forged: signed by another key than the voter's.
    const forged = { ...vote(m0, id, EXEC), signature: signText(m1.priv, voteSigningText({ challenge_id: id, voter: m0.id, digest: EXEC, svcond: now })) };
    expect((await refusal(s.applyVote(forged, { sender: m0.id }))).code).toBe('INVALID_VOTE');
    // Gossiped by someone else than the voter.
    expect((await refusal(s.applyVote(vote(m0, id, EXEC), { sender: m1.id }))).code).toBe('INVALID_VOTE');
    // Replayed from another challenge: its signature names that challenge; rewritten, the signature fails.
    const other = signedChallenge('res_3_y');
    await s.applyOpened(other, { sender: keys[1]!.id });
    const elsewhere = vote(m0, other.challenge.challenge_id, EXEC);
    const replayed = { vote: { ...elsewhere.vote, challenge_id: id }, signature: elsewhere.signature };
    expect((await refusal(s.applyVote(replayed, { sender: m0.id }))).code).toBe('INVALID_VOTE');
    // A vote for a challenge nobody opened: ignored.
    const stray = vote(m0, challengeIdOf('res_none', 'z'), EXEC);
    expect((await refusal(s.applyVote(stray, { sender: m0.id }))).action).toBe('ignore');
    // A non-member: ignored and counted.
    const out = outsider(sc);
    const nm = await refusal(s.applyVote(vote(out, id, CLAIM), { sender: out.id }));
    expect([nm.action, nm.code]).toEqual(['ignore', 'SVC_NOT_A_MEMBER']);
    let e = s.get(id)!;
    expect(e).toMatchObject({ state: 'opened', votes: [], non_member_votes: 1, refused_votes: 2 });
    // Equivocation: m0 votes twice, differently: both kept as evidence; neither counts.
    await s.applyVote(vote(m0, id, EXEC), { sender: m0.id });
    await s.applyVote(vote(m0, id, EXEC), { sender: m0.id }); // the same vote again: once
    await s.applyVote(vote(m0, id, CLAIM), { sender: m0.id });
    e = s.get(id)!;
    expect(e.votes).toHaveLength(2);
    expect(e.state).toBe('voting');
    await s.applyVote(vote(m1, id, EXEC), { sender: m1.id });
    expect(s.get(id)!.state).toBe('voting'); // m0's EXEC vote does not count: one counted vote for EXEC
    await s.applyVote(vote(m2, id, EXEC), { sender: m2.id });
    e = s.get(id)!;
    expect(e.state).toBe('rejected');
    expect(e.verdict).toMatchObject({ outcome: 'rejected', deciding_digest: EXEC, equivocators: [m0.id], non_member_votes: 1, tally: { [EXEC]: 2 } });
    // A vote after the verdict (here m1 equivocating late) is kept as evidence and changes nothing; the verdict's
    // document carries the votes it rests on, and still checks.
    await s.applyVote(vote(m1, id, CLAIM), { sender: m1.id });
    expect(s.get(id)!.verdict!.outcome).toBe('rejected');
    expect(s.get(id)!.votes).toHaveLength(5);
    const doc = s.document(id)!;
    expect(doc.votes).toHaveLength(4);
    expect(verifyVerdictDocument(doc, verifyText)).toMatchObject({ valid: true, reasons: [] });
    expect(s.stats()).toMatchObject({ refused_votes: 3, non_member_votes: 1, unknown_challenge_votes: 1 });
    // A member signing ever new digests adds nothing past two in a round (they show its equivocation already): the
    // entry and the verdict document stay bounded, so the document still spreads.
    for (let i = 0; i < 40; i++) {
      const digest = createHash('sha256').update(`spam ${i}`).digest('hex');
      await s.applyVote(vote(m0, id, digest), { sender: m0.id });
      await s.applyVote(vote(m2, id, digest), { sender: m2.id });
    }
    expect(s.get(id)!.votes).toHaveLength(6);
    expect(s.get(id)!.votes.filter((v) => v.vote.voter === m2.id)).toHaveLength(2);
    expect(s.get(id)!.verdict!.outcome).toBe('rejected');
    expect(verifyVerdictDocument(s.document(id)!, verifyText)).toMatchObject({ valid: true, reasons: [] });
  });

  it('a node that heard no vote takes the verdict event; a verdict whose votes do not fold to it is rejected', async () => {
    const decider = await service(keys[2]!);
    const late = await service(keys[3]!);
    const sc = signedChallenge('res_4_z');
    const id = sc.challenge.challenge_id;
    await decider.applyOpened(sc, { sender: keys[1]!.id });
    await decider.applyVote(vote(member(sc, 0), id, CLAIM), { sender: member(sc, 0).id });
    await decider.applyVote(vote(member(sc, 1), id, CLAIM), { sender: member(sc, 1).id });
    const doc = decider.document(id)!;
    expect(doc.verdict.outcome).toBe('upheld');
    // Tampered: claims rejected on the same votes.
    const lie: VerdictDocument = { ...doc, verdict: { ...doc.verdict, outcome: 'rejected', deciding_digest: EXEC } };
    expect((await refusal(late.applyVerdict(lie))).code).toBe('INVALID_VERDICT');
    // A vote whose signature was altered.
    const badSig: VerdictDocument = { ...doc, votes: [doc.votes[0]!, { ...doc.votes[1]!, vote: { ...doc.votes[1]!.vote, digest: OTHER } }] };
    expect(verifyVerdictDocument(badSig, verifyText).valid).toBe(false);
    expect(late.get(id)).toBeNull();
    await late.applyVerdict(doc);
    expect(late.get(id)!.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: CLAIM });
    expect(late.get(id)!.state).toBe('upheld');
    // no_quorum is taken only once the deadline has passed here.
    const quiet = signedChallenge('res_5_q');
    const nq: VerdictDocument = {
      challenge: quiet,
      votes: [],
      verdict: { challenge_id: quiet.challenge.challenge_id, outcome: 'no_quorum', deciding_digest: null },
    };
    expect((await refusal(late.applyVerdict(nq))).action).toBe('ignore');
    now += policy.deadlineTicks + 2;
    await late.applyVerdict(nq);
    expect(late.get(quiet.challenge.challenge_id)!.state).toBe('no_quorum');
  });

  it('the opener and the committee announce a verdict again for deadlineTicks; a node that missed every event takes it', async () => {
    const sc = signedChallenge('res_7_r');
    const id = sc.challenge.challenge_id;
    const sent: { type: string; body: unknown }[] = [];
    const m0 = member(sc, 0);
    const decider = await service(m0, undefined, async (type, body) => void sent.push({ type, body }));
    const store = stores.at(-1)!;
    const bystanderSent: unknown[] = [];
    // An eligible node off the committee (neither the executor nor the opener).
    const off = keys.slice(2).find((k) => !sc.challenge.committee.includes(k.id))!;
    const bystander = await service(off, undefined, async (_t, body) => void bystanderSent.push(body));
    for (const s of [decider, bystander]) {
      await s.applyOpened(sc, { sender: keys[1]!.id });
      await s.applyVote(vote(m0, id, CLAIM), { sender: m0.id });
      await s.applyVote(vote(member(sc, 1), id, CLAIM), { sender: member(sc, 1).id });
    }
    await new Promise((r) => setImmediate(r));
    const once = sent.filter((x) => x.type === 'consensus.verdict').length;
    expect(once).toBeGreaterThanOrEqual(1);
    await decider.reannounceVerdicts();
    await bystander.reannounceVerdicts();
    const verdicts = sent.filter((x) => x.type === 'consensus.verdict');
    expect(verdicts.length).toBe(once + 1);
    // Only the opener and the committee announce; the executor's home, which missed everything, takes it.
    expect(bystanderSent).toHaveLength(0);
    expect(bystander.get(id)!.state).toBe('upheld');
    const executorHome = await service(keys[0]!);
    await executorHome.applyVerdict(verdicts.at(-1)!.body as VerdictDocument);
    expect(executorHome.get(id)!.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: CLAIM });
    // A stop within the window does not end it: the decider, restarted, announces it again (from its marker).
    const restarted = await service(m0, undefined, async (type, body) => void sent.push({ type, body }), { store });
    expect(restarted.memory()).toMatchObject({ settled: 0 });
    await restarted.reannounceVerdicts();
    expect(sent.filter((x) => x.type === 'consensus.verdict').length).toBe(once + 2);
    // Past deadlineTicks after the decision: no more announcements, and the marker is gone.
    now += policy.deadlineTicks + 1;
    await decider.reannounceVerdicts();
    await restarted.reannounceVerdicts();
    expect(sent.filter((x) => x.type === 'consensus.verdict').length).toBe(once + 2);
    expect(await store.range(store.sub('challenges_announce'))).toEqual([]);
  });

  it('the deadline sweep declares no_quorum once deadline + grace has passed, with the votes heard so far', async () => {
    const s = await service(keys[5]!);
    const sc = signedChallenge('res_6_d');
    const id = sc.challenge.challenge_id;
    await s.applyOpened(sc, { sender: keys[1]!.id });
    await s.applyVote(vote(member(sc, 0), id, CLAIM), { sender: member(sc, 0).id });
    now = sc.challenge.deadline_svcond + 2;
    await s.sweepDeadlines();
    expect(s.get(id)!.state).toBe('voting');
    now += 1;
    await s.sweepDeadlines();
    expect(s.get(id)!.verdict).toMatchObject({ outcome: 'no_quorum', tally: { [CLAIM]: 1 } });
    // The same votes fold to the same outcome anywhere.
    const f = foldVotes({
      committee: sc.challenge.committee,
      quorum: 2,
      claimedDigest: CLAIM,
      executorDigest: EXEC,
      votes: s.get(id)!.votes.map((v) => v.vote),
      deadlineSvcond: sc.challenge.deadline_svcond,
      deadlinePassed: true,
    });
    expect(f.outcome).toBe('no_quorum');
  });
});

describe('a node that misses gossip still converges', () => {
  const settle = () => new Promise((r) => setTimeout(r, 20));
  const two = async (s: ChallengeService, sc: SignedChallenge, digest = CLAIM) => {
    const id = sc.challenge.challenge_id;
    await s.applyVote(vote(member(sc, 0), id, digest), { sender: member(sc, 0).id });
    await s.applyVote(vote(member(sc, 1), id, digest), { sender: member(sc, 1).id });
  };

  it('a vote that arrives before its challenge is held, then counted when the challenge comes; held votes are bounded and expire', async () => {
    const s = await service(keys[5]!, undefined, undefined, { earlyVotes: { maxChallenges: 2, maxPerChallenge: 2, ttlTicks: 5 } });
    const sc = signedChallenge('res_20_e');
    const id = sc.challenge.challenge_id;
    expect((await refusal(s.applyVote(vote(member(sc, 0), id, CLAIM), { sender: member(sc, 0).id }))).action).toBe('ignore');
    await refusal(s.applyVote(vote(member(sc, 1), id, CLAIM), { sender: member(sc, 1).id }));
    // A forged vote is refused, not held.
    const forged = { vote: { ...vote(member(sc, 2), id, CLAIM).vote }, signature: vote(member(sc, 0), id, CLAIM).signature };
    expect((await refusal(s.applyVote(forged, { sender: member(sc, 2).id }))).action).toBe('reject');
    expect(s.memory().early_votes).toBe(2);
    await s.applyOpened(sc, { sender: keys[1]!.id });
    expect(s.get(id)!.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: CLAIM });
    expect(s.memory().early_votes).toBe(0);
    expect(s.stats()).toMatchObject({ early_votes_taken: 2, early_votes_dropped: 0 });
    // At most maxChallenges challenges' votes are held (the oldest go), at most maxPerChallenge each, for ttlTicks.
    const later = ['res_21_a', 'res_21_b', 'res_21_c'].map((r) => signedChallenge(r));
    for (const x of later) await refusal(s.applyVote(vote(member(x, 0), x.challenge.challenge_id, CLAIM), { sender: member(x, 0).id }));
    const third = later[2]!;
    for (const i of [1, 2]) await refusal(s.applyVote(vote(member(third, i), third.challenge.challenge_id, CLAIM), { sender: member(third, i).id }));
    expect(s.memory().early_votes).toBe(3);
    expect(s.stats()).toMatchObject({ early_votes_dropped: 2 });
    now += 6;
    await s.sweepDeadlines();
    expect(s.memory().early_votes).toBe(0);
  });

  it('settled challenges beyond the bound leave memory and are read from the store on demand', async () => {
    const s = await service(keys[5]!, undefined, undefined, { maxSettledInMemory: 2 });
    const scs = ['res_22_a', 'res_22_b', 'res_22_c', 'res_22_d'].map((r) => signedChallenge(r));
    for (const sc of scs) {
      await s.applyOpened(sc, { sender: keys[1]!.id });
      await two(s, sc);
    }
    const open = signedChallenge('res_22_e');
    await s.applyOpened(open, { sender: keys[1]!.id });
    expect(s.memory()).toMatchObject({ open: 1, settled: 2 });
    const first = scs[0]!.challenge.challenge_id;
    expect(s.get(first)).toBeNull();
    expect((await s.find(first))!.verdict).toMatchObject({ outcome: 'upheld' });
    const listed = await s.list({ state: 'upheld', limit: 10, offset: 0 });
    expect(listed.total).toBe(4);
    // A late vote for an evicted challenge is kept as evidence; the verdict stands. A repeat of its challenge is known.
    await s.applyVote(vote(member(scs[0]!, 2), first, EXEC), { sender: member(scs[0]!, 2).id });
    expect((await s.find(first))!).toMatchObject({ state: 'upheld' });
    expect((await s.find(first))!.votes).toHaveLength(3);
    await s.applyOpened(scs[0]!, { sender: keys[1]!.id });
    expect(s.memory().settled).toBe(2);
    expect(s.openAgainst(open.challenge.executed_by.bond_id)).toEqual([open.challenge.challenge_id]);
  });

  it('listings page from the index by tick and state, written with each entry; challenges stored before it are indexed once at load', async () => {
    const s = await service(keys[5]!);
    const store = stores[stores.length - 1]!;
    const start = now;
    const scs: SignedChallenge[] = [];
    try {
      for (const [i, r] of ['res_30_a', 'res_30_b', 'res_30_c', 'res_30_d', 'res_30_e'].entries()) {
        now = start + (i % 3) * 10; // three ticks, two challenges on two of them (ordered by id there)
        const sc = signedChallenge(r);
        scs.push(sc);
        await s.applyOpened(sc, { sender: keys[1]!.id });
      }
      now = start + 5; // within both commit windows and deadlines
      await two(s, scs[0]!);
      await two(s, scs[4]!, EXEC);
    } finally {
      now = start;
    }
    const stateOf = (id: string) => (id === scs[0]!.challenge.challenge_id ? 'upheld' : id === scs[4]!.challenge.challenge_id ? 'rejected' : 'opened');
    // The order listings always had: newest tick first, then by id.
    const expected = (state?: string) =>
      scs
        .map((sc) => sc.challenge)
        .filter((c) => state === undefined || stateOf(c.challenge_id) === state)
        .sort((a, b) => b.svcond - a.svcond || (a.challenge_id < b.challenge_id ? -1 : 1))
        .map((c) => c.challenge_id);
    const ids = async (svc: ChallengeService, state?: ChallengeState, limit = 10, offset = 0) => {
      const r = await svc.list({ ...(state ? { state } : {}), limit, offset });
      return { total: r.total, ids: r.items.map((e) => e.challenge.challenge.challenge_id) };
    };
    const scan = vi.spyOn(store, 'range').mockName('range');
    expect(await ids(s)).toEqual({ total: 5, ids: expected() });
    expect(await ids(s, undefined, 2, 1)).toEqual({ total: 5, ids: expected().slice(1, 3) });
    expect(await ids(s, 'opened')).toEqual({ total: 3, ids: expected('opened') });
    expect(await ids(s, 'upheld')).toEqual({ total: 1, ids: [scs[0]!.challenge.challenge_id] });
    expect(await ids(s, 'rejected')).toEqual({ total: 1, ids: [scs[4]!.challenge.challenge_id] });
    expect(await ids(s, 'voting')).toEqual({ total: 0, ids: [] });
    expect(scan.mock.calls.filter(([sub]) => sub === store.sub('challenges'))).toEqual([]);
    scan.mockRestore();
    // As a node before the index left its store: the entries only. Loaded again (a restart), they are indexed once.
    const drop: Op[] = [{ type: 'del', sub: store.sub('chain_meta'), key: 'challenges-by-tick-v1' }];
    for (const name of ['challenges_by_tick', 'challenges_by_state'])
      for (const e of await store.range(store.sub(name))) drop.push({ type: 'del', sub: store.sub(name), key: e.key });
    await store.commit(drop);
    expect((await ids(s)).ids).toEqual([]);
    const again = await service(keys[5]!, undefined, undefined, { store });
    expect(await ids(again)).toEqual({ total: 5, ids: expected() });
    expect(await ids(again, 'opened', 2, 0)).toEqual({ total: 3, ids: expected('opened').slice(0, 2) });
    expect(await ids(again, 'upheld')).toEqual({ total: 1, ids: [scs[0]!.challenge.challenge_id] });
    expect(await store.get(store.sub('chain_meta'), 'challenges-by-tick-v1')).toBe(1);
  });

  it('start reads the open challenges and those with an effect owed only; an owed effect left before a stop is applied after it; a bond’s verdicts by index', async () => {
    // keys[0] is the bond's home: an upheld verdict owes it the slashing; rejected ones owe it nothing.
    const s = await service(keys[0]!);
    const store = stores[stores.length - 1]!;
    const start = now;
    const rejected: string[] = [];
    let upheld = '';
    let open = '';
    try {
      for (let i = 0; i < 12; i++) {
        now = start + i;
        const sc = signedChallenge(`res_40_${i}`);
        await s.applyOpened(sc, { sender: keys[1]!.id });
        if (i === 11) open = sc.challenge.challenge_id;
        else if (i === 5) {
          await two(s, sc);
          upheld = sc.challenge.challenge_id;
        } else {
          await two(s, sc, EXEC);
          rejected.push(sc.challenge.challenge_id);
        }
      }
    } finally {
      now = start;
    }
    const owedSub = store.sub('challenges_owed');
    // No listener ran the mark or the slashing before the stop: their markers are still there (written in the verdict's batch).
    expect((await store.range(owedSub)).map((e) => e.key)).toEqual([`${upheld}!mark`, `${upheld}!slash`]);
    const bondId = 'bond_' + 'a'.repeat(24);
    expect((await s.ofBond(bondId)).map((e) => e.challenge.challenge.challenge_id)).toHaveLength(12);
    expect((await s.ofBond('bond_' + 'b'.repeat(24))).length).toBe(0);

    // A restart: every read of a stored challenge is counted (load, then the effects owed).
    const restart = async () => {
      const get = vi.spyOn(store, 'get');
      const range = vi.spyOn(store, 'range');
      const again = await service(keys[0]!, undefined, undefined, { store });
      const applied: string[] = [];
      again.onVerdict(async (e) => {
        applied.push(e.challenge.challenge.challenge_id);
        const id = e.challenge.challenge.challenge_id;
        // As slashing.ts does: the mark's batch and the slashing's delete their markers.
        await store.commit([
          { type: 'del', sub: owedSub, key: `${id}!mark` },
          { type: 'del', sub: owedSub, key: `${id}!slash` },
        ]);
      });
      await again.resumeEffects();
      const ranged = range.mock.calls.filter(([sub]) => sub === store.sub('challenges')).length;
      const reads = get.mock.calls.filter(([sub]) => sub === store.sub('challenges')).map(([, key]) => key);
      get.mockRestore();
      range.mockRestore();
      return { again, reads, applied, ranged };
    };
    const first = await restart();
    expect(first.ranged).toBe(0);
    expect(first.reads.sort()).toEqual([open, upheld].sort());
    expect(first.applied).toEqual([upheld]);
    expect(first.again.memory()).toMatchObject({ open: 1, settled: 0 });
    expect((await first.again.list({ limit: 1, offset: 0 })).total).toBe(12);
    expect((await first.again.list({ state: 'rejected', limit: 1, offset: 0 })).total).toBe(10);
    // The effect done, the next start reads the open challenge only.
    const second = await restart();
    expect(second.reads).toEqual([open]);
    expect(second.applied).toEqual([]);
    // A store from before the markers and the by-bond index: both made once at load (the upheld one still owed).
    const metaSub = store.sub('chain_meta');
    const drop: Op[] = [
      { type: 'del', sub: metaSub, key: 'challenges-owed-v1' },
      { type: 'del', sub: metaSub, key: 'challenges-by-bond-v1' },
    ];
    for (const e of await store.range(store.sub('challenges_by_bond'))) drop.push({ type: 'del', sub: store.sub('challenges_by_bond'), key: e.key });
    await store.commit(drop);
    const third = await restart();
    expect(third.applied).toEqual([upheld]);
    expect((await third.again.ofBond(bondId)).map((e) => e.challenge.challenge.challenge_id)).toEqual([
      open,
      ...[...rejected.slice(5)].reverse(),
      upheld,
      ...[...rejected.slice(0, 5)].reverse(),
    ]);
  });

  it('the opener sends the challenge to the committee and the bond home, a member its vote to the opener, the opener the verdict to the bond home until acknowledged', async () => {
    const result: ChallengedResult = {
      result_id: 'res_23_d',
      request: { kind: 'solver', solver: 'zeta', inputs: {} },
      stamp_svcond: now - 3,
      result_digest: EXEC,
      executed_by: executedBy('bond_' + 'd'.repeat(24)),
      owner: 'zid_owner',
      published: true,
    };
    const sent: { from: string; node: string; type: string; body: any }[] = [];
    let bondHomeUp = false;
    const sender = (from: Key) => async (node: string, type: string, body: unknown) => {
      sent.push({ from: from.id, node, type, body });
      if (type === 'consensus.verdict' && !bondHomeUp) throw new Error('the bond home is down');
    };
    const opener = await service(keys[1]!, async () => result, undefined, { send: sender(keys[1]!) });
    const e = await opener.open('zid_a', 'res_23_d', CLAIM);
    const c = e.challenge.challenge;
    const id = c.challenge_id;
    expect(
      sent
        .filter((x) => x.type === 'consensus.challenge.opened')
        .map((x) => x.node)
        .sort(),
    ).toEqual([...c.committee, keys[0]!.id].sort());
    // A member that heard the challenge sends its vote to the opener.
    const m0 = keys.find((k) => k.id === c.committee[0])!;
    const member0 = await service(m0, undefined, undefined, { send: sender(m0) });
    await member0.applyOpened(e.challenge, { sender: keys[1]!.id });
    await member0.castVote(vote(m0, id, CLAIM));
    expect(sent.filter((x) => x.type === 'consensus.vote')).toMatchObject([{ from: m0.id, node: keys[1]!.id }]);
    // The opener decides; the bond's home is down: the verdict is sent again at the next flush, until acknowledged.
    for (const i of [0, 1]) {
      const m = keys.find((k) => k.id === c.committee[i])!;
      await opener.applyVote(vote(m, id, CLAIM), { sender: m.id });
    }
    expect(opener.get(id)!.state).toBe('upheld');
    await settle();
    const verdictSends = () => sent.filter((x) => x.type === 'consensus.verdict' && x.node === keys[0]!.id).length;
    expect(verdictSends()).toBe(1);
    now += 1;
    await opener.flushDeliveries();
    expect(verdictSends()).toBe(2);
    bondHomeUp = true;
    now += 4;
    await opener.flushDeliveries();
    await settle();
    expect(verdictSends()).toBe(3);
    expect((await opener.find(id))!.verdict_delivered).toBe(true);
    // The bond home takes the document as sent; a restart does not send an acknowledged verdict again.
    const home = await service(keys[0]!);
    await home.applyVerdict(sent.at(-1)!.body);
    expect(home.get(id)!.verdict).toMatchObject({ outcome: 'upheld' });
    await opener.resumeEffects();
    now += 20;
    await opener.flushDeliveries();
    expect(verdictSends()).toBe(3);
  });

  it('past the deadline a node asks the opener for its verdict before declaring no_quorum on its own', async () => {
    const sc = signedChallenge('res_24_s');
    const id = sc.challenge.challenge_id;
    const openerView = await service(keys[1]!);
    await openerView.applyOpened(sc, { sender: keys[1]!.id });
    await two(openerView, sc);
    let reachable = false;
    const asked: string[] = [];
    const late = await service(keys[5]!, undefined, undefined, {
      askPatienceTicks: 5,
      ask: async (node, cid) => {
        asked.push(node);
        if (!reachable) throw new Error('the opener is down');
        return openerView.document(cid);
      },
    });
    // It heard the challenge and one vote only: its own fold would say no_quorum.
    await late.applyOpened(sc, { sender: keys[1]!.id });
    await late.applyVote(vote(member(sc, 0), id, CLAIM), { sender: member(sc, 0).id });
    now = sc.challenge.deadline_svcond + 3;
    await late.sweepDeadlines();
    expect(late.get(id)!.state).toBe('voting');
    reachable = true;
    now += 1;
    await late.sweepDeadlines();
    expect(late.get(id)!.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: CLAIM });
    expect(new Set(asked)).toEqual(new Set([keys[1]!.id]));
    // The opener unreachable for good: no_quorum on this node's clock once the patience is spent.
    reachable = false;
    const quiet = signedChallenge('res_25_s');
    await late.applyOpened(quiet, { sender: keys[1]!.id });
    now = quiet.challenge.deadline_svcond + 2 + 5;
    await late.sweepDeadlines();
    expect(late.get(quiet.challenge.challenge_id)!.state).toBe('opened');
    now += 1;
    await late.sweepDeadlines();
    expect(late.get(quiet.challenge.challenge_id)!.state).toBe('no_quorum');
  });
});

describe('a reveal held back past the deadline', () => {
  it('counts nowhere, whatever tick it claims: kept as evidence; a document wrapping it is refused unless it is the opener’s', async () => {
    const sc = signedChallenge('res_26_h');
    const id = sc.challenge.challenge_id;
    const [m0, m1] = [member(sc, 0), member(sc, 1)];
    const opener = await service(keys[1]!);
    const other = await service(keys[5]!, undefined, undefined, { askPatienceTicks: 5, ask: async (_node, cid) => opener.document(cid) });
    const v0 = vote(m0, id, CLAIM);
    const v1 = vote(m1, id, CLAIM, sc.challenge.deadline_svcond); // signed late, dated the deadline
    for (const s of [opener, other]) {
      await s.applyOpened(sc, { sender: keys[1]!.id });
      await s.applyVote(v0, { sender: m0.id });
      await s.applyCommit(commitOf(m1, v1, now), { sender: m1.id }); // m1 commits in its window, then holds its reveal
    }
    now = sc.challenge.deadline_svcond + 3;
    await opener.sweepDeadlines();
    expect(opener.get(id)!.verdict).toMatchObject({ outcome: 'no_quorum', tally: { [CLAIM]: 1 } });
    // The reveal arrives once the opener has decided: every node refuses to count it.
    const refused = await refusal(other.applyVote(v1, { sender: m1.id }));
    expect([refused.action, refused.status, refused.code]).toEqual(['ignore', 409, 'INVALID_VOTE']);
    expect(other.get(id)).toMatchObject({ state: 'voting', votes: [v0], heard_late: [v1] });
    expect(other.stats()).toMatchObject({ late_votes: 1 });
    await opener.applyVote(v1, { sender: m1.id });
    expect(opener.get(id)!.verdict!.outcome).toBe('no_quorum');
    // Wrapped in a document of its own (it folds: the votes and commits are signed), it is refused from anyone but the opener.
    const wrapped: VerdictDocument = {
      challenge: sc,
      commits: [commitOf(m0, v0), commitOf(m1, v1, sc.challenge.svcond)],
      votes: [v0, v1],
      verdict: { challenge_id: id, outcome: 'upheld', deciding_digest: CLAIM },
    };
    expect(verifyVerdictDocument(wrapped, verifyText).valid).toBe(true);
    const doc = await refusal(other.applyVerdict(wrapped, m1.id));
    expect([doc.action, doc.status, doc.code]).toEqual(['ignore', 409, 'INVALID_VERDICT']);
    expect(other.get(id)!.state).toBe('voting');
    expect(other.stats()).toMatchObject({ late_vote_documents: 1 });
    // The node asks the opener and takes its verdict: the two agree.
    await other.sweepDeadlines();
    expect(other.get(id)!.verdict).toMatchObject({ outcome: 'no_quorum', tally: { [CLAIM]: 1 } });
  });

  it('a node that missed a vote while the opener is down takes the committee’s verdict once it failed to reach the opener', async () => {
    const sc = signedChallenge('res_27_h');
    const id = sc.challenge.challenge_id;
    const [m0, m1] = [member(sc, 0), member(sc, 1)];
    const decider = await service(m0);
    const asked: string[] = [];
    const stranded = await service(keys[5]!, undefined, undefined, {
      askPatienceTicks: 50,
      ask: async (node) => {
        asked.push(node);
        throw new Error('the opener is down');
      },
    });
    const [v0, v1] = [vote(m0, id, CLAIM), vote(m1, id, CLAIM)];
    await decider.applyOpened(sc, { sender: keys[1]!.id });
    await stranded.applyOpened(sc, { sender: keys[1]!.id });
    for (const [by, v] of [
      [m0, v0],
      [m1, v1],
    ] as const)
      await decider.applyVote(v, { sender: by.id });
    await stranded.applyVote(v0, { sender: m0.id });
    await stranded.applyCommit(commitOf(m1, v1), { sender: m1.id });
    const doc = decider.document(id)!;
    expect(doc.verdict.outcome).toBe('upheld');
    now = sc.challenge.deadline_svcond + 3;
    // Past its window, m1's vote from a member's announcement is refused while the opener may still answer …
    expect((await refusal(stranded.applyVerdict(doc, m0.id))).code).toBe('INVALID_VERDICT');
    // … and taken once asking the opener failed: it converges on the committee's verdict, not a no_quorum of its own.
    await stranded.sweepDeadlines();
    expect(asked).toEqual([keys[1]!.id]);
    expect(stranded.get(id)!.state).toBe('voting');
    await stranded.applyVerdict(doc, m0.id);
    expect(stranded.get(id)!.verdict).toMatchObject({ outcome: 'upheld', deciding_digest: CLAIM });
  });
});

describe('a liar cannot reach an honest node’s bond', () => {
  const FRAMED = 'bond_' + 'f'.repeat(24);
  const UNKNOWN = 'bond_' + '9'.repeat(24);
  /** The registry: FRAMED is held by keys[5] (an honest node); every other bond the tests name by the executor. */
  const registry = { ofNode: () => null, get: () => null, holderOf: (id: string) => (id === FRAMED ? keys[5]!.id : id === UNKNOWN ? null : keys[0]!.id) };
  const bonds = registry as unknown as BondService;
  /** A challenge of res_f whose executed_by, signed by the executor keys[0], names `bondId`. */
  function naming(bondId: string, resultId = 'res_f'): SignedChallenge {
    const base = signedChallenge(resultId).challenge;
    const c: ChallengeRecord = { ...base, executed_by: executedBy(bondId) };
    return { challenge: c, signature: signText(keys[1]!.priv, challengeSigningText(c)) };
  }
  const code = async (p: Promise<unknown>) =>
    p.then(
      () => null,
      (err: ServiceError) => [err.status, err.code, err.message],
    );

  it('executed_by naming another node’s bond: 409 SVC_NOT_AT_STAKE at intake, rejected on the wire and under a verdict, never marked', async () => {
    const found = (bondId: string): ChallengedResult => ({
      result_id: 'res_f',
      request: { kind: 'solver', solver: 'zeta', inputs: {} },
      stamp_svcond: now - 3,
      result_digest: EXEC,
      executed_by: executedBy(bondId),
      owner: 'zid_owner',
      published: true,
    });
    const home = await service(keys[1]!, async (id) => found(id === 'res_f' ? FRAMED : UNKNOWN), undefined, { bonds });
    expect(await code(home.open('zid_a', 'res_f', CLAIM))).toEqual([409, 'SVC_NOT_AT_STAKE', expect.stringContaining(`held by node ${keys[5]!.id}`)]);
    expect(await code(home.open('zid_a', 'res_u', CLAIM))).toEqual([409, 'SVC_NOT_AT_STAKE', expect.stringContaining('not known here')]);
    expect(home.all()).toEqual([]);

    const s = await service(keys[4]!, undefined, undefined, { bonds });
    const framed = naming(FRAMED);
    const refused = await refusal(s.applyOpened(framed, { sender: keys[1]!.id }));
    expect([refused.action, refused.code, refused.message]).toEqual(['reject', 'INVALID_CHALLENGE', expect.stringContaining('not by the executor')]);
    // The verdict the liar's colluders would sign: consistent on its own, refused here.
    const m = member(framed, 0);
    const sv = vote(m, framed.challenge.challenge_id, CLAIM);
    const m2 = member(framed, 1);
    const sv2 = vote(m2, framed.challenge.challenge_id, CLAIM);
    const doc: VerdictDocument = {
      challenge: framed,
      commits: [commitOf(m, sv), commitOf(m2, sv2)],
      votes: [sv, sv2],
      verdict: { challenge_id: framed.challenge.challenge_id, outcome: 'upheld', deciding_digest: CLAIM },
    };
    expect(verifyVerdictDocument(doc, verifyText).valid).toBe(true);
    expect((await refusal(s.applyVerdict(doc))).code).toBe('INVALID_VERDICT');
    expect(s.get(framed.challenge.challenge_id)).toBeNull();
    expect(await s.checkAgainstState(framed.challenge)).toContain(`held by node ${keys[5]!.id}`);
    // A bond not known here (gossip keeps no order): not kept, not acted on, the sender not penalised.
    const unknown = await refusal(s.applyOpened(naming(UNKNOWN, 'res_u'), { sender: keys[1]!.id }));
    expect([unknown.action, unknown.message]).toEqual(['ignore', expect.stringContaining('not known here')]);
    expect(s.all()).toEqual([]);
    // The executor's own bond: kept.
    await s.applyOpened(naming('bond_' + 'a'.repeat(24), 'res_ok'), { sender: keys[1]!.id });
    expect(s.all()).toHaveLength(1);
  });

  it('a back-dated challenge (its tick before this node’s record of tick events) is neither kept nor acted on; a deadline not the policy’s is refused', async () => {
    // This node's record of tick events begins 10 ticks ago; every key's bond is long settled.
    const s = await service(keys[4]!, undefined, undefined, { livenessCovers: (from) => from >= now - 10 });
    const T = 100; // long before the record's first tick (now is past 1 000), after every bond's tick (0)
    const base = signedChallenge('res_old').challenge;
    const draw = drawEvent(keys[2]!, T + 1);
    const c: ChallengeRecord = {
      ...base,
      svcond: T,
      stamp_svcond: T - 5,
      draw,
      deadline_svcond: T + 1 + policy.deadlineTicks,
      committee: drawnCommittee('res_old', draw, base.eligible, 3),
    };
    const old: SignedChallenge = { challenge: c, signature: signText(keys[1]!.priv, challengeSigningText(c)) };
    const votes = [0, 1].map((i) => vote(member(old, i), c.challenge_id, CLAIM, T + 3));
    const doc: VerdictDocument = {
      challenge: old,
      commits: votes.map((v, i) => commitOf(member(old, i), v, T + 2)),
      votes,
      verdict: { challenge_id: c.challenge_id, outcome: 'upheld', deciding_digest: CLAIM },
    };
    expect(verifyVerdictDocument(doc, verifyText, now).valid).toBe(true);
    const refused = await refusal(s.applyVerdict(doc));
    expect([refused.action, refused.message]).toEqual(['ignore', expect.stringContaining("before this node's record of tick events")]);
    expect(s.get(c.challenge_id)).toBeNull();
    expect((await refusal(s.applyOpened(old, { sender: keys[1]!.id }))).action).toBe('ignore');
    expect(s.all()).toEqual([]);
    expect(s.stats()).toMatchObject({ unverifiable_challenges: 2 });
    expect(await s.checkAgainstState(c)).toContain("before this node's record of tick events");

    // A fresh challenge whose deadline is not the draw's tick + deadlineTicks: refused, whatever the record covers.
    const fresh = signedChallenge('res_late').challenge;
    const late: ChallengeRecord = { ...fresh, deadline_svcond: fresh.draw.svcond + policy.deadlineTicks + 50 };
    const lateSigned = { challenge: late, signature: signText(keys[1]!.priv, challengeSigningText(late)) };
    const r = await refusal(s.applyOpened(lateSigned, { sender: keys[1]!.id }));
    expect([r.action, r.message]).toEqual(['reject', expect.stringContaining("the policy's is the draw event's tick + 10")]);
  });
});
