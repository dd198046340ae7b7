// The reactor (spec 1, 4.8): a recursive simulation loop over a stateful solver. Opening records the solver, its
// resolved inputs and the starting state and runs nothing; each step runs the solver from the last state and seals
// the run like any solver run (charged as one), and the reactor's record and its trajectory row are written in the
// run's sealing batch, so a step is sealed and recorded, or neither. A reactor lives at its owner's home node, in
// the store, so it survives a restart. Steps of one reactor are serialised; N steps equal one run of N segments bit
// for bit (the stateful solvers continue exactly from their state: solvers.md §1). An identity holds at most
// `perIdentity` reactors, counted by the owner index written in the batches that open and close them; closing one
// deletes it with its trajectory and frees its slot.
import { capReached, ServiceError } from '../kernel/errors.js';
import { stampAt, type Clock } from '../kernel/clock.js';
import { modulationFactor } from '../kernel/modulation.js';
import { checkChainRequest } from '../kernel/operators/chain.js';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { randomHex } from '../util/random-hex.js';
import type { ComputeService, SealedRun } from '../compute/service.js';
import { InputError } from '../solvers/errors.js';
import { readInvariant, relativeDrift, type InvariantReading } from './invariants.js';
import { fill } from '../util/template.js';
import { KeyedLock } from '../util/keyed-lock.js';
import type { Caller } from '../records/types.js';

/** An operator chain with a feedback rule: each step's inputs are the last inputs with `feedback` applied. */
export interface ChainLoop {
  domain: string;
  operators: string[];
  /** Input keys set after each step from templates over the result: e.g. {"mass_kg": "{{result.value}}"}. */
  feedback: Record<string, unknown>;
}

/** Placeholders a feedback rule may use. */
export const FEEDBACK_PLACEHOLDERS = ['result.value', 'result.unit', 'step', 'state.<input key>'];

export interface ReactorRecord {
  id: string;
  owner: string;
  home: string;
  /** 'chain': an operator chain with a feedback rule (`chain`); absent or 'solver': a stateful solver. */
  kind?: 'solver' | 'chain';
  chain?: ChainLoop;
  /** The solver id, or 'chain'. */
  solver: string;
  /** Resolved inputs of one segment (every step runs them). */
  inputs: Record<string, unknown>;
  /** The state the next step starts from; null: the solver's own initial conditions from the inputs. */
  state: unknown;
  steps: number;
  opened_svcond: number;
  last_svcond: number | null;
  last_result_id: string | null;
  last_value: number | null;
  unit: string | null;
  /** Sum and last of the wall time per step (ms, from the request to the sealed batch). */
  total_ms: number;
  last_ms: number | null;
  invariant: { name: string; unit: string; initial: number; value: number; max_rel_drift: number } | null;
}

export interface StepRow {
  step: number;
  svcond: number;
  result_id: string;
  result_digest: string;
  value: number;
  unit: string;
  state: unknown;
  invariant: number | null;
  ms: number;
}

export interface ReactorDeps {
  store: Store;
  compute: ComputeService;
  clock: Clock;
  nodeId: () => string;
  phi0: number;
  /** Reactors one identity may hold (default REACTORS_PER_IDENTITY_DEFAULT). */
  perIdentity?: number;
}

export const TRAJECTORY_PAGE_MAX = 1000;
export const REACTORS_PER_IDENTITY_DEFAULT = 256;

function notFound(id: string): ServiceError {
  return new ServiceError(404, 'SVC_NOT_FOUND', `no reactor ${id}`);
}

export class ReactorService {
  private readonly reactors: Sublevel;
  private readonly rows: Sublevel;
  /** Reactor ids by owner (`zid!id`). */
  private readonly byOwner: Sublevel;
  /** Steps in flight by reactor: one at a time per reactor. */
  private readonly locks = new KeyedLock();
  /** One open at a time per owner: its count and its batch. */
  private readonly opening = new KeyedLock();
  readonly perIdentity: number;

