// The transfers in flight of an identity taken over (docs/decisions.md "Custody"): a debit's records carry its
// transfer record (pending, with its envelopes) and its outbox entry, so the chain a new home takes holds the
// identity's outbox. Its debit certificates do not travel (a certificate signs the entry that carries the records):
// the new home makes each pending debit's certificate again, over the same entry, from signatures of the custody set
// of the debit's epoch: its own (a custodian of that set, it holds the entry as certified), those the taken
// chain carries, and, when these fall short of that set's majority, those of the other promisers that hold the entry,
// then those of that set's other custodians.
import { fetchChain, type FetchChain } from './client.js';
import type { CustodySet } from './custody-set.js';
import type { DebitCertificate } from './debit-certificate.js';
import { signingTextOf, verifyEntrySignature, type CustodyEntry, type EntrySignature } from './entry.js';
import type { SignedPromise, Verify } from './promise.js';
import type { EntryRecords } from './protocol.js';

/** A transfer the taken chain leaves pending, with the certificate made for it (null: too few signatures). */
export interface PendingDebit {
  transferId: string;
  certificate: DebitCertificate | null;
}

interface HeldDebit {
  entry: CustodyEntry;
  hash: string;
  signatures: EntrySignature[];
}

/**
 * The debit entries of a chain whose records put their outbox entry, by transfer id: a delivery's settlement is no
 * entry, so every cross-node debit of the chain is pending at the node that takes it (a delivered one is answered as
 * a duplicate).
 */
export function pendingDebitsOf<T extends HeldDebit & { records: EntryRecords }>(chain: readonly T[]): Map<string, T> {
  const out = new Map<string, T>();
  for (const c of chain) {
    const t = c.entry.transfer;
    if (t?.side !== 'debit') continue;
    if (c.records.ops.some((op) => op[0] === 'put' && op[1] === 'transfer_outbox' && op[2] === t.id)) out.set(t.id, c);
  }
  return out;
}

export interface RecertifyDeps {
  self: string;
  sign: (text: string) => string;
  verify: Verify;
  fetch: FetchChain;
  timeoutMs: number;
}

/**
 * The certificates of the pending debits of `chain`, each under the custody set of its debit's epoch (`setAt`: `set`,
 * the set of the epoch the failover ends, for that epoch; null for an epoch whose home is not known here), with this
 * node's signature first where it is of that set; promisers, then the set's other custodians, are asked for theirs only
 * when one falls short.
 */
export async function recertifyDebits(
  deps: RecertifyDeps,
  zid: string,
  setAt: (epoch: number) => Promise<CustodySet | null>,
  chain: readonly (HeldDebit & { records: EntryRecords })[],
  promises: readonly SignedPromise[],
): Promise<PendingDebit[]> {
  const pending = [...pendingDebitsOf(chain).entries()];
  if (pending.length === 0) return [];
  const sets = await Promise.all(pending.map(([, c]) => setAt(c.entry.epoch)));
  const signers = pending.map(([, c], i) => {
    const set = sets[i];
    const held = new Map<string, string>();
    if (!set) return held;
    if (set.custodians.includes(deps.self)) held.set(deps.self, deps.sign(signingTextOf(c.hash)));
    for (const s of c.signatures) if (set.custodians.includes(s.node) && verifyEntrySignature(deps.verify, c.hash, s)) held.set(s.node, s.signature);
    return held;
  });
  const short = (i: number) => sets[i] !== null && signers[i]!.size < sets[i]!.majority;
  // The first seq whose certificate falls short: a promiser whose head reaches it is asked for its signatures, then
  // the other custodians of the sets that fall short (a new home outside a debit's set, its promisers outside it too,
  // has no signature of that set but theirs: each holds the entry it signed and answers a fetch of the current home).
  const firstShort = Math.min(...pending.map(([, c], i) => (short(i) ? c.entry.seq : Infinity)));
  if (firstShort !== Infinity) {
    const reaching = promises.filter((p) => (p.promise.head?.seq ?? 0) >= firstShort).map((p) => p.node);
    const holders = pending.flatMap((_, i) => (short(i) ? sets[i]!.custodians : []));
    const promisers = new Set(promises.map((p) => p.node));
    for (const node of new Set([...reaching, ...holders.filter((n) => !promisers.has(n))])) {
      if (node === deps.self || !pending.some((_, i) => short(i) && sets[i]!.custodians.includes(node))) continue;
      const links = await fetchChain(deps.fetch, node, zid, firstShort, AbortSignal.timeout(deps.timeoutMs * 4)).catch(() => []);
      pending.forEach(([, c], i) => {
        if (!sets[i]?.custodians.includes(node)) return;
        for (const l of links) {
          if (l.entry.seq !== c.entry.seq) continue;
          const s = l.signatures.find((x) => x.node === node);
          if (s !== undefined && verifyEntrySignature(deps.verify, c.hash, s)) signers[i]!.set(node, s.signature);
        }
      });
    }
  }
  return pending.map(([transferId, c], i) => {
    const held = signers[i]!;
    if (sets[i] === null || held.size < sets[i]!.majority) return { transferId, certificate: null };
    return { transferId, certificate: { entry: c.entry, signatures: [...held].map(([node, signature]) => ({ node, signature })) } };
  });
}
