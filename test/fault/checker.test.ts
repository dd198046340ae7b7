// The fault run's checker on small hand-made histories: one that holds every property, and for each property a
// history or a final state that breaks it (and only it, where the property allows).
import { describe, expect, it } from 'vitest';
import {
  acknowledgedWritesPresent,
  checkHistory,
  creditsConserved,
  noDoubleApplication,
  noNegativeBalance,
  oneCertifiedEntryPerSlot,
} from '../helpers/fault/checker.js';
import type { FinalState, Operation } from '../helpers/fault/history.js';

const A = 'zid_' + 'a'.repeat(32);
const B = 'zid_' + 'b'.repeat(32);

function spend(id: string, zid: string, n: number, outcome: Operation['outcome'] = 'ok'): Operation {
  return {
    id,
    zid,
    node: 0,
    call: 'spend',
    body: {},
    invoked_at: n,
    completed_at: n + 1,
    outcome,
    status: outcome === 'ok' ? 200 : null,
    response:
      outcome === 'ok'
        ? {
            result_id: `res_${id}`,
            envelope: { token_id: `env_${id}` },
            audit: { seq: n, hash: `h${n}`, slug: 'm-a' },
            tally_charge: { balance_after: { free: 0, paid: 10 - n } },
          }
        : { failure: 'socket hang up' },
  };
}

function transfer(id: string, from: string, to: string, tokens: string[], outcome: Operation['outcome'] = 'ok'): Operation {
  return {
    id,
    zid: from,
    node: 1,
    call: 'transfer',
    body: { to, count: tokens.length },
    invoked_at: 10,
    completed_at: 11,
    outcome,
    status: outcome === 'ok' ? 202 : null,
    response: outcome === 'ok' ? { transfer_id: `xfer_${id}`, to, token_ids: tokens } : { failure: 'timeout' },
  };
}

/**
 * A granted 10 credits, spent 3 (three envelopes: s1, s2, s3 at chain rows 1..3) and sent env_s1 to B (homed on the other
 * node) in transfer t1. Node 0 sealed 3 results; its charges burned 3 (⌊20 % of 3⌋ = 0 to the foundation).
 */
function history(): Operation[] {
  return [spend('s1', A, 1), spend('s2', A, 2), spend('s3', A, 3), transfer('t1', A, B, ['env_s1'])];
}

function finalState(): FinalState {
  const view = { transfer_id: 'xfer_t1', state: 'delivered', from: A, to: B, token_ids: ['env_s1'], created_unix_ms: 100 };
  return {
    identities: [
      {
        zid: A,
        home: 0,
        slug: 'm-a',
        balance: { free: 0, paid: 7 },
        envelopes: [
          { token_id: 'env_s2', owner: A, result_id: 'res_s2' },
          { token_id: 'env_s3', owner: A, result_id: 'res_s3' },
        ],
        chain: [1, 2, 3].map((seq) => ({ seq, hash: `h${seq}`, transitionType: 'compute_sealed' })),
      },
      {
        zid: B,
        home: 1,
        slug: 'm-b',
        balance: { free: 0, paid: 0 },
        envelopes: [{ token_id: 'env_s1', owner: B, result_id: 'res_s1', transfer_id: 'xfer_t1' }],
        chain: [],
      },
    ],
    nodes: [
      { nodeId: 'n0', burned: 3, foundation: 0, sealed: 3 },
      { nodeId: 'n1', burned: 0, foundation: 0, sealed: 0 },
    ],
    results: { res_s1: true, res_s2: true, res_s3: true },
    transfers: [{ id: 'xfer_t1', atSender: view, atReceiver: { ...view } }],
    ledger: { grants: 10, claims: 0, initial: 0 },
    certified: [],
  };
}

const violationsOf = (r: { ok: boolean; violations: string[] }) => (r.ok ? [] : r.violations);