  constructor(private readonly deps: ReactorDeps) {
    this.reactors = deps.store.sub('reactors');
    this.rows = deps.store.sub('reactor_steps');
    this.byOwner = deps.store.sub('reactor_owner');
    this.perIdentity = deps.perIdentity ?? REACTORS_PER_IDENTITY_DEFAULT;
  }

  private now(): number {
    return stampAt(this.deps.clock.nowNs()).svcond;
  }

  /** Open a reactor (runs nothing): 400 for an unknown or stateless solver, bad inputs or a bad initialState. */
  async open(caller: Caller & { kind: 'identity' }, solverId: string, rawInputs: unknown, rawState: unknown): Promise<ReactorRecord> {
    const solver = this.deps.compute.registry.get(solverId);
    if (solver && !solver.stateful) {
      const stateful = this.deps.compute.registry
        .list()
        .filter((s) => s.stateful)
        .map((s) => s.id);
      throw new InputError('solver', `${solverId} is not stateful: a reactor needs a solver that accepts initialState`, stateful);
    }
    const { inputs, state } = this.deps.compute.resolveSolver(solverId, rawInputs ?? {}, rawState);
    return this.create(caller, {
      solver: solverId,
      inputs: JSON.parse(JSON.stringify(inputs)) as Record<string, unknown>,
      state: state === undefined ? null : JSON.parse(JSON.stringify(state)),
    });
  }

  /**
   * Open a reactor over an operator chain with a feedback rule (runs nothing; the chain and its inputs are checked as a
   * compute checks them, so a chain no step could run is refused here: 400 with the compute's code).
   * Its state is the chain's inputs: each step computes the chain on them, sealed and charged as a compute, and the
   * feedback rule sets the next inputs from the result.
   */
  async openChain(caller: Caller & { kind: 'identity' }, loop: ChainLoop, inputs: Record<string, number>): Promise<ReactorRecord> {
    checkChainRequest({ domain: loop.domain, operators: loop.operators, inputs });
    for (const [key, t] of Object.entries(loop.feedback)) {
      for (const m of JSON.stringify(t).matchAll(/\{\{\s*([A-Za-z0-9_.]+)\s*\}\}/g)) {
        const path = m[1]!;
        if (!['result.value', 'result.unit', 'step'].includes(path) && !/^state\.[A-Za-z0-9_]+$/.test(path))
          throw new InputError(`feedback.${key}`, `unknown placeholder {{${path}}}`, FEEDBACK_PLACEHOLDERS);
      }
    }
    return this.create(caller, { kind: 'chain', chain: loop, solver: 'chain', inputs, state: inputs });
  }

  /** A new reactor's record (no step yet), with its owner index, in one batch. */
  private async create(
    caller: Caller & { kind: 'identity' },
    fields: Pick<ReactorRecord, 'solver' | 'inputs' | 'state'> & Partial<Pick<ReactorRecord, 'kind' | 'chain'>>,
  ): Promise<ReactorRecord> {
    const record: ReactorRecord = {
      id: `rx_${randomHex(24)}`,
      owner: caller.zid,
      home: this.deps.nodeId(),
      ...fields,
      steps: 0,
      opened_svcond: this.now(),
      last_svcond: null,
      last_result_id: null,
      last_value: null,
      unit: null,
      total_ms: 0,
      last_ms: null,
      invariant: null,
    };
    // Counted and written under the owner's lock: parallel opens cannot pass the cap; at it, 409 and nothing written.
    await this.opening.run(caller.zid, async () => {
      const held = await this.countOf(caller.zid, this.perIdentity);
      if (held >= this.perIdentity) throw capReached('reactors', this.perIdentity, held, 'close one (POST /api/svc/reactor/close) to open another');
      await this.deps.store.commit([
        { type: 'put', sub: this.reactors, key: record.id, value: record },
        { type: 'put', sub: this.byOwner, key: `${caller.zid}!${record.id}`, value: 1 },
      ]);
    });
    return record;
  }

