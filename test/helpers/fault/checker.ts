// The checker of a fault run: pure functions of the recorded history and the state read after recovery, one per
// property, each answering {name, ok, violations}. Unavailability during a fault is not a violation (with one copy per
// identity, a killed home's ledger is unreachable until it returns); loss, double application, a negative balance and
// credits that appear or vanish are.
import type { CertifiedEntry, FinalState, HeldEnvelope, Operation, TransferView } from './history.js';

export interface CheckResult {
  name: string;
  ok: boolean;
  /** What broke the property, one line each (empty when it holds). */
  violations: string[];
}

const result = (name: string, violations: string[]): CheckResult => ({ name, ok: violations.length === 0, violations });

interface SpendAnswer {
  result_id?: string;
  envelope?: { token_id?: string };
  audit?: { seq?: number; hash?: string; slug?: string };
  tally_charge?: { balance_after?: { free?: number; paid?: number } };
}

interface TransferAnswer {
  transfer_id?: string;
  to?: string;
  token_ids?: string[];
}

/** Every envelope held, by token id: the holders of each (more than one is a double application). */
function holdersOf(state: FinalState): Map<string, HeldEnvelope[]> {
  const held = new Map<string, HeldEnvelope[]>();
  for (const id of state.identities) {
    for (const e of id.envelopes) held.set(e.token_id, [...(held.get(e.token_id) ?? []), e]);
  }
  return held;
}

const acknowledged = (ops: readonly Operation[], call: Operation['call']) => ops.filter((o) => o.call === call && o.outcome === 'ok');

/**
 * Every acknowledged write is present after recovery: a spend's sealed result at its home, its envelope (held by
 * someone), its audit-chain row (same seq, same hash); a transfer's record at both ends (delivered at the sender's
 * home) and its envelopes with the receiver, or with whoever a later transfer moved them to.
 */
export function acknowledgedWritesPresent(ops: readonly Operation[], state: FinalState): CheckResult {
  const v: string[] = [];
  const held = holdersOf(state);
  const chains = new Map(state.identities.map((i) => [i.zid, i]));
  for (const op of acknowledged(ops, 'spend')) {
    const a = op.response as SpendAnswer;
    if (!a.result_id || !state.results[a.result_id]) v.push(`${op.id}: sealed result ${a.result_id ?? '(no id)'} is missing`);
    const token = a.envelope?.token_id;
    if (!token || !held.has(token)) v.push(`${op.id}: envelope ${token ?? '(no id)'} is held by nobody`);
    const row = chains.get(op.zid)?.chain.find((r) => r.seq === a.audit?.seq);
    if (!row) v.push(`${op.id}: audit row ${a.audit?.seq ?? '?'} of ${op.zid} is missing`);
    else if (row.hash !== a.audit?.hash) v.push(`${op.id}: audit row ${row.seq} of ${op.zid} has hash ${row.hash}, acknowledged ${a.audit?.hash ?? '?'}`);
  }
  const transfers = new Map(state.transfers.map((t) => [t.id, t]));
  for (const op of acknowledged(ops, 'transfer')) {
    const a = op.response as TransferAnswer;
    const t = a.transfer_id ? transfers.get(a.transfer_id) : undefined;
    if (!t?.atSender) v.push(`${op.id}: transfer ${a.transfer_id ?? '(no id)'} is missing at the sender's home`);
    else if (t.atSender.state !== 'delivered') v.push(`${op.id}: transfer ${t.id} is ${t.atSender.state} at the sender's home after recovery`);
    if (!t?.atReceiver) v.push(`${op.id}: transfer ${a.transfer_id ?? '(no id)'} is missing at the receiver's home`);
    for (const token of a.token_ids ?? []) {
      const holders = held.get(token) ?? [];
      if (holders.length === 0) continue; // lost: noDoubleApplication counts every envelope
      const later = laterReceivers(state.transfers, token, t?.atSender ?? t?.atReceiver ?? null);
      if (!holders.some((h) => h.owner === a.to || later.has(h.owner))) {
        v.push(`${op.id}: envelope ${token} sent to ${a.to ?? '?'} is held by ${holders.map((h) => h.owner).join(', ')}`);
      }
    }
  }
  return result('acknowledged writes present', v);
}

/** Receivers of transfers of `token` made after `after` (moves on from the receiver of `after`). */
function laterReceivers(transfers: FinalState['transfers'], token: string, after: TransferView | null): Set<string> {
  const out = new Set<string>();
  for (const t of transfers) {
    const view = t.atSender ?? t.atReceiver;
    if (!view || !view.token_ids.includes(token) || view.transfer_id === after?.transfer_id) continue;
    if (after === null || view.created_unix_ms >= after.created_unix_ms) out.add(view.to);
  }
  return out;
}

