// The fault-injection run at CI size (test/helpers/fault, docs/fault-testing.md): three real node processes on
// 127.0.0.1, clients doing spends and cross-node transfers, fifteen faults (SIGKILL and restart, partitions and heals)
// drawn from a fixed seed; then heal, recover and check the history. With one copy per identity (its home), a killed
// or cut-off home's ledger is unavailable until it returns: that is not a violation; loss, double application, a
// negative balance, credits that appear or vanish, or two entries certified for one slot are.
import { describe, expect, it } from 'vitest';
import { runFaultRun } from '../helpers/fault/run.js';

describe('a mesh under crashes and partitions', () => {
  it('keeps every acknowledged write, applies no transfer twice and conserves credits', async () => {
    const { report, history, faults, state } = await runFaultRun({
      nodes: 3,
      faults: 15,
      seed: 34,
      identitiesPerNode: 2,
      credits: 200,
      workload: { clients: 3, pauseMs: 40 },
      schedule: { gapMs: 250, durationMs: [200, 800], deadlineMs: 20_000, partitionShare: 0.5 },
      recoverWithinMs: 30_000,
    });
    const failed = report.checks.filter((c) => !c.ok);
    expect(failed, JSON.stringify(failed.map((c) => ({ name: c.name, violations: c.violations.slice(0, 5) })))).toEqual([]);
    expect(report.recovery, JSON.stringify(report.recovery)).toMatchObject({ drained: true, pending: [] });
    expect(report.ok).toBe(true);

    // The schedule ran, with both kinds of fault, and every killed node came back.
    expect(faults.length).toBe(15);
    expect(report.faults.restart_failures).toBe(0);
    expect(faults.some((f) => f.kind === 'kill')).toBe(true);
    expect(faults.some((f) => f.kind === 'partition')).toBe(true);
    for (const f of faults) expect(f.ended_at).toBeGreaterThanOrEqual(f.at);

    // The history is the clients' record: every operation shaped, and enough acknowledged of each call to check.
    expect(history.length).toBe(report.operations.total);
    for (const op of history) {
      expect(['spend', 'transfer']).toContain(op.call);
      expect(['ok', 'error', 'unknown']).toContain(op.outcome);
      expect(op.completed_at).toBeGreaterThanOrEqual(op.invoked_at);
      if (op.outcome === 'ok') expect(op.status! >= 200 && op.status! < 300).toBe(true);
    }
    const acked = (call: string) => history.filter((op) => op.call === call && op.outcome === 'ok');
    expect(acked('spend').length).toBeGreaterThan(10);
    expect(acked('transfer').length).toBeGreaterThan(3);

    // The final state is the mesh's: three nodes, six identities, every credit granted accounted for.
    expect(state.nodes).toHaveLength(3);
    expect(state.identities).toHaveLength(6);
    expect(state.ledger).toEqual({ grants: 6 * 200, claims: 0, initial: 0 });
    const spent = state.nodes.reduce((s, n) => s + n.burned + n.foundation, 0);
    expect(spent).toBeGreaterThanOrEqual(acked('spend').length);
    expect(state.nodes.reduce((s, n) => s + n.sealed, 0)).toBe(spent);

    // The custody entries read from every node: no bonds here, so each home holds its identities alone and its
    // entries are the transfer debits, at least one per acknowledged transfer, each slot certified once.
    const debits = new Set(state.certified.map((e) => `${e.zid}/${e.epoch}/${e.seq}`));
    expect(debits.size).toBeGreaterThanOrEqual(acked('transfer').length);
    expect(report.checks.find((c) => c.name === 'one certified entry per (zid, epoch, seq)')).toMatchObject({ ok: true });
  }, 240_000);
});
