// Where a result's re-execution facts are: at its home (tally/record.ts), the node that sealed it. A node that is
// not the home asks every peer (GET /api/mesh/results/:id) and accepts only an answer signed by the peer it asked,
// fresh, that names that peer as the home — the same rule as key lookups (mesh/key-lookup.ts). A result no ledger
// holds (a liar's, sealed and handed out but never recorded) is challengeable by carrying it: the challenge's
// `result` is accepted when it verifies as any result does (compute/verify-result.ts: its proof, tick receipt,
// seal_signature by a node this mesh knows, its own result_digest), so only its sealer can have made it. A home's
// answer carries the sealed body too, whatever its size: the challenge carries it on, and a node that got a
// challenge or verdict event naming the body by its digest alone asks for it here (challenges.ts sealedBody).
import { z } from 'zod';
import type { OverMesh } from '../mesh/peer-http.js';
import { askPeers, type PeerAddress } from '../mesh/ask-peers.js';
import { MAX_SKEW_TICKS } from '../mesh/validator.js';
import { verifyEventSignature, type MeshEvent } from '../mesh/wire.js';
import type { ResultLookup } from '../tally/record.js';
import type { Json } from '../store/db.js';
import type { ChallengedResult } from './challenges.js';
import { InputError } from '../solvers/errors.js';
import type { ResultVerification } from '../compute/verify-result.js';
import { executedBySchema } from './executed-by.js';
import { sealedResultSchema, type SealedResult } from './challenge-wire.js';

export const RESULT_LOOKUP = 'result.lookup';
const RESULT_LOOKUP_TIMEOUT_MS = 2000;
export const RESULT_ID_PATTERN = /^res_\d{1,16}_[0-9a-f]{16}$/;

const requestSchema = z.union([
  z.object({ kind: z.literal('solver'), solver: z.string().min(1).max(64), inputs: z.record(z.string(), z.unknown()) }).strict(),
  z.object({ kind: z.literal('compute'), domain: z.unknown(), operators: z.unknown(), inputs: z.unknown() }).strict(),
]);

export const resultLookupSchema = z.union([
  z
    .object({
      status: z.literal('found'),
      result_id: z.string().regex(RESULT_ID_PATTERN),
      home: z.string().min(1).max(128),
      owner: z.string().max(64).nullable(),
      published: z.literal(true),
      kind: z.enum(['compute', 'solver']),
      request: requestSchema,
      svcond: z.number().int().min(0),
      result_digest: z.string().regex(/^[0-9a-f]{64}$/),
      executed_by: executedBySchema.nullable(),
      result: sealedResultSchema().optional(),
    })
    .strict(),
  z.object({ status: z.literal('unpublished'), result_id: z.string().regex(RESULT_ID_PATTERN), home: z.string().min(1).max(128) }).strict(),
]);

export interface ResultLookupDeps {
  peers: () => readonly PeerAddress[];
  nowSvcond: () => number;
  /** The libp2p way to a peer whose URL is unknown or does not connect (null: URLs only). */
  overMesh?: OverMesh | null;
}

/**
 * Ask the peers about a result sealed elsewhere: the home's answer (found or unpublished), or unknown when no peer
 * homes it (or none answered in time).
 */
export async function remoteResultLookup(deps: ResultLookupDeps, resultId: string): Promise<ResultLookup> {
  if (!RESULT_ID_PATTERN.test(resultId)) return { status: 'unknown', result_id: resultId };
  const now = deps.nowSvcond();
  const answers = await askPeers(deps.peers(), `/api/mesh/results/${resultId}`, RESULT_LOOKUP_TIMEOUT_MS, deps.overMesh ?? null, async (body, peer) => {
    const event = body as MeshEvent;
    if (!event || event.type !== RESULT_LOOKUP || event.sender !== peer.peerId) return null;
    if (typeof event.svcond !== 'number' || Math.abs(event.svcond - now) > MAX_SKEW_TICKS) return null;
    const parsed = resultLookupSchema.safeParse(event.body);
    if (!parsed.success || parsed.data.result_id !== resultId || parsed.data.home !== peer.peerId) return null;
    if (!(await verifyEventSignature(event))) return null;
    return parsed.data as ResultLookup;
  });
  const found = answers.map((a) => a.answer).filter((a): a is ResultLookup => a !== null);
  return found.find((a) => a.status === 'found') ?? found[0] ?? { status: 'unknown', result_id: resultId };
}

