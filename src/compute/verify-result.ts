// Checking a sealed result: the one function behind POST /api/svc/verify and `svc-node verify` (and a challenge
// that carries the result it challenges, consensus/result-lookup.ts), so every verifier checks the same things in
// the same order and names the same reasons (docs/protocol.md §3): the proof (svcProof, the mesh's receipt key),
// the tick receipt, the sealing node's signature (seal_signature, the key inside `node`), that the sealer is a node
// the verifier knows, and result_digest recomputed from the body's own request and outputs (§5).
import { canonicalDigest, canonicalJson } from '../kernel/canonical.js';
import { hexEqual, hmacHex, sealSigningText, SEAL_SIGNATURE, verifyBody } from '../kernel/receipt.js';
import { solverResultDigest } from './result-digest.js';

/** Why a body is not a valid sealed result: a closed list, stable across versions (clients match on it). */
export const VERIFY_REASONS = {
  not_a_result: 'the body is not a result object',
  proof: 'svcProof does not match the body under this receipt key',
  receipt: 'the tick receipt (svcond_receipt) is missing or its HMAC does not match',
  seal_signature: 'seal_signature is missing or is not the Ed25519 signature of the body by the node named in `node`',
  sealer_unknown: 'the node named in `node` is not a node this verifier knows (a mesh member, or one given to it)',
  result_digest: "result_digest is not the digest of the body's own request and outputs",
} as const;
export type VerifyReason = keyof typeof VERIFY_REASONS;

/** What a verifier knows beyond the body: the receipt key, and the nodes it accepts as sealers. */
export interface ResultVerifier {
  receiptKey: Buffer;
  /** Is this peer id a node known to the verifier's mesh (or, offline, one it was given)? */
  isKnownNode: (node: string) => boolean;
  /** base64 Ed25519 signature check by a peer id's embedded key (mesh/wire.ts verifyText). */
  verifySignature: (signer: string, text: string, signature: string) => boolean;
}

export interface ResultVerification {
  /** Every check passed. */
  valid: boolean;
  proof_valid: boolean;
  receipt_valid: boolean;
  seal_signature_valid: boolean;
  result_digest_valid: boolean;
  /** The node whose signature the body carries (its `node`), or null when the signature does not verify. */
  sealed_by: string | null;
  sealer_known: boolean;
  result_id: unknown;
  svcond: unknown;
  /** The first failed check's code (VERIFY_REASONS), null when valid. */
  reason: VerifyReason | null;
  /** Every failed check, in the order they are made. */
  reasons: { code: VerifyReason; message: string }[];
}

export function verifySealedResult(v: ResultVerifier, body: unknown): ResultVerification {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    const none = { proof_valid: false, receipt_valid: false, seal_signature_valid: false, result_digest_valid: false, sealed_by: null, sealer_known: false };
    return { valid: false, ...none, result_id: null, svcond: null, reason: 'not_a_result', reasons: [reasonOf('not_a_result')] };
  }
  const b = body as Record<string, unknown>;
  const proofValid = verifyBody(v.receiptKey, b);
  const receiptValid = tickReceiptHolds(v.receiptKey, b);
  const signer = typeof b.node === 'string' ? b.node : null;
  const signature = b[SEAL_SIGNATURE];
  let signatureValid = false;
  if (signer !== null && typeof signature === 'string') {
    try {
      signatureValid = v.verifySignature(signer, sealSigningText(b), signature);
    } catch {
      signatureValid = false;
    }
  }
  const sealerKnown = signatureValid && v.isKnownNode(signer!);
  const digestValid = resultDigestHolds(b);
  const failed: VerifyReason[] = [];
  if (!proofValid) failed.push('proof');
  if (!receiptValid) failed.push('receipt');
  if (!signatureValid) failed.push('seal_signature');
  else if (!sealerKnown) failed.push('sealer_unknown');
  if (!digestValid) failed.push('result_digest');
  return {
    valid: failed.length === 0,
    proof_valid: proofValid,
    receipt_valid: receiptValid,
    seal_signature_valid: signatureValid,
    result_digest_valid: digestValid,
    sealed_by: signatureValid ? signer : null,
    sealer_known: sealerKnown,
    result_id: b.result_id ?? null,
    svcond: b.svcond ?? null,
    reason: failed[0] ?? null,
    reasons: failed.map(reasonOf),
  };
}

function reasonOf(code: VerifyReason): { code: VerifyReason; message: string } {
  return { code, message: VERIFY_REASONS[code] };
}

/** §4: the receipt's HMAC over the receipt without it plus the body's value, unit and result_digest. */
function tickReceiptHolds(receiptKey: Buffer, b: Record<string, unknown>): boolean {
  const r = b.svcond_receipt;
  if (!r || typeof r !== 'object' || Array.isArray(r)) return false;
  const { hmac, ...base } = r as Record<string, unknown>;
  try {
    return hexEqual(hmac, hmacHex(receiptKey, canonicalJson({ ...base, value: b.value, unit: b.unit, result_digest: b.result_digest })));
  } catch {
    return false;
  }
}

/**
 * §5: result_digest recomputed from the body's own members — a chain from its domain, operators, resolved inputs,
 * value and unit; a solver run from its solver, inputs, value, unit and outputs; a sealed event is its payload's
 * digest. Any other kind names no digest rule and fails.
 */
export function recomputedResultDigest(b: Record<string, unknown>): string | null {
  try {
    if (b.kind === 'compute')
      return canonicalDigest({ operators: b.operators, domain: b.domain, inputs: b.inputs, value: b.value, unit: b.unit, fields: null });
    if (b.kind === 'solver') {
      if (typeof b.solver !== 'string' || !b.inputs || typeof b.inputs !== 'object' || Array.isArray(b.inputs)) return null;
      if (typeof b.value !== 'number' || typeof b.unit !== 'string') return null;
      return solverResultDigest(b.solver, b.inputs as Record<string, unknown>, { value: b.value, unit: b.unit }, b.outputs);
    }
    if (b.kind === 'sealed_event') return typeof b.payload_sha256 === 'string' ? b.payload_sha256 : null;
  } catch {
    // A member with no canonical form (it cannot come from JSON, but a caller may pass any object).
  }
  return null;
}

function resultDigestHolds(b: Record<string, unknown>): boolean {
  const expected = recomputedResultDigest(b);
  return expected !== null && typeof b.result_digest === 'string' && b.result_digest === expected;
}
