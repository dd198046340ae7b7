// Offline check of an exported state-machine log (GET /api/chain/:slug/export; `svc-node verify-log`): the rows'
// hash chain, the RFC 6962 root of the rows against every signed checkpoint (signature by the home's peer id, which
// embeds its Ed25519 key: no node is asked), forks (two checkpoints of one home and size with different roots), and
// any inclusion or consistency proofs given, against the rows and the signed roots. Nothing here reads a clock.
import { verifyText } from '../mesh/wire.js';
import { checkpointText, type Checkpoint } from './checkpoints.js';
import { leafHash, MemoryTree, verifyConsistency, verifyInclusion } from './merkle.js';
import { GENESIS_HASH, rowHash, rowText, type AuditRow } from './service.js';

export const EXPORT_FORMAT = 'svc-chain-export/1';

export interface ExportedLog {
  format: string;
  slug: string;
  home: string;
  rows: AuditRow[];
  checkpoints: Checkpoint[];
}

export type ProofInput =
  | { seq?: number; leaf_index: number; tree_size: number; leaf_hash: string; audit_path: string[]; root_hash: string }
  | { tree_size_1: number; tree_size_2: number; root_hash_1: string; root_hash_2: string; consistency_path: string[] };

export interface LogReport {
  valid: boolean;
  slug: string | null;
  /**
   * Whose signatures the checkpoints carry: the document's home. Anyone can sign a log of their own making, so the
   * check means something only once this is the machine's home (`expected_home`, or compared by the reader).
   */
  home: string | null;
  /** The home the caller expects (`--home`); the log is valid only when `home` is it. Null when none was given. */
  expected_home: string | null;
  rows: number;
  /** Rows that form a sound chain from seq 1 (the tree covers these). */
  sound_rows: number;
  first_bad: null | { seq: number; reason: string };
  root_hash: string;
  checkpoints: { tree_size: number; root_hash: string; signature_valid: boolean; matches_rows: boolean | null }[];
  forks: { home: string; tree_size: number; root_hashes: [string, string] }[];
  proofs: { kind: 'inclusion' | 'consistency'; valid: boolean; anchored: boolean; reason: string | null }[];
}

const HEX64 = /^[0-9a-f]{64}$/;
/** A SHA-256 in standard base64 (RFC 4648 §4), as RFC 6962's JSON API writes hashes: 43 characters and one "=". */
const B64_32 = /^[A-Za-z0-9+/]{43}=$/;
/**
 * A proof's hash: lower-case hex (what the node answers by default, like every hash in its API) or base64 (what it
 * answers with ?encoding=base64, as RFC 6962 §4 writes them). The two cannot be confused: 64 hex digits are not a
 * base64 SHA-256 (44 characters ending in "="), so a proof in either is read without being told which.
 */
const hex = (s: unknown): Buffer | null => {
  if (typeof s !== 'string') return null;
  if (HEX64.test(s)) return Buffer.from(s, 'hex');
  if (B64_32.test(s)) {
    const b = Buffer.from(s, 'base64');
    return b.length === 32 ? b : null;
  }
  return null;
};
/** A hash as hex (how rows and checkpoints write them), whichever encoding it came in; null when it is not one. */
const asHex = (s: unknown): string | null => hex(s)?.toString('hex') ?? null;

