// `executed_by` (architecture.md §6): which contributing node executed a run and the bond it had at stake, signed by
// that node's Ed25519 key (its peer id embeds the public key, so anyone checks it offline). The signature covers
//   canonicalJson({attests: 'execution', node, bond_id, svcond, request_digest, result_digest})
// — the request (compute/result-digest.ts), the answer, the bond and the tick the run was placed at — so it cannot be
// moved to another result, another bond or another node. The sealed body carries the record as its `executed_by`
// member (null when the executing node was not contributing); its result_digest is the body's own.
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import type { ExecutedBy } from '../records/types.js';
import { BOND_ID_PATTERN } from './bonds.js';

const HEX64 = /^[0-9a-f]{64}$/;

export const executedBySchema = z
  .object({
    node: z.string().min(1).max(128),
    bond_id: z.string().regex(BOND_ID_PATTERN),
    svcond: z.number().int().min(0),
    request_digest: z.string().regex(HEX64),
    signature: z.string().min(1).max(128),
  })
  .strict();

/** The exact text a node signs for a run it executed. */
export function executionText(e: Omit<ExecutedBy, 'signature'>, resultDigest: string): string {
  return canonicalJson({
    attests: 'execution',
    node: e.node,
    bond_id: e.bond_id,
    svcond: e.svcond,
    request_digest: e.request_digest,
    result_digest: resultDigest,
  });
}

export function signExecution(sign: (text: string) => string, e: Omit<ExecutedBy, 'signature'>, resultDigest: string): ExecutedBy {
  return { node: e.node, bond_id: e.bond_id, svcond: e.svcond, request_digest: e.request_digest, signature: sign(executionText(e, resultDigest)) };
}

/** Does `e` verify as signed by its node for `resultDigest`? (verify: mesh/wire.ts verifyText.) */
export function verifyExecution(verify: (signer: string, text: string, signature: string) => boolean, e: ExecutedBy, resultDigest: string): boolean {
  return verify(e.node, executionText(e, resultDigest), e.signature);
}