/** This node's record first (it may be the home), then the peers. */
export async function findResult(local: { lookup(resultId: string): Promise<ResultLookup> }, deps: ResultLookupDeps, resultId: string): Promise<ResultLookup> {
  const here = await local.lookup(resultId);
  if (here.status !== 'unknown') return here;
  return remoteResultLookup(deps, resultId);
}

/** A finder of results: this node's record first, then the peers (none while the mesh is off). */
export function resultFinder(local: { lookup(resultId: string): Promise<ResultLookup> }, deps: ResultLookupDeps): (resultId: string) => Promise<ResultLookup> {
  return (resultId) => findResult(local, deps, resultId);
}

/**
 * What a challenge needs of a result, from its lookup: null when no node homes it; an unpublished result carries no
 * request, digest or executor (a challenge against it is refused as unpublished).
 */
export function challengedResult(found: ResultLookup): ChallengedResult | null {
  if (found.status === 'unknown') return null;
  if (found.status === 'unpublished')
    return { result_id: found.result_id, request: null, stamp_svcond: 0, result_digest: '', executed_by: null, owner: null, published: false };
  return {
    result_id: found.result_id,
    request: found.request as Json,
    stamp_svcond: found.svcond,
    result_digest: found.result_digest,
    executed_by: found.executed_by,
    owner: found.owner,
    published: true,
    ...(found.result !== undefined ? { sealed: found.result as SealedResult } : {}),
  };
}

/**
 * A challenged result carried by the challenge itself, for a result no node's record holds: its re-execution facts
 * read from the body, once it verifies (the same check as POST /api/svc/verify) and is the result the challenge
 * names. 400 SVC_INVALID_INPUT on `result` otherwise, naming the failed checks.
 */
export function carriedResult(verify: (body: unknown) => ResultVerification, resultId: string, body: unknown): ChallengedResult {
  const v = verify(body);
  if (!v.valid) throw new InputError('result', `the carried result does not verify: ${v.reasons.map((r) => r.code).join(', ')}`, null);
  const b = body as Record<string, unknown>;
  if (b.result_id !== resultId) throw new InputError('result', `the carried result is ${String(b.result_id)}, not ${resultId}`, null);
  const executedBy = executedBySchema.nullable().safeParse(b.executed_by ?? null);
  if (!executedBy.success || typeof b.svcond !== 'number') throw new InputError('result', 'the carried result has no valid executed_by or svcond', null);
  return {
    result_id: resultId,
    request: requestOf(b),
    stamp_svcond: b.svcond,
    result_digest: b.result_digest as string,
    executed_by: executedBy.data,
    owner: null,
    // Whoever holds a sealed result may show it: carrying it publishes it.
    published: true,
    sealed: b as SealedResult,
  };
}

/**
 * The canonical request a sealed body answered (records/types.ts CanonicalRequest): a solver run's resolved inputs
 * as they are; a chain's resolved `[{operator, inputs}]` merged into the one inputs object a chain request takes
 * (each operator reads its own names from it, so the chain resolves to the same inputs).
 */
function requestOf(b: Record<string, unknown>): Json {
  if (b.kind === 'solver') return { kind: 'solver', solver: b.solver as string, inputs: b.inputs as Json };
  const inputs: Record<string, Json> = {};
  for (const step of Array.isArray(b.inputs) ? (b.inputs as { inputs?: Record<string, Json> }[]) : []) Object.assign(inputs, step.inputs ?? {});
  return { kind: 'compute', domain: b.domain as Json, operators: b.operators as Json, inputs };
}