  /**
   * Close the caller's reactor: its record, owner index entry and trajectory deleted in one batch, after any step in
   * flight (the reactor's lock). Returns the record as it was last.
   */
  close(caller: Caller & { kind: 'identity' }, id: string): Promise<ReactorRecord> {
    return this.locks.run(id, async () => {
      const r = await this.get(caller, id);
      const rows = await this.deps.store.range(this.rows, { gte: `${id}!`, lt: `${id}!~` });
      await this.deps.store.commit([
        { type: 'del', sub: this.reactors, key: id },
        { type: 'del', sub: this.byOwner, key: `${r.owner}!${id}` },
        ...rows.map((row) => ({ type: 'del' as const, sub: this.rows, key: row.key })),
      ]);
      return r;
    });
  }

  /** The inputs after a chain step: the last ones with the feedback rule applied to the result. */
  private fed(r: ReactorRecord, value: number, unit: string, step: number): Record<string, unknown> {
    const ctx = { state: r.state, result: { value, unit }, step };
    return { ...(r.state as Record<string, unknown>), ...(fill(r.chain!.feedback, ctx) as Record<string, unknown>) };
  }

  /** The caller's reactor: 404 when unknown, 403 when another identity's. */
  async get(caller: Caller & { kind: 'identity' }, id: string): Promise<ReactorRecord> {
    const r = await this.deps.store.get<ReactorRecord>(this.reactors, id);
    if (!r) throw notFound(id);
    if (r.owner !== caller.zid) throw new ServiceError(403, 'SVC_FORBIDDEN', `reactor ${id} belongs to another identity`);
    return r;
  }

  /**
   * One step: the solver from the last state, sealed and charged as a solver run; the reactor's record and its
   * trajectory row go into the sealing batch. Returns the new record, the row and the sealed result's bytes.
   */
  step(caller: Caller & { kind: 'identity' }, id: string): Promise<{ reactor: ReactorRecord; row: StepRow; sealed: Buffer }> {
    return this.locks.run(id, async () => {
      const r = await this.get(caller, id);
      const startNs = this.deps.clock.nowNs();
      let next: ReactorRecord | null = null;
      let row: StepRow | null = null;
      const attach = (run: SealedRun): Op[] => {
        const ms = Number(this.deps.clock.nowNs() - startNs) / 1e6;
        const step = r.steps + 1;
        const runState = r.kind === 'chain' ? this.fed(r, run.value, run.unit, step) : run.state;
        const reading = r.kind === 'chain' ? null : readInvariant(r.solver, { value: run.value, outputs: run.outputs, state: run.state }, r.inputs);
        const invariant = foldInvariant(r.invariant, reading);
        row = {
          step,
          svcond: run.svcond,
          result_id: run.result_id,
          result_digest: run.result_digest,
          value: run.value,
          unit: run.unit,
          state: runState ?? null,
          invariant: reading?.value ?? null,
          ms,
        };
        next = {
          ...r,
          state: runState ?? null,
          steps: step,
          last_svcond: run.svcond,
          last_result_id: run.result_id,
          last_value: run.value,
          unit: run.unit,
          total_ms: r.total_ms + ms,
          last_ms: ms,
          invariant,
        };
        return [
          { type: 'put', sub: this.reactors, key: id, value: next },
          { type: 'put', sub: this.rows, key: `${id}!${padNum(step)}`, value: row },
        ];
      };
      const hooks = { ops: (_facts: unknown, run: SealedRun) => attach(run) };
      const sealed =
        r.kind === 'chain'
          ? await this.deps.compute.compute(caller, { domain: r.chain!.domain, operators: r.chain!.operators, inputs: r.state }, { seal: true }, hooks)
          : await this.deps.compute.solve(caller, r.solver, r.inputs, r.state ?? undefined, { reactor: { id, step: r.steps + 1 } }, hooks);
      if (next === null || row === null) throw new Error('reactor step sealed without its record');
      return { reactor: next, row, sealed: sealed.bytes };
    });
  }