/** No wallet below zero: after recovery, and in any balance an acknowledged spend reported. */
export function noNegativeBalance(ops: readonly Operation[], state: FinalState): CheckResult {
  const v: string[] = [];
  for (const i of state.identities) {
    if (i.balance.free < 0 || i.balance.paid < 0) v.push(`${i.zid}: balance free ${i.balance.free}, paid ${i.balance.paid}`);
  }
  for (const op of acknowledged(ops, 'spend')) {
    const b = (op.response as SpendAnswer).tally_charge?.balance_after;
    if (b && ((b.free ?? 0) < 0 || (b.paid ?? 0) < 0)) v.push(`${op.id}: acknowledged with balance free ${b.free}, paid ${b.paid}`);
  }
  return result('no balance below zero', v);
}

/** Credits are conserved across the mesh: Σ balances + Σ foundation + Σ burned = grants + claims + initial. */
export function creditsConserved(state: FinalState): CheckResult {
  const balances = state.identities.reduce((s, i) => s + i.balance.free + i.balance.paid, 0);
  const foundation = state.nodes.reduce((s, n) => s + n.foundation, 0);
  const burned = state.nodes.reduce((s, n) => s + n.burned, 0);
  const held = balances + foundation + burned;
  const given = state.ledger.grants + state.ledger.claims + state.ledger.initial;
  return result(
    'credits conserved',
    held === given
      ? []
      : [
          `balances ${balances} + foundation ${foundation} + burned ${burned} = ${held}, but grants ${state.ledger.grants} + claims ${state.ledger.claims} + initial ${state.ledger.initial} = ${given}`,
        ],
  );
}

/**
 * No transfer applied twice, no envelope duplicated or lost: each envelope has one holder; a transfer's envelopes
 * arrived once (no more envelopes carry its id than it moved); the envelopes held are exactly the results sealed
 * (one envelope per sealed result, across the mesh).
 */
export function noDoubleApplication(state: FinalState): CheckResult {
  const v: string[] = [];
  const held = holdersOf(state);
  for (const [token, holders] of held) {
    if (holders.length > 1) v.push(`envelope ${token} is held ${holders.length} times (${holders.map((h) => h.owner).join(', ')})`);
  }
  const arrivals = new Map<string, number>();
  for (const i of state.identities) for (const e of i.envelopes) if (e.transfer_id) arrivals.set(e.transfer_id, (arrivals.get(e.transfer_id) ?? 0) + 1);
  const moved = new Map(state.transfers.map((t) => [t.id, (t.atSender ?? t.atReceiver)?.token_ids.length ?? 0]));
  for (const [id, n] of arrivals) {
    const m = moved.get(id);
    if (m === undefined) v.push(`transfer ${id} brought ${n} envelopes, and neither home knows it`);
    else if (n > m) v.push(`transfer ${id} moved ${m} envelopes and ${n} arrived`);
  }
  // The results sealed for the clients' identities: the harness's own (the operators' bonds) are held by identities
  // the final state does not read.
  const sealed = state.nodes.reduce((s, n) => s + n.sealed, 0) - (state.ledger.setupSeals ?? 0);
  if (held.size !== sealed) v.push(`${held.size} distinct envelopes are held, and ${sealed} results were sealed`);
  return result('no transfer applied twice', v);
}

/** Holders that make an entry certified in the fault run: a majority of its custody sets of three (workload.ts custodySetsOfThree). */
export const CERTIFIED_HOLDERS = 2;

/**
 * One certified entry per (zid, epoch, seq): the custodians never certify two different entries for one slot. Takes
 * the entries read from every node (final-state.ts custodyEntries); an entry counts as certified when `holders`
 * distinct nodes hold it. One held by fewer is a proposal its home gave up (a custodian signed it, its answer lost):
 * it stays where it was signed, and the write certified at that slot next is not a second certified entry.
 */
export function oneCertifiedEntryPerSlot(entries: readonly CertifiedEntry[], holders = CERTIFIED_HOLDERS): CheckResult {
  const bySlot = new Map<string, Map<string, Set<string>>>();
  for (const e of entries) {
    const slot = `${e.zid}/${e.epoch}/${e.seq}`;
    let hashes = bySlot.get(slot);
    if (hashes === undefined) bySlot.set(slot, (hashes = new Map()));
    hashes.set(e.hash, (hashes.get(e.hash) ?? new Set()).add(e.holder));
  }
  const v: string[] = [];
  for (const [slot, hashes] of bySlot) {
    const certified = [...hashes].filter(([, by]) => by.size >= holders);
    if (certified.length > 1) v.push(`${slot} is certified as ${certified.map(([hash, by]) => `${hash} (held by ${[...by].join(', ')})`).join(' and ')}`);
  }
  return result('one certified entry per (zid, epoch, seq)', v);
}

/** Every property, in order. */
export function checkHistory(ops: readonly Operation[], state: FinalState): CheckResult[] {
  return [
    acknowledgedWritesPresent(ops, state),
    noNegativeBalance(ops, state),
    creditsConserved(state),
    noDoubleApplication(state),
    oneCertifiedEntryPerSlot(state.certified),
  ];
}
