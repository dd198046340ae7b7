// The protocol of re-execution consensus, described and checkable by anyone (architecture.md §6):
// GET /api/protocol/pohc describes it; POST /api/protocol/pohc/verify re-checks a verdict document — the opener's
// signature and committee, every vote's signature, the fold — and the checks this node runs before it applies a
// verdict: the challenge against its own bond registry and liveness record (challenges.ts stateFault), and the
// sealed result the challenge carries against the record (challenge-wire.ts carriedResultFault). Keyless.
import type Router from '@koa/router';
import { quorumOf } from '../../consensus/policy.js';
import { BOND_HEARD_SLACK_TICKS } from '../../consensus/bonds.js';
import { TRANSITIONS } from '../../consensus/challenge-lifecycle.js';
import {
  CHALLENGE_OPENED_EVENT,
  COMMIT_EVENT,
  VERDICT_EVENT,
  VOTE_EVENT,
  verdictDocumentSchema,
  verifyVerdictDocument,
  type ChallengeRecord,
  type SignedChallenge,
  type VerdictDocument,
} from '../../consensus/challenge-wire.js';
import { verifyText } from '../../mesh/wire.js';
import type { HttpKit } from '../kit.js';
import { pohcResponse, pohcVerifyResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import { body, responds, validate } from '../validate.js';

export interface PohcDeps {
  /** What this node finds wrong with a challenge from its own state (null when nothing). */
  challengeStateFault: (c: ChallengeRecord) => Promise<string | null>;
  /** What this node finds wrong with the sealed result the challenge carries (null when nothing). */
  carriedResultFault: (sc: SignedChallenge) => string | null;
}

export function pohcRoutes(deps: PohcDeps): RouteGroup {
  return { name: 'pohc', register: (router, kit) => registerPohcRoutes(router, kit, deps) };
}

function registerPohcRoutes(router: Router, kit: HttpKit, deps: PohcDeps): void {
  const p = kit.config.contribution;

  router.get('/api/protocol/pohc', responds(pohcResponse), (ctx) => {
    ctx.body = {
      name: 'pohc: re-execution consensus on challenged results',
      guarantee:
        'a result sealed with a bond at stake that an honest majority of an independent, deterministically chosen committee cannot reproduce costs its executor the whole bond; an honest executor is never slashed',
      topic: 'svc/consensus/1',
      events: {
        [CHALLENGE_OPENED_EVENT]:
          "{challenge, signature, result, result_sha256}: signed by the challenger's home over canonical JSON {attests: 'challenge', challenge}; result: the challenged sealed result, whose own seal_signature speaks for it: it must verify (a sealer this mesh knows) and be the record's result_id, executor_digest and executed_by; result_sha256: SHA-256 of its canonical JSON, which an event carries alone when the result would not fit it (the receiver asks the opener or the result's home for the body); a document given here carries the result in full",
        [COMMIT_EVENT]:
          "{commit: {challenge_id, voter, commitment, svcond}, signature}: commitment = SHA-256(digest|salt), signed by the voter over {attests: 'commit', commit}",
        [VOTE_EVENT]:
          "{vote: {challenge_id, voter, digest, svcond, salt}, signature}: the reveal of the voter's commit, signed by the voter over {attests: 'vote', vote}",
        [VERDICT_EVENT]:
          '{challenge, commits, votes, verdict}: the verdict with the signed commits and votes it rests on; its challenge carries the challenged sealed result',
      },
      challenge_id: 'chl_ + the first 32 hex digits of SHA-256(result_id|challenger zid): derived, so the opener cannot choose the committee',
      committee: {
        eligible: `nodes whose bond attestation is at least ${p.settleTicks} ticks old at the challenge's tick, heard contributing with that bond (a tick event) within ${p.liveTicks} ticks before it, read in the interval that tick event declares (liveTicks × every / mesh.tickEvery when every is longer), one per operator, excluding the executor, its operator and the challenger's home; a bond counts from the tick a node first heard its record, less ${BOND_HEARD_SLACK_TICKS}, when that is later than its own tick; every node checks the listed set against its own bonds and tick events before it keeps a challenge or applies a verdict, and keeps (and acts on) none it cannot check: a tick before its record of tick events, a listed node it has no record of, an executor's bond it does not know; executed_by's bond must be one the executor holds`,
        ranking:
          "SHA-256(seed|peer id), highest first; seed = SHA-256(result_id|draw signature), the draw event being the first tick event a node of the eligible set signed after the challenge's tick",
        size: p.committeeSize,
        quorum: quorumOf(p.committeeSize),
        smaller: 'never formed: 409 SVC_NO_COMMITTEE',
      },
      fold: [
        "a vote counts only if SHA-256(digest|salt) is its voter's one commitment, signed within the commit window (half the way to the deadline); members reveal once every member has committed or the window has passed",
        'votes from nodes outside the committee are ignored and counted',
        'a member that voted two different digests equivocated: recorded, and none of its votes count',
        'a vote signed after the deadline tick does not count',
        "a digest with quorum votes decides, about the executor: the executor's → rejected; any other → upheld, whatever the challenger claimed",
        `no deciding digest by the deadline, the draw event's tick + ${p.deadlineTicks} (every node refuses a challenge with another deadline) → no_quorum`,
      ],
      // The rows' moves; their effects are described per outcome below.
      lifecycle: TRANSITIONS.map(({ from, on, to }) => ({ from, on, to })),
      effects: {
        upheld:
          "the bond is marked slashed in every node's registry; its envelopes move at the bond's home, once (keyed by challenge id): a share to the challenger when its claim was the deciding digest, the rest to the foundation account; the stake is returned",
        rejected: 'the stake is burned; nobody is slashed',
        no_quorum: 'nobody is slashed; the stake is returned',
      },
      verify: 'POST /api/protocol/pohc/verify with {challenge, votes, verdict} (GET /api/tally/consensus/:id gives it as document)',
    };
  });

  router.post('/api/protocol/pohc/verify', responds(pohcVerifyResponse), body(verdictDocumentSchema), async (ctx) => {
    const doc = validate(verdictDocumentSchema, ctx.request.body) as VerdictDocument;
    const now = kit.time.nowSvcond();
    const r = verifyVerdictDocument(doc, verifyText, now);
    const stateFault = await deps.challengeStateFault(doc.challenge.challenge);
    const resultFault = deps.carriedResultFault(doc.challenge);
    const reasons = [
      ...r.reasons,
      ...(stateFault ? [`challenge, checked against this node's bonds and liveness: ${stateFault}`] : []),
      ...(resultFault ? [`result: ${resultFault}`] : []),
    ];
    ctx.body = {
      valid: reasons.length === 0,
      challenge_id: doc.challenge.challenge.challenge_id,
      outcome: doc.verdict.outcome,
      folded_outcome: r.fold?.outcome ?? null,
      deciding_digest: r.fold?.decidingDigest ?? null,
      tally: r.fold?.tally ?? {},
      counted_votes: r.fold?.counted.length ?? 0,
      equivocators: r.fold?.equivocators ?? [],
      non_member_votes: r.fold?.nonMemberVotes ?? 0,
      bad_signatures: r.bad_votes,
      reasons,
    };
  });
}