  /** The next state without committing it: the same run as the next step, unsealed, uncharged, nothing written. */
  async next(caller: Caller & { kind: 'identity' }, id: string): Promise<Record<string, unknown>> {
    const r = await this.get(caller, id);
    if (r.kind === 'chain') {
      await this.deps.compute.assertCanPayCompute(caller);
      const unsealed = await this.deps.compute.compute(caller, { domain: r.chain!.domain, operators: r.chain!.operators, inputs: r.state }, { seal: false });
      const body = JSON.parse(unsealed.bytes.toString('utf8')) as { value: number; unit: string };
      return {
        id,
        step: r.steps + 1,
        committed: false,
        value: body.value,
        unit: body.unit,
        state: this.fed(r, body.value, body.unit, r.steps + 1),
        invariant: null,
      };
    }
    const { out, outputs } = await this.deps.compute.preview(caller, r.solver, r.inputs, r.state ?? undefined);
    const reading = readInvariant(r.solver, { value: out.value, outputs, state: out.state }, r.inputs);
    return {
      id,
      step: r.steps + 1,
      committed: false,
      value: out.value,
      unit: out.unit,
      state: out.state ?? null,
      check: out.check,
      invariant: reading ? invariantView(foldInvariant(r.invariant, reading)) : null,
    };
  }

  /** A measurement of the current state at the current tick, without advancing. */
  async observe(caller: Caller & { kind: 'identity' }, id: string): Promise<Record<string, unknown>> {
    const r = await this.get(caller, id);
    const st = stampAt(this.deps.clock.nowNs());
    return {
      id,
      step: r.steps,
      svcond: st.svcond,
      phase: st.phase,
      R_t: modulationFactor(st.phase, this.deps.phi0),
      measurement: r.last_value === null ? null : { value: r.last_value, unit: r.unit, result_id: r.last_result_id, svcond: r.last_svcond },
      invariant: invariantView(r.invariant),
      state: r.state,
    };
  }

  /** Trajectory rows from `offset` (0 = the first step), at most `limit`. */
  async trajectory(caller: Caller & { kind: 'identity' }, id: string, offset: number, limit: number): Promise<{ total: number; items: StepRow[] }> {
    const r = await this.get(caller, id);
    const from = offset + 1;
    const rows = await this.deps.store.range<StepRow>(this.rows, { gte: `${id}!${padNum(from)}`, lt: `${id}!~`, limit: Math.min(limit, TRAJECTORY_PAGE_MAX) });
    return { total: r.steps, items: rows.map((x) => x.value) };
  }

  /** Steps, ticks, invariant drift and time per step. */
  async telemetry(caller: Caller & { kind: 'identity' }, id: string): Promise<Record<string, unknown>> {
    const r = await this.get(caller, id);
    return {
      id,
      solver: r.solver,
      steps: r.steps,
      opened_svcond: r.opened_svcond,
      last_svcond: r.last_svcond,
      ticks: (r.last_svcond ?? r.opened_svcond) - r.opened_svcond,
      invariant: invariantView(r.invariant),
      ms_per_step: { mean: r.steps === 0 ? null : r.total_ms / r.steps, last: r.last_ms },
    };
  }

  /** How many reactors an identity has opened (MMIO): its index, counted up to `cap`. */
  async countOf(zid: string, cap = 10_000): Promise<number> {
    return (await this.deps.store.range(this.byOwner, { gte: `${zid}!`, lt: `${zid}!~`, limit: cap })).length;
  }
}

function foldInvariant(prev: ReactorRecord['invariant'], reading: InvariantReading | null): ReactorRecord['invariant'] {
  if (reading === null) return prev;
  const initial = prev?.initial ?? reading.initial;
  const drift = relativeDrift(initial, reading.value);
  return { name: reading.name, unit: reading.unit, initial, value: reading.value, max_rel_drift: Math.max(prev?.max_rel_drift ?? 0, drift) };
}

function invariantView(inv: ReactorRecord['invariant']): Record<string, unknown> | null {
  if (inv === null) return null;
  return { ...inv, drift: inv.value - inv.initial, rel_drift: relativeDrift(inv.initial, inv.value) };
}
