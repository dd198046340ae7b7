// One fault run, end to end: start the nodes, set up the identities, run the clients while the faults happen, heal,
// recover, read the final state and check the history. What the CI test (test/fault/) and the script
// (scripts/fault/run.ts) share; docs/fault-testing.md says how to read the report.
import { checkHistory, type CheckResult } from './checker.js';
import { FaultCluster } from './cluster.js';
import { runFaults, type FaultOptions, type FaultRecord } from './faults.js';
import { custodyEntries, readFinalState, recover, type CertifiedEntrySource, type Recovery } from './final-state.js';
import type { FinalState, Operation } from './history.js';
import { bondOperators, CUSTODY_ENV, custodySetsOfThree, setUpIdentities, startWorkload, type WorkloadOptions } from './workload.js';

export interface FaultRunOptions {
  nodes: number;
  faults: number;
  seed: number;
  identitiesPerNode?: number;
  /** Paid credits each identity is granted at its home. */
  credits?: number;
  workload?: Partial<Omit<WorkloadOptions, 'seed'>>;
  schedule?: Partial<Omit<FaultOptions, 'count' | 'seed'>>;
  /** Bound of the recovery wait (ms). */
  recoverWithinMs?: number;
  /** Where the certified entries come from (default: every node's custody entries of every identity). */
  certified?: CertifiedEntrySource;
  /** Keep the data dirs (with each node's node.log) after the run. */
  keep?: boolean;
  /** Every node's operator bonded: custody sets of three, failovers of a killed or cut-off home (CUSTODY_ENV). */
  custody?: boolean;
  /** The nodes' log level (default warn). */
  logLevel?: string;
  /** custody.replaceTicks of every node (default the node's). */
  replaceTicks?: number;
}

export interface FaultRunReport {
  seed: number;
  nodes: number;
  /** restart_failures: killed nodes that did not start again; unexpected_exits: nodes that ended by themselves. */
  faults: { planned: number; done: number; kills: number; partitions: number; restart_failures: number; unexpected_exits: number };
  operations: { total: number; spends: number; transfers: number; acknowledged: number; refused: number; unknown: number };
  recovery: Recovery;
  /** Wall time of each phase: starting the nodes, setting up the identities, the faults under load, the final read. */
  phases_ms: { start: number; setup: number; faults: number; read: number };
  elapsed_ms: number;
  checks: CheckResult[];
  ok: boolean;
  /** The data dirs, when kept. */
  data_dirs?: string[];
}

export interface FaultRun {
  report: FaultRunReport;
  history: Operation[];
  faults: FaultRecord[];
  state: FinalState;
}

export async function runFaultRun(o: FaultRunOptions): Promise<FaultRun> {
  const started = Date.now();
  let lap = started;
  const phase = (): number => {
    const now = Date.now();
    const ms = now - lap;
    lap = now;
    return ms;
  };
  const env = {
    ...(o.custody ? CUSTODY_ENV : {}),
    ...(o.logLevel === undefined ? {} : { SVC_LOG_LEVEL: o.logLevel }),
    ...(o.replaceTicks === undefined ? {} : { SVC_CUSTODY_REPLACE_TICKS: String(o.replaceTicks) }),
  };
  const cluster = await FaultCluster.start({ nodes: o.nodes, env });
  const startMs = phase();
  try {
    const credits = o.credits ?? 400;
    const bonded = o.custody ? await bondOperators(cluster) : 0;
    const { identities, granted } = await setUpIdentities(cluster, o.identitiesPerNode ?? 2, credits, o.seed);
    if (o.custody && identities.length > 0) await custodySetsOfThree(cluster, identities[0]!.zid);
    const setupMs = phase();
    const workload = startWorkload(cluster, identities, { clients: 4, transferShare: 0.4, pauseMs: 25, ...o.workload, seed: o.seed });
    let faults: FaultRecord[];
    try {
      faults = await runFaults(cluster, {
        gapMs: 400,
        durationMs: [300, 1500],
        concurrent: 2,
        deadlineMs: 10 * 60_000,
        partitionShare: 0.4,
        ...o.schedule,
        count: o.faults,
        seed: o.seed,
      });
    } finally {
      await workload.stop();
    }
    const history = workload.history;
    const faultsMs = phase();
    const recovery = await recover(cluster, history, identities, o.recoverWithinMs ?? 60_000);
    phase();
    const state = await readFinalState(
      cluster,
      history,
      identities,
      { grants: granted + bonded, claims: 0, initial: 0, ...(bonded > 0 ? { setupSeals: bonded } : {}) },
      o.certified ?? custodyEntries,
    );
    const checks = checkHistory(history, state);
    const readMs = phase();
    const count = (f: (op: Operation) => boolean) => history.filter(f).length;
    const restartFailures = faults.filter((f) => f.error).length;
    const report: FaultRunReport = {
      seed: o.seed,
      nodes: o.nodes,
      faults: {
        planned: o.faults,
        done: faults.length,
        kills: faults.filter((f) => f.kind === 'kill').length,
        partitions: faults.filter((f) => f.kind === 'partition').length,
        restart_failures: restartFailures,
        unexpected_exits: cluster.unexpectedExits.length,
      },
      operations: {
        total: history.length,
        spends: count((op) => op.call === 'spend'),
        transfers: count((op) => op.call === 'transfer'),
        acknowledged: count((op) => op.outcome === 'ok'),
        refused: count((op) => op.outcome === 'error'),
        unknown: count((op) => op.outcome === 'unknown'),
      },
      recovery,
      phases_ms: { start: startMs, setup: setupMs, faults: faultsMs, read: readMs },
      elapsed_ms: Date.now() - started,
      checks,
      ok: checks.every((c) => c.ok) && recovery.drained && restartFailures === 0 && cluster.unexpectedExits.length === 0,
      ...(o.keep ? { data_dirs: cluster.specs.map((s) => s.dataDir) } : {}),
    };
    return { report, history, faults, state };
  } finally {
    await cluster.destroy(o.keep ?? false);
  }
}
