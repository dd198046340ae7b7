// The wire of offloaded execution (architecture.md §6): the libp2p stream protocol /svc/exec/1.0.0. One request and
// one answer per stream, each a frame = unsigned varint byte length + the RFC 8785 canonical JSON of the value as
// UTF-8 (the length-prefixing libp2p protocols use; mesh/frame.ts). The request carries the canonical inputs and the stamping
// tick, with the mesh handshake (an HMAC with the mesh secret over sender, tick and the request's digest: only a
// mesh member can place work); the stream itself is authenticated by noise, so the remote peer id is the sender.
// The answer is the solver's output, its result digest and executed_by, signed by the executor's node key.
import { z } from 'zod';
import type { ErrorCode } from '../kernel/errors.js';
import { executedBySchema } from './executed-by.js';
import type { SolverOutput } from '../solvers/types.js';
import type { ExecutedBy } from '../records/types.js';

export { encodeFrame, FrameError, readFrame, writeFrame } from '../mesh/frame.js';

export const EXEC_PROTOCOL = '/svc/exec/1.0.0';
/** A request carries at most the 1 MiB of inputs a request body may hold, plus its envelope. */
export const MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** An answer carries the outputs (fields at most 512 × 512 samples as text). */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

const HEX64 = /^[0-9a-f]{64}$/;

export const execRequestSchema = z
  .object({
    v: z.literal(1),
    solver: z.string().min(1).max(64),
    inputs: z.record(z.string(), z.unknown()),
    request_digest: z.string().regex(HEX64),
    /** The tick the home placed the run at (executed_by signs it). */
    svcond: z.number().int().min(0),
    /** Seconds the home waits for the run (the executor's own tier limit caps it too). */
    time_limit_s: z.number().positive().max(3600),
    /** 'v1=' + HMAC(mesh secret, `${home}|${svcond}|${request_digest}`) (mesh/wire.ts handshakeFor). */
    handshake: z.string().min(1).max(128),
  })
  .strict();
export type ExecRequest = z.infer<typeof execRequestSchema>;

const finite = z.number().refine(Number.isFinite, 'finite');
const checkPart = z.object({
  name: z.string(),
  quantity: z.string(),
  computed: finite,
  reference: finite,
  rel_error: finite,
  tolerance: finite,
  passed: z.boolean(),
});
const checkSchema = checkPart.extend({ parts: z.array(checkPart).optional(), refused: z.string().optional() }).strict();

/** A SolverOutput as JSON carries it (solvers/types.ts): what the home accepts as an executor's body. */
export const solverOutputSchema = z
  .object({
    mode: z.string().nullable(),
    value: finite,
    unit: z.string().max(64),
    uncertainty: finite.optional(),
    output_class: z.enum(['field', 'spectrum', 'profile', 'scalar']),
    rule8: z.union([z.array(finite), z.array(z.array(finite)), z.null()]),
    rule8_array: z.string().nullable(),
    outputs: z.record(z.string(), z.unknown()),
    check: checkSchema,
    state: z.unknown().optional(),
    receipt_fields: z.record(z.string(), z.object({ value: finite, unit: z.string() }).strict()).optional(),
  })
  .strict();

export const execAnswerSchema = z.union([
  z
    .object({
      ok: z.literal(true),
      output: solverOutputSchema,
      result_digest: z.string().regex(HEX64),
      executed_by: executedBySchema,
    })
    .strict(),
  z.object({ ok: z.literal(false), code: z.string().min(1).max(64), message: z.string().max(1000) }).strict(),
]);

export type ExecAnswer = { ok: true; output: SolverOutput; result_digest: string; executed_by: ExecutedBy } | { ok: false; code: string; message: string };

/** Codes an executor answers with when it does not run a request. */
export const EXEC_REFUSALS = {
  notContributing: 'SVC_NOT_CONTRIBUTING',
  /** Its operator switched mode while the run was on: the requester re-places it. */
  preempted: 'SVC_PREEMPTED',
  badRequest: 'SVC_INVALID_INPUT',
  badHandshake: 'INVALID_HANDSHAKE',
  failed: 'SVC_SOLVER_ERROR',
  unsealable: 'SVC_TOLERANCE_GATE',
  /** Its queue for the requesting node is full: the requester runs it itself and keeps the peer. */
  busy: 'SVC_RATE_LIMIT',
  /** The requester's caller left while the run still waited here for a worker (/svc/exec/1.1.0's cancel): not run. */
  cancelled: 'SVC_BAD_REQUEST',
} as const satisfies Record<string, ErrorCode>;