export async function verifyLog(
  doc: unknown,
  proofs: unknown[] = [],
  verify: (signer: string, text: string, signature: string) => boolean = verifyText,
  expectedHome: string | null = null,
): Promise<LogReport> {
  const d = (doc ?? {}) as Partial<ExportedLog>;
  const rows = Array.isArray(d.rows) ? d.rows : [];
  const report: LogReport = {
    valid: false,
    slug: typeof d.slug === 'string' ? d.slug : null,
    home: typeof d.home === 'string' ? d.home : null,
    expected_home: expectedHome,
    rows: rows.length,
    sound_rows: 0,
    first_bad: null,
    root_hash: '',
    checkpoints: [],
    forks: [],
    proofs: [],
  };
  if (d.format !== EXPORT_FORMAT) report.first_bad = { seq: 0, reason: `not a ${EXPORT_FORMAT} document` };
  // 1. The hash chain, row by row; the tree takes the sound prefix.
  const tree = new MemoryTree();
  let prev = GENESIS_HASH;
  for (const [i, row] of rows.entries()) {
    if (report.first_bad) break;
    let reason: string | null = null;
    if (!row || typeof row !== 'object') reason = 'not a row';
    else if (row.seq !== i + 1) reason = `sequence gap: expected ${i + 1}, found ${String(row.seq)}`;
    else if (row.prev_hash !== prev) reason = 'prev_hash does not match the previous row';
    else if (rowHash(row) !== row.hash) reason = 'row hash does not match its contents';
    if (reason) {
      report.first_bad = { seq: i + 1, reason };
      break;
    }
    tree.push(leafHash(rowText(row)));
    prev = row.hash;
  }
  report.sound_rows = tree.size;
  report.root_hash = (await tree.root()).toString('hex');
  // 2. Checkpoints: signed by the home, and their roots those of the rows.
  const cps = Array.isArray(d.checkpoints) ? d.checkpoints : [];
  const byKey = new Map<string, Checkpoint>();
  for (const cp of cps) {
    const sigOk = typeof cp?.signature === 'string' && cp.slug === d.slug && cp.home === d.home && verify(cp.home, checkpointText(cp), cp.signature);
    const matches = Number.isSafeInteger(cp?.tree_size) && cp.tree_size <= tree.size ? (await tree.root(cp.tree_size)).toString('hex') === cp.root_hash : null;
    report.checkpoints.push({ tree_size: cp?.tree_size, root_hash: cp?.root_hash, signature_valid: sigOk, matches_rows: matches });
    if (!sigOk) continue;
    const key = `${cp.home}!${cp.tree_size}`;
    const other = byKey.get(key);
    if (other && other.root_hash !== cp.root_hash) {
      report.forks.push({ home: cp.home, tree_size: cp.tree_size, root_hashes: [other.root_hash, cp.root_hash].sort() as [string, string] });
    } else byKey.set(key, cp);
  }
  const signedRoot = (size: number) => [...byKey.values()].find((c) => c.tree_size === size)?.root_hash ?? null;
  // 3. Proofs given: valid as RFC 9162 proofs, and anchored (their roots are signed, their leaves are the rows').
  for (const p of proofs as Record<string, unknown>[]) {
    if (p && 'audit_path' in p) {
      const leaf = hex(p.leaf_hash);
      const root = hex(p.root_hash);
      const path = Array.isArray(p.audit_path) ? p.audit_path.map(hex) : [null];
      const index = Number(p.leaf_index);
      const size = Number(p.tree_size);
      const ok = !!leaf && !!root && path.every((x) => x) && verifyInclusion(index, size, leaf, path as Buffer[], root);
      const rowLeaf = Number.isSafeInteger(index) && index >= 0 && index < tree.levels[0]!.length ? tree.levels[0]![index]!.toString('hex') : null;
      const anchored = ok && signedRoot(size) === asHex(p.root_hash) && (rowLeaf === null || rowLeaf === asHex(p.leaf_hash));
      report.proofs.push({
        kind: 'inclusion',
        valid: ok,
        anchored,
        reason: ok ? (anchored ? null : 'root not signed by a checkpoint of this size, or leaf not the row') : 'proof does not verify',
      });
    } else if (p && 'consistency_path' in p) {
      const [r1, r2] = [hex(p.root_hash_1), hex(p.root_hash_2)];
      const path = Array.isArray(p.consistency_path) ? p.consistency_path.map(hex) : [null];
      const ok = !!r1 && !!r2 && path.every((x) => x) && verifyConsistency(Number(p.tree_size_1), Number(p.tree_size_2), r1, r2, path as Buffer[]);
      const anchored = ok && signedRoot(Number(p.tree_size_2)) === asHex(p.root_hash_2);
      report.proofs.push({
        kind: 'consistency',
        valid: ok,
        anchored,
        reason: ok ? (anchored ? null : 'second root not signed by a checkpoint of this size') : 'proof does not verify',
      });
    } else report.proofs.push({ kind: 'inclusion', valid: false, anchored: false, reason: 'not a proof' });
  }
  report.valid =
    report.first_bad === null &&
    (expectedHome === null || report.home === expectedHome) &&
    report.checkpoints.length > 0 &&
    report.checkpoints.every((c) => c.signature_valid && c.matches_rows === true) &&
    report.forks.length === 0 &&
    report.proofs.every((p) => p.valid && p.anchored);
  return report;
}