describe('the fault checker', () => {
  it('finds nothing wrong in a history the final state agrees with', () => {
    const results = checkHistory(history(), finalState());
    expect(results.map((r) => r.name)).toEqual([
      'acknowledged writes present',
      'no balance below zero',
      'credits conserved',
      'no transfer applied twice',
      'one certified entry per (zid, epoch, seq)',
    ]);
    for (const r of results) expect(r, r.name).toEqual({ name: r.name, ok: true, violations: [] });
  });

  describe('acknowledged writes present', () => {
    it('names a lost sealed result, a lost audit row and an audit row rewritten', () => {
      const s = finalState();
      s.results.res_s2 = false;
      s.identities[0]!.chain = [
        { seq: 1, hash: 'h1', transitionType: 'compute_sealed' },
        { seq: 3, hash: 'other', transitionType: 'compute_sealed' },
      ];
      expect(violationsOf(acknowledgedWritesPresent(history(), s))).toEqual([
        's2: sealed result res_s2 is missing',
        's2: audit row 2 of ' + A + ' is missing',
        's3: audit row 3 of ' + A + ' has hash other, acknowledged h3',
      ]);
    });

    it("names an acknowledged spend's envelope that nobody holds", () => {
      const s = finalState();
      s.identities[0]!.envelopes = s.identities[0]!.envelopes.filter((e) => e.token_id !== 'env_s3');
      expect(violationsOf(acknowledgedWritesPresent(history(), s))).toEqual(['s3: envelope env_s3 is held by nobody']);
    });

    it('names a transfer missing at the receiver, or not delivered at the sender after recovery', () => {
      const s = finalState();
      s.transfers[0] = { ...s.transfers[0]!, atSender: { ...s.transfers[0]!.atSender!, state: 'pending' }, atReceiver: null };
      expect(violationsOf(acknowledgedWritesPresent(history(), s))).toEqual([
        "t1: transfer xfer_t1 is pending at the sender's home after recovery",
        "t1: transfer xfer_t1 is missing at the receiver's home",
      ]);
    });

    it('names a transferred envelope found back with its sender, and accepts one a later transfer moved on', () => {
      const back = finalState();
      back.identities[1]!.envelopes = [];
      back.identities[0]!.envelopes.push({ token_id: 'env_s1', owner: A, result_id: 'res_s1' });
      expect(violationsOf(acknowledgedWritesPresent(history(), back))).toEqual([`t1: envelope env_s1 sent to ${B} is held by ${A}`]);

      // B sent it back in t2, whose answer was lost (unknown): the envelope with A is where t2 put it.
      const onward = structuredClone(back);
      const t2 = { transfer_id: 'xfer_t2', state: 'delivered', from: B, to: A, token_ids: ['env_s1'], created_unix_ms: 200 };
      onward.identities[0]!.envelopes[2]!.transfer_id = 'xfer_t2';
      onward.transfers.push({ id: 'xfer_t2', atSender: t2, atReceiver: t2 });
      const ops = [...history(), transfer('t2', B, A, ['env_s1'], 'unknown')];
      expect(acknowledgedWritesPresent(ops, onward).ok).toBe(true);
    });

    it('asks nothing of an operation whose outcome is unknown or refused', () => {
      const ops = [...history(), spend('s4', A, 4, 'unknown'), { ...spend('s5', A, 5), outcome: 'error' as const, status: 402 }];
      expect(acknowledgedWritesPresent(ops, finalState()).ok).toBe(true);
    });
  });

  it('no balance below zero: names a negative wallet and a negative balance an acknowledged spend reported', () => {
    const s = finalState();
    s.identities[1]!.balance = { free: 0, paid: -1 };
    const ops = history();
    (ops[2]!.response as { tally_charge: { balance_after: { paid: number } } }).tally_charge.balance_after.paid = -2;
    expect(violationsOf(noNegativeBalance(ops, s))).toEqual([`${B}: balance free 0, paid -1`, 's3: acknowledged with balance free 0, paid -2']);
  });

  it('credits conserved: names credits that appeared (a refund twice) or vanished (a charge without its split)', () => {
    const more = finalState();
    more.identities[0]!.balance.paid = 8;
    expect(violationsOf(creditsConserved(more))).toEqual(['balances 8 + foundation 0 + burned 3 = 11, but grants 10 + claims 0 + initial 0 = 10']);
    const less = finalState();
    less.nodes[0]!.burned = 2;
    expect(creditsConserved(less).ok).toBe(false);
    const withFoundation = finalState();
    withFoundation.nodes[0] = { ...withFoundation.nodes[0]!, burned: 2, foundation: 1 };
    expect(creditsConserved(withFoundation).ok).toBe(true);
  });

  describe('no transfer applied twice', () => {
    it('names an envelope held by two identities (credited without its debit)', () => {
      const s = finalState();
      s.identities[0]!.envelopes.push({ token_id: 'env_s1', owner: A, result_id: 'res_s1' });
      expect(violationsOf(noDoubleApplication(s))).toEqual([`envelope env_s1 is held 2 times (${A}, ${B})`]);
    });

    it('names a transfer whose envelopes arrived twice, and more envelopes than results sealed', () => {
      const s = finalState();
      s.identities[1]!.envelopes.push({ token_id: 'env_dup', owner: B, result_id: 'res_s1', transfer_id: 'xfer_t1' });
      expect(violationsOf(noDoubleApplication(s))).toEqual([
        'transfer xfer_t1 moved 1 envelopes and 2 arrived',
        '4 distinct envelopes are held, and 3 results were sealed',
      ]);
    });

    it('leaves out the results the harness sealed for identities it does not read (the operators’ bonds)', () => {
      const s = finalState();
      s.nodes[1]!.sealed = 2;
      expect(violationsOf(noDoubleApplication(s))).toEqual(['3 distinct envelopes are held, and 5 results were sealed']);
      s.ledger.setupSeals = 2;
      expect(noDoubleApplication(s).ok).toBe(true);
    });

    it('names an arrival no home knows, and an envelope lost (fewer held than sealed)', () => {
      const s = finalState();
      s.transfers = [];
      s.identities[0]!.envelopes.pop();
      expect(violationsOf(noDoubleApplication(s))).toEqual([
        'transfer xfer_t1 brought 1 envelopes, and neither home knows it',
        '2 distinct envelopes are held, and 3 results were sealed',
      ]);
    });
  });

  it('one certified entry per (zid, epoch, seq): names a slot certified twice with different entries', () => {
    const e = (seq: number, hash: string, holder: string, epoch = 1) => ({ zid: A, epoch, seq, hash, holder });
    expect(oneCertifiedEntryPerSlot([]).ok).toBe(true);
    // The same entry held by several custodians is one entry.
    expect(oneCertifiedEntryPerSlot([e(1, 'x', 'n0'), e(1, 'x', 'n1'), e(2, 'y', 'n0'), e(2, 'y', 'n2')]).ok).toBe(true);
    // A given-up proposal held by one custodian beside the entry certified at its slot: no violation.
    expect(oneCertifiedEntryPerSlot([e(2, 'given-up', 'n1'), e(2, 'y', 'n0'), e(2, 'y', 'n2')]).ok).toBe(true);
    // Two entries of one slot each held by a majority: a violation; the same slot in another epoch is another slot.
    expect(
      violationsOf(
        oneCertifiedEntryPerSlot([
          e(1, 'x', 'n0'),
          e(1, 'x', 'n1'),
          e(1, 'z', 'n2'),
          e(1, 'z', 'n3'),
          e(2, 'y', 'n0'),
          e(2, 'y', 'n1'),
          e(2, 'w', 'n1', 2),
          e(2, 'w', 'n2', 2),
        ]),
      ),
    ).toEqual([`${A}/1/1 is certified as x (held by n0, n1) and z (held by n2, n3)`]);
    // One holder counted once, however many times its entries are read.
    expect(oneCertifiedEntryPerSlot([e(3, 'x', 'n0'), e(3, 'x', 'n1'), e(3, 'z', 'n2'), e(3, 'z', 'n2')]).ok).toBe(true);
    // With custody sets of five, three holders make an entry certified.
    expect(oneCertifiedEntryPerSlot([e(1, 'x', 'n0'), e(1, 'x', 'n1'), e(1, 'z', 'n2'), e(1, 'z', 'n3')], 3).ok).toBe(true);
  });
});
