// A home's lookup of one debit in its certified log (Replicator.loggedDebit), which a pending debit with no kept
// certificate is certified from: found in a log longer than a page, in any of its epochs, the newest copy first; none
// for a transfer id the log does not debit (a credit of the same id is not a debit).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { entryHash, GENESIS_ENTRY_HASH, type CustodyEntry } from '../../src/custody/entry.js';
import type { CertifiedEntry } from '../../src/custody/replicator.js';
import { composedNodes, composedReplicator, type ComposedNode } from '../helpers/composed-custodian.js';

const zid = 'zid_0123456789abcdef0123456789abcdef';
const other = 'zid_fedcba9876543210fedcba9876543210';
const DIGEST = 'a'.repeat(64);

let dir: string;
let nodes: ComposedNode[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-logged-debit-'));
  nodes = await composedNodes(dir, 1);
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

/** A chain of `count` entries of `zid`: seq s of epoch `epochOf(s)`, moving transfer `xfer_<s>` on `side(s)` (null: none). */
function chain(count: number, epochOf: (seq: number) => number, side: (seq: number) => 'debit' | 'credit' | null): CertifiedEntry[] {
  const out: CertifiedEntry[] = [];
  let prev = GENESIS_ENTRY_HASH;
  for (let seq = 1; seq <= count; seq++) {
    const s = side(seq);
    const entry: CustodyEntry = {
      v: 1,
      zid,
      epoch: epochOf(seq),
      seq,
      prev_hash: prev,
      kind: s === null ? 'envelope' : 'transfer',
      records: DIGEST,
      balance: null,
      transfer: s === null ? null : { id: `xfer_${seq}`, side: s, party: other, amount: 1, tokens: DIGEST },
    };
    const hash = entryHash(entry);
    out.push({ entry, hash, signatures: [], records: { v: 1, ops: [] }, certificate: null });
    prev = hash;
  }
  return out;
}

describe('the debit of a transfer in a home’s certified log', () => {
  it('is found however far from the head, in any epoch, and a credit or an unknown id is none', async () => {
    const home = nodes[0]!;
    const replicator = composedReplicator(home, () => [home.id], null);
    // 300 entries over three epochs; every seventh a debit, every eleventh (not seventh) a credit.
    const entries = chain(
      300,
      (seq) => (seq <= 100 ? 1 : seq <= 250 ? 2 : 3),
      (seq) => (seq % 7 === 0 ? 'debit' : seq % 11 === 0 ? 'credit' : null),
    );
    const [last, ...rest] = [entries.at(-1)!, ...entries.slice(0, -1)];
    await home.store.commit(replicator.adoptOps(rest, last));
    for (const seq of [7, 98, 105, 245, 294]) {
      const found = await replicator.loggedDebit(zid, `xfer_${seq}`);
      expect(found?.entry.seq, `xfer_${seq}`).toBe(seq);
      expect(found?.hash).toBe(entries[seq - 1]!.hash);
    }
    expect(await replicator.loggedDebit(zid, 'xfer_11')).toBeUndefined();
    expect(await replicator.loggedDebit(zid, 'xfer_999')).toBeUndefined();
    expect(await replicator.loggedDebit(other, 'xfer_7')).toBeUndefined();
  });
});
