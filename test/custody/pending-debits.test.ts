// The certificate a new home makes again for a pending debit of the chain it took (pending-debits.ts): from
// signatures of the custody set of the debit's epoch. The new home and its promisers may all be outside that set (the
// identity moved twice since): the set's own custodians, asked for the entry they signed, give the majority.
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { beforeAll, describe, expect, it } from 'vitest';
import { debitCertificateFault } from '../../src/custody/debit-certificate.js';
import type { FetchChain } from '../../src/custody/client.js';
import { custodySetOf, type CustodySet } from '../../src/custody/custody-set.js';
import { entryHash, GENESIS_ENTRY_HASH, signingTextOf, tokensDigest, type CustodyEntry } from '../../src/custody/entry.js';
import { recertifyDebits } from '../../src/custody/pending-debits.js';
import type { SignedPromise } from '../../src/custody/promise.js';
import { recordsDigest, type ChainAnswer, type EntryRecords } from '../../src/custody/protocol.js';
import { signText, verifyText } from '../../src/mesh/wire.js';

const X = `zid_${'a'.repeat(32)}`;
const Y = `zid_${'b'.repeat(32)}`;

interface Node {
  id: string;
  key: PrivateKey;
}

let nodes: Node[];
const sign = (n: Node, hash: string) => ({ node: n.id, signature: signText(n.key, signingTextOf(hash)) });

beforeAll(async () => {
  nodes = await Promise.all(
    [0, 1, 2, 3, 4].map(async () => {
      const key = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
      return { id: peerIdFromPrivateKey(key as never).toString(), key };
    }),
  );
});

describe('a pending debit of a taken chain', () => {
  it('is certified again by the custodians of its epoch when neither the new home nor its promisers are of that set', async () => {
    // The debit's epoch: home `old`, its set `old` and two others; the new home and its promiser are the other two.
    const old = nodes[0]!;
    const firstSet = custodySetOf(
      X,
      old.id,
      nodes.map((n) => n.id),
      3,
    );
    const [c1, c2] = firstSet.custodians.slice(1).map((id) => nodes.find((n) => n.id === id)!) as [Node, Node];
    const [self, promiser] = nodes.filter((n) => !firstSet.custodians.includes(n.id)) as [Node, Node];
    const records: EntryRecords = {
      v: 1,
      ops: [
        ['put', 'transfers', 'xfer_1', JSON.stringify({ from: X, to: Y })],
        ['put', 'transfer_outbox', 'xfer_1', '"xfer_1"'],
      ],
    };
    const entry: CustodyEntry = {
      v: 1,
      zid: X,
      epoch: 1,
      seq: 1,
      prev_hash: GENESIS_ENTRY_HASH,
      kind: 'transfer',
      records: recordsDigest(records),
      balance: { free: 0, paid: 0 },
      transfer: { id: 'xfer_1', side: 'debit', party: Y, amount: 1, tokens: tokensDigest(['env_1']) },
    };
    const hash = entryHash(entry);
    // The chain taken from the promiser carries its signature only (a custodian of a later epoch's set).
    const chain = [{ entry, hash, signatures: [sign(promiser, hash)], records }];
    const promises = [promiser, self].map((n): SignedPromise => ({
      promise: { zid: X, epoch: 3, candidate: self.id, head: { epoch: 2, seq: 2, hash: 'ab'.repeat(32) } },
      node: n.id,
      signature: 'x',
    }));
    // Each node answers a fetch with the entry and its own signature of it; `old` is down.
    const asked: string[] = [];
    const fetch: FetchChain = (node) => {
      asked.push(node);
      if (node === old.id) return Promise.reject(new Error('down'));
      const n = nodes.find((m) => m.id === node)!;
      const answer: ChainAnswer = {
        v: 1,
        head: { epoch: 1, seq: 1, hash },
        links: [{ entry, records, signatures: [sign(n, hash)], certificate: null }],
        more: false,
      };
      return Promise.resolve(answer);
    };
    const setAt = (epoch: number): Promise<CustodySet | null> => Promise.resolve(epoch === 1 ? firstSet : null);
    const [debit] = await recertifyDebits(
      { self: self.id, sign: (text) => signText(self.key, text), verify: verifyText, fetch, timeoutMs: 1000 },
      X,
      setAt,
      chain,
      promises,
    );
    expect(debit!.transferId).toBe('xfer_1');
    expect(debit!.certificate).not.toBeNull();
    expect(new Set(debit!.certificate!.signatures.map((s) => s.node))).toEqual(new Set([c1.id, c2.id]));
    expect(asked).toEqual(expect.arrayContaining([c1.id, c2.id]));
    // The receiver's check, under the set of the debit's epoch, holds.
    const credit = { zid: Y, transfer: { ...entry.transfer!, side: 'credit' as const, party: X } };
    const fault = await debitCertificateFault(debit!.certificate, credit, {
      members: () => nodes.map((n) => n.id),
      replicas: 3,
      configAt: (_zid, epoch) => Promise.resolve(epoch === 1 ? { home: old.id } : null),
      verify: verifyText,
    });
    expect(fault).toBeNull();
  });
});
