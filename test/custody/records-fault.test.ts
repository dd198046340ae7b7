// What rides with an identity's entry (docs/protocol.md §19 "Records that travel"): its sealed result, the result's
// record, its counter record, its transfers and their outbox entries are the identity's; the same records of another
// identity are a fault (replica.ts recordsFault). And the outbox a taken chain leaves (pending-debits.ts).
import { describe, expect, it } from 'vitest';
import { recordsFault } from '../../src/custody/replica.js';
import { pendingDebitsOf } from '../../src/custody/pending-debits.js';
import type { CustodyEntry, EntryTransfer } from '../../src/custody/entry.js';
import type { EntryRecords, RecordOp } from '../../src/custody/protocol.js';

const X = `zid_${'a'.repeat(32)}`;
const Y = `zid_${'b'.repeat(32)}`;
const RESULT = 'res_100_0123456789abcdef';
const put = (sub: RecordOp[1], key: string, value: unknown): RecordOp => ['put', sub, key, JSON.stringify(value)];
const records = (...ops: RecordOp[]): EntryRecords => ({ v: 1, ops });

const seal = (owner: string, resultOwner = owner): RecordOp[] => [
  put('wallets', owner, { free: 0, paid: 9 }),
  put('envelopes', 'env_1', { token_id: 'env_1', owner, result_id: RESULT }),
  put('env_owner', `${owner}!0000000000000001`, 'env_1'),
  ['put64', 'results', RESULT, Buffer.from('{"sealed":true}').toString('base64')],
  put('result_index', RESULT, { owner: resultOwner, published: true, row: '000000000100!000000001' }),
  put('record', '000000000100!000000001', { result_id: RESULT, owner: resultOwner }),
  put('record_by_owner', `${resultOwner}!000000000100!000000001`, '000000000100!000000001'),
  put('counters', `#id:${owner}`, { [`env:${owner}`]: 1 }),
];

describe('the records that ride with an entry', () => {
  it("are the identity's: its sealed result and record, its counters, the transfers it sends or receives", () => {
    expect(recordsFault(X, records(...seal(X)))).toBeNull();
    const sent = records(
      put('env_owner', `${X}!0000000000000001`, 'env_1'),
      put('transfers', 'xfer_1', { from: X, to: Y }),
      put('transfer_outbox', 'xfer_1', 'xfer_1'),
    );
    expect(recordsFault(X, sent)).toBeNull();
    expect(recordsFault(Y, records(put('transfers', 'xfer_1', { from: X, to: Y, state: 'delivered' })))).toBeNull();
  });

  it("are refused when they are another identity's", () => {
    // A result no envelope of the identity names.
    expect(
      recordsFault(Y, records(...seal(X).filter((op) => op[1] !== 'wallets' && op[1] !== 'env_owner' && op[1] !== 'counters'), put('wallets', Y, {}))),
    ).toMatch(/a result no envelope of/);
    expect(
      recordsFault(X, records(...seal(X).filter((op) => op[1] !== 'record_by_owner'), put('result_index', 'res_1_0123456789abcdef', { owner: Y }))),
    ).toMatch(/result_index record of another owner/);
    expect(recordsFault(X, records(put('record', 'k', { owner: Y })))).toMatch(/record record of another owner/);
    expect(recordsFault(X, records(put('record_by_owner', `${Y}!k`, 'k')))).toMatch(/another identity's record_by_owner/);
    expect(recordsFault(X, records(put('counters', `#id:${Y}`, {})))).toMatch(/another counter record/);
    expect(recordsFault(X, records(put('counters', '#totals', {})))).toMatch(/another counter record/);
    expect(recordsFault(X, records(put('transfers', 'xfer_1', { from: Y, to: `zid_${'c'.repeat(32)}` })))).toMatch(/a transfer of other parties/);
    // The outbox entry of a transfer the identity receives, or of none in the records.
    expect(recordsFault(Y, records(put('transfers', 'xfer_1', { from: X, to: Y }), put('transfer_outbox', 'xfer_1', 'xfer_1')))).toMatch(/an outbox entry/);
    expect(recordsFault(X, records(put('transfer_outbox', 'xfer_2', 'xfer_2')))).toMatch(/an outbox entry/);
    // Only written: a rider is never deleted by an entry.
    expect(recordsFault(X, records(['del', 'results', RESULT]))).toMatch(/a del of results/);
  });
});

describe('the pending debits of a taken chain', () => {
  const debit = (id: string, seq: number, ops: RecordOp[]) => {
    const transfer: EntryTransfer = { id, side: 'debit', party: Y, amount: 1, tokens: '0'.repeat(64) };
    const entry = {
      v: 1,
      zid: X,
      epoch: 1,
      seq,
      prev_hash: '0'.repeat(64),
      kind: 'transfer',
      records: '0'.repeat(64),
      balance: null,
      transfer,
    } as CustodyEntry;
    return { entry, hash: String(seq), signatures: [], records: records(...ops) };
  };

  it('are the debits whose records put their outbox entry', () => {
    const chain = [
      debit('xfer_1', 1, [put('transfers', 'xfer_1', { from: X, to: Y })]),
      debit('xfer_2', 2, [put('transfers', 'xfer_2', { from: X, to: Y }), put('transfer_outbox', 'xfer_2', 'xfer_2')]),
      debit('xfer_3', 3, [put('transfers', 'xfer_4', { from: X, to: Y }), put('transfer_outbox', 'xfer_4', 'xfer_4')]),
      { ...debit('xfer_5', 4, [put('transfer_outbox', 'xfer_5', 'xfer_5')]), entry: { ...debit('xfer_5', 4, []).entry, transfer: null } },
    ];
    expect([...pendingDebitsOf(chain).keys()]).toEqual(['xfer_2']);
    expect(pendingDebitsOf(chain).get('xfer_2')!.entry.seq).toBe(2);
  });
});
