// The committee member's part (architecture.md §6): on a challenge whose committee names this node, re-execute the
// canonical request at its recorded stamping tick with this node's own kernel and solvers, and vote the digest it
// gets, signed with this node's key. One vote per challenge: a vote already cast (kept in the challenge's entry) is
// not cast again, also after a restart (resume). A run that fails here casts no vote: the committee's other members
// decide, or the deadline does (no_quorum) — a member never votes a digest it did not compute.
import type { ChallengeEntry, ChallengeService } from './challenges.js';
import { voteSigningText, type SignedVote, type VoteRecord } from './challenge-wire.js';
import { isTerminal } from './challenge-lifecycle.js';
import type { Json } from '../store/db.js';
import { chainRequestDigest, plainJson, solverRequestDigest, solverResultDigest } from '../compute/result-digest.js';
import type { ChainRequest, ComputeService } from '../compute/service.js';
import type { SolverExecutor } from '../compute/executor.js';

export interface ReexecutorOptions {
  challenges: ChallengeService;
  nodeId: () => string;
  nowSvcond: () => number;
  sign: (text: string) => string;
  /** Run a canonical request as stamped at `stampSvcond`; resolves to its request and result digests. */
  execute: (request: Json, stampSvcond: number) => Promise<Rerun>;
  onError?: (challengeId: string, err: unknown) => void;
}

export class Reexecutor {
  private readonly inFlight = new Set<string>();

  constructor(private readonly o: ReexecutorOptions) {
    o.challenges.onOpened(async (e) => {
      await this.consider(e);
    });
  }

  /** Vote on every open challenge whose committee names this node and that has no vote of it yet (at start). */
  async resume(): Promise<void> {
    for (const e of this.o.challenges.all()) await this.consider(e);
  }

  /** Re-execute and vote when this node sits on the challenge's committee and has not voted. */
  async consider(entry: ChallengeEntry): Promise<SignedVote | null> {
    const c = entry.challenge.challenge;
    const me = this.o.nodeId();
    if (!c.committee.includes(me) || isTerminal(entry.state)) return null;
    if (entry.votes.some((v) => v.vote.voter === me) || this.inFlight.has(c.challenge_id)) return null;
    this.inFlight.add(c.challenge_id);
    try {
      let digest: string;
      try {
        const run = await this.o.execute(c.request, c.stamp_svcond);
        // The executor signed the digest of the request it ran: a challenge carrying another request is not voted on.
        if (run.requestDigest !== c.executed_by.request_digest) throw new Error("the challenge's request is not the one the executor signed");
        digest = run.resultDigest;
      } catch (err) {
        this.o.onError?.(c.challenge_id, err);
        return null;
      }
      const vote: VoteRecord = { challenge_id: c.challenge_id, voter: me, digest, svcond: this.o.nowSvcond() };
      const signed: SignedVote = { vote, signature: this.o.sign(voteSigningText(vote)) };
      await this.o.challenges.castVote(signed);
      return signed;
    } finally {
      this.inFlight.delete(c.challenge_id);
    }
  }
}

/** What a re-execution needs of this node: its own solvers (through its executor) and its own chain evaluation. */
export interface RerunDeps {
  compute: Pick<ComputeService, 'resolveSolver' | 'compute'>;
  executor: Pick<SolverExecutor, 'run'>;
  timeLimitSeconds: number;
}

/**
 * The request and result digests of a canonical request run here ({kind: 'solver', solver, inputs} or {kind: 'compute', domain,
 * operators, inputs}), as the sealing pipeline computes it (compute/service.ts), without sealing or charging. The
 * digest excludes stamps (rule 5), so the recorded tick does not change it; it is taken for the record.
 */
export interface Rerun {
  requestDigest: string;
  resultDigest: string;
}

export async function rerunDigest(deps: RerunDeps, request: Json, _stampSvcond: number): Promise<Rerun> {
  const r = request as { kind?: unknown; solver?: unknown; inputs?: unknown; domain?: unknown; operators?: unknown } | null;
  if (r && r.kind === 'solver' && typeof r.solver === 'string') {
    const { solver, inputs } = deps.compute.resolveSolver(r.solver, r.inputs, undefined);
    const out = await deps.executor.run(solver.id, inputs, undefined, deps.timeLimitSeconds, 'consensus:reexecution');
    return {
      requestDigest: solverRequestDigest(solver.id, plainJson(inputs)),
      resultDigest: solverResultDigest(solver.id, inputs, out, plainJson(out.outputs)),
    };
  }
  if (r && r.kind === 'compute') {
    const sealed = await deps.compute.compute(
      { kind: 'anonymous', ip: 'consensus' },
      { domain: r.domain, operators: r.operators, inputs: r.inputs } as ChainRequest,
      {
        seal: false,
      },
    );
    const body = JSON.parse(sealed.bytes.toString('utf8')) as { result_digest?: unknown; domain?: unknown; operators?: unknown; inputs?: unknown };
    if (typeof body.result_digest !== 'string' || typeof body.domain !== 'string' || !Array.isArray(body.operators))
      throw new Error('the chain evaluation gave no result digest');
    return { requestDigest: chainRequestDigest(body.domain, body.operators as string[], body.inputs), resultDigest: body.result_digest };
  }
  throw new Error('the challenged request is neither a solver run nor a chain');
}
