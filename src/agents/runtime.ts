// The agent runtime (spec 1, 4.8, 6): agents bound to one of their owner's state machines run a declared program on
// every k-th tick (agents/program.ts), each step sealed or appended on the machine's chain and paid by the owner; an
// agent may derive children within a depth and count limit; the owner kills them. Every change and the event that
// reports it are one batch; live subscribers hear the event after it is durable (agents/events.ts). Agents live at
// their owner's home node, in the store: a restart loads the running ones and they go on. An agent whose owner
// cannot pay its step stops, with a stop event.
import { validateChain } from '../kernel/operators/chain.js';
import { ServiceError } from '../kernel/errors.js';
import { stampAt, type Clock } from '../kernel/clock.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import type { Ledger } from '../tally/ledger.js';
import { sha256Hex } from '../kernel/bytes.js';
import { canonicalJson } from '../kernel/canonical.js';
import type { ChainService } from '../chain/service.js';
import { requireRole } from '../chain/roles.js';
import type { ComputeService } from '../compute/service.js';
import { COSTS } from '../tally/costs.js';
import { fill, parseProgram, type ChildProgram, type Program, type TemplateContext } from './program.js';
import { AgentEvents, type AgentEvent } from './events.js';
import { KeyedLock } from '../util/keyed-lock.js';
import type { Caller, TallyCharge } from '../records/types.js';
import { randomHex } from '../util/random-hex.js';

/** A chain append step's price (part 8 names none; docs/decisions.md, "Agents"). */
export const AGENT_APPEND_COST = COSTS.agentAppend;

export interface AgentLimits {
  /** Deepest generation a derive may make (the spawned agent is depth 0). */
  maxDepth: number;
  /** Children one agent may derive. */
  maxChildren: number;
  /** Running agents one owner may have (spawned and derived). */
  maxPerOwner: number;
  /** Ticks run at once across agents. */
  concurrency: number;
  /** Events kept (the latest, node-wide); older ones are pruned after each round of ticks. */
  eventsKept: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = { maxDepth: 3, maxChildren: 8, maxPerOwner: 1000, concurrency: 32, eventsKept: 1_000_000 };

export type AgentStatus = 'running' | 'killed' | 'stopped';

export interface AgentRecord {
  id: string;
  owner: string;
  slug: string;
  home: string;
  program: Program;
  parent: string | null;
  depth: number;
  children: string[];
  status: AgentStatus;
  stop_reason: string | null;
  spawned_svcond: number;
  next_svcond: number;
  ticks: number;
  state: Record<string, unknown>;
  /** The last stateful solver run's state (carry_state). */
  solver_state: unknown;
  last: { value: number | null; unit: string | null; result_id: string | null; contract_state?: string | null };
  last_event: number;
}

export interface AgentRuntimeDeps {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  chain: ChainService;
  compute: ComputeService;
  nodeId: () => string;
  limits?: Partial<AgentLimits>;
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

type IdentityCaller = Extract<Caller, { kind: 'identity' }>;

/** What a step tells the tick that records it. */
interface StepRun {
  value: number | null;
  unit: string | null;
  result_id: string | null;
  state?: unknown;
  chain?: Record<string, unknown>;
  contract?: Record<string, unknown>;
  /** A contract step: the contract's state after it ({{result.contract_state}}). */
  contractState?: string | null;
  rail?: Record<string, unknown>;
}

function notFound(id: string): ServiceError {
  return new ServiceError(404, 'SVC_NOT_FOUND', `no agent ${id}`);
}

/** The first tick after `svcond` on the agent's k-tick grid from its spawn. */
function nextOnGrid(spawned: number, every: number, svcond: number): number {
  return spawned + every * (Math.floor((svcond - spawned) / every) + 1);
}

export class AgentRuntime {
  readonly events: AgentEvents;
  readonly limits: AgentLimits;
  private readonly agents: Sublevel;
  private readonly byOwner: Sublevel;
  /** Running agents, by id. */
  private readonly running = new Map<string, AgentRecord>();
  private readonly locks = new KeyedLock();
  /** Spawns past the cap check whose batch has not settled, per owner: they count against limits.maxPerOwner. */
  private readonly spawning = new Map<string, number>();
  /**
   * Agents being killed or stopped (set synchronously, before their batch): a tick of one in flight does not write
   * its record over the kill's, and does not put it back among the running.
   */
  private readonly halted = new Set<string>();
  private pumping: Promise<void> | null = null;
  private lastPumped = -1;
  /** Agent ticks run since start (the bench's figure). */
  ticksRun = 0;

  constructor(private readonly deps: AgentRuntimeDeps) {
    this.events = new AgentEvents(deps.store);
    this.limits = { ...DEFAULT_AGENT_LIMITS, ...deps.limits };
    this.agents = deps.store.sub('agents');
    this.byOwner = deps.store.sub('agent_owner');
  }

  private now(): number {
    return stampAt(this.deps.clock.nowNs()).svcond;
  }

  /** At start: the event sequence and every running agent (they go on from the next tick on their grid). */
  async load(): Promise<number> {
    await this.events.load();
    const it = this.agents.values();
    try {
      for await (const v of it) {
        const a = v as AgentRecord;
        if (a.status === 'running') this.running.set(a.id, a);
      }
    } finally {
      await it.close();
    }
    return this.running.size;
  }

  runningCount(): number {
    return this.running.size;
  }

  runningOf(zid: string): number {
    let n = 0;
    for (const a of this.running.values()) if (a.owner === zid) n++;
    return n;
  }

  async totalOf(zid: string): Promise<number> {
    return (await this.deps.store.range(this.byOwner, { gte: `${zid}!`, lt: `${zid}!~`, limit: 100_000 })).length;
  }

  private callerOf(a: AgentRecord): IdentityCaller {
    const home = this.deps.nodeId();
    return {
      kind: 'identity',
      zid: a.owner,
      slug: a.slug,
      home,
      key: {
        key_id: `agent_${a.id}`,
        kind: 'zsm',
        zid: a.owner,
        slug: a.slug,
        plan: 'standard',
        created_unix_ms: 0,
        expires_unix_ms: null,
        revoked_unix_ms: null,
        home,
      },
    };
  }

  private recordOps(a: AgentRecord): Op[] {
    return [{ type: 'put', sub: this.agents, key: a.id, value: a }];
  }

  private newRecord(owner: string, slug: string, program: Program, parent: AgentRecord | null, svcond: number): AgentRecord {
    return {
      id: `ag_${randomHex(24)}`,
      owner,
      slug,
      home: this.deps.nodeId(),
      program,
      parent: parent?.id ?? null,
      depth: parent ? parent.depth + 1 : 0,
      children: [],
      status: 'running',
      stop_reason: null,
      spawned_svcond: svcond,
      next_svcond: svcond + program.every,
      ticks: 0,
      state: { ...program.state },
      solver_state: null,
      last: { value: null, unit: null, result_id: null },
      last_event: 0,
    };
  }

  /** Spawn (cost 75): an agent bound to one of the caller's machines (a role of owner, admin or operator on it). */
  async spawn(caller: IdentityCaller, rawProgram: unknown, slug?: string): Promise<AgentRecord> {
    const program = parseProgram(rawProgram);
    const machineSlug = slug ?? caller.slug;
    const machine = await this.deps.chain.getMachine(machineSlug);
    if (!machine) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${machineSlug} on this node`);
    const role = machine.roles[caller.zid];
    if (role !== 'owner' && role !== 'admin' && role !== 'operator')
      throw new ServiceError(403, 'SVC_FORBIDDEN', `an agent binds to a state machine its owner operates; ${machineSlug} is not one`);
    if (program.step.kind === 'contract') await this.checkContract(machineSlug, program.step.contract_id);
    else if (program.step.kind !== 'append') this.checkStepTarget(program);
    // Checked and reserved in one synchronous turn: parallel spawns cannot all pass the check before any commits.
    const pending = this.spawning.get(caller.zid) ?? 0;
    if (this.runningOf(caller.zid) + pending >= this.limits.maxPerOwner)
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `at most ${this.limits.maxPerOwner} running agents per identity`, {
        limit: this.limits.maxPerOwner,
        window_seconds: null,
        retry_after_seconds: null,
        reset_at: null,
      });
    this.spawning.set(caller.zid, pending + 1);
    try {
      return await this.spawnReserved(caller, machineSlug, program);
    } finally {
      const left = (this.spawning.get(caller.zid) ?? 1) - 1;
      if (left > 0) this.spawning.set(caller.zid, left);
      else this.spawning.delete(caller.zid);
    }
  }

  private async spawnReserved(caller: IdentityCaller, machineSlug: string, program: Program): Promise<AgentRecord> {
    while (!this.deps.ledger.isLoaded(caller.zid)) await this.deps.ledger.wallet(caller.zid);
    const svcond = this.now();
    const a = this.newRecord(caller.zid, machineSlug, program, null, svcond);
    const charge = this.deps.ledger.chargeOps(caller.zid, 'agent_spawn', COSTS.agentSpawn);
    const ev = this.events.make('spawn', a.id, a.owner, svcond, { slug: a.slug, depth: 0, parent: null, every: program.every, charge: charge.charge });
    a.last_event = ev.event.seq;
    try {
      await this.deps.store.commit([...charge.ops, ...this.recordOps(a), { type: 'put', sub: this.byOwner, key: `${a.owner}!${a.id}`, value: 1 }, ...ev.ops]);
    } catch (err) {
      charge.rollback();
      throw err;
    }
    this.running.set(a.id, a);
    this.events.emit([ev.event]);
    return a;
  }

  /**
   * A compute step names a chain the kernel takes (its domain and operators, with the compute's codes: its inputs are
   * templates, filled at each tick); a solver step names a registered solver, and carry_state needs a stateful one.
   * 400 at spawn, not at the first tick.
   */
  private checkStepTarget(program: Program): void {
    const s = program.step;
    if (s.kind === 'compute') validateChain({ domain: s.domain, operators: s.operators });
    if (s.kind !== 'solver') return;
    const solver = this.deps.compute.registry.get(s.solver);
    if (!solver)
      throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input program.step.solver: unknown solver ${s.solver}`, {
        field: 'program.step.solver',
        reason: 'unknown solver',
        allowed: this.deps.compute.registry.ids(),
      });
    if (s.carry_state && !solver.stateful)
      throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input program.step.carry_state: ${s.solver} is not stateful`, {
        field: 'program.step.carry_state',
        reason: 'not stateful',
        allowed: null,
      });
  }

  /** A contract step names a contract of the agent's machine (400 at spawn, naming the machine's contracts). */
  private async checkContract(slug: string, contractId: string): Promise<void> {
    const contracts = await this.deps.chain.contracts.list(slug);
    if (contracts.some((c) => c.contract_id === contractId)) return;
    throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input program.step.contract_id: no contract ${contractId} on state machine ${slug}`, {
      field: 'program.step.contract_id',
      reason: 'not a contract of the machine',
      allowed: contracts.map((c) => c.contract_id),
    });
  }

  async get(caller: IdentityCaller, id: string): Promise<AgentRecord> {
    const a = this.running.get(id) ?? (await this.deps.store.get<AgentRecord>(this.agents, id));
    if (!a) throw notFound(id);
    if (a.owner !== caller.zid) throw new ServiceError(403, 'SVC_FORBIDDEN', `agent ${id} belongs to another identity`);
    return a;
  }

  async list(caller: IdentityCaller, status: AgentStatus | undefined, offset: number, limit: number): Promise<{ total: number; items: AgentRecord[] }> {
    const ids = await this.deps.store.range<number>(this.byOwner, { gte: `${caller.zid}!`, lt: `${caller.zid}!~`, limit: 100_000 });
    const all = await this.deps.store.getMany<AgentRecord>(
      this.agents,
      ids.map((r) => r.key.slice(caller.zid.length + 1)),
    );
    const items = all
      .filter((a): a is AgentRecord => !!a)
      .map((a) => this.running.get(a.id) ?? a)
      .filter((a) => status === undefined || a.status === status)
      .sort((x, y) => x.spawned_svcond - y.spawned_svcond || (x.id < y.id ? -1 : 1));
    return { total: items.length, items: items.slice(offset, offset + limit) };
  }

  /** Kill an agent and its descendants (one batch, one kill event each). */
  async kill(caller: IdentityCaller, id: string): Promise<AgentRecord> {
    const target = await this.get(caller, id);
    if (target.status !== 'running') return target;
    return this.locks.run(id, async () => {
      const svcond = this.now();
      const ops: Op[] = [];
      const events: AgentEvent[] = [];
      const killed: AgentRecord[] = [];
      const visit = async (agentId: string, reason: string): Promise<void> => {
        const a = this.running.get(agentId);
        if (!a) return;
        this.halted.add(a.id);
        const ev = this.events.make('kill', a.id, a.owner, svcond, { reason, ticks: a.ticks });
        const next: AgentRecord = { ...a, status: 'killed', stop_reason: reason, last_event: ev.event.seq };
        ops.push(...this.recordOps(next), ...ev.ops);
        events.push(ev.event);
        killed.push(next);
        for (const child of a.children) await visit(child, `parent ${id} killed`);
      };
      await visit(id, 'killed by its owner');
      try {
        await this.deps.store.commit(ops);
      } catch (err) {
        for (const a of killed) this.halted.delete(a.id);
        throw err;
      }
      for (const a of killed) {
        this.running.delete(a.id);
        this.halted.delete(a.id);
      }
      this.events.emit(events);
      return killed[0]!;
    });
  }

  /**
   * Run every agent due at the current tick (each at most once per tick; a tick missed while the node was down is not
   * made up: the agent goes on from the next tick on its grid). Resolves when the due ticks are done.
   */
  pump(): Promise<void> {
    if (this.pumping) return this.pumping;
    const svcond = this.now();
    if (svcond <= this.lastPumped) return Promise.resolve();
    this.lastPumped = svcond;
    this.pumping = this.runDue(svcond).finally(() => {
      this.pumping = null;
    });
    return this.pumping;
  }

  /** Wait for the ticks in flight (before the store closes). */
  async close(): Promise<void> {
    this.lastPumped = Number.MAX_SAFE_INTEGER;
    if (this.pumping) await this.pumping.catch(() => undefined);
  }

  private async runDue(svcond: number): Promise<void> {
    const due = [...this.running.values()].filter((a) => a.next_svcond <= svcond).map((a) => a.id);
    let i = 0;
    const worker = async (): Promise<void> => {
      while (i < due.length) {
        const id = due[i++]!;
        await this.locks.run(id, () => this.tick(id, svcond)).catch((err: unknown) => this.deps.log?.('agent tick failed', { agent: id, err: String(err) }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.limits.concurrency, due.length) }, worker));
    await this.events.prune(this.limits.eventsKept).catch((err: unknown) => this.deps.log?.('agent event pruning failed', { err: String(err) }));
  }

  private context(a: AgentRecord, svcond: number, tick: number): TemplateContext {
    return { agent: { id: a.id, depth: a.depth, parent: a.parent, slug: a.slug }, tick, svcond, state: a.state, result: a.last };
  }

  /** One tick of one agent: its step (sealed or appended, paid), its state, its event; then a derive when due. */
  private async tick(id: string, svcond: number): Promise<void> {
    const a = this.running.get(id);
    if (!a || a.status !== 'running' || a.next_svcond > svcond || this.halted.has(id)) return;
    const tick = a.ticks + 1;
    const ctx = this.context(a, svcond, tick);
    const caller = this.callerOf(a);
    const step = a.program.step;
    let tickEvent: AgentEvent | null = null;
    let next: AgentRecord | null = null;
    const finish = (run: StepRun): Op[] => {
      // Killed or stopped while this step ran: the step is not sealed (its batch would write a running record).
      // (Or killed and gone already: a kill of an ancestor is not serialised with this agent's tick.)
      if (this.halted.has(id) || !this.running.has(id)) throw new ServiceError(409, 'SVC_CONFLICT', `agent ${id} was halted during its step`);
      const current = this.running.get(id) ?? a;
      const last: AgentRecord['last'] = { value: run.value, unit: run.unit, result_id: run.result_id };
      if (run.contractState !== undefined) last.contract_state = run.contractState;
      const assigned = fill(current.program.assign, { ...ctx, result: last }) as Record<string, unknown>;
      const state = { ...current.state, ...assigned };
      const done = current.program.max_ticks !== undefined && tick >= current.program.max_ticks;
      const ev = this.events.make('tick', id, a.owner, svcond, {
        tick,
        kind: step.kind,
        ...last,
        ...(run.chain ? { chain: run.chain } : {}),
        ...(run.contract ? { contract: run.contract } : {}),
        ...(run.rail ? { rail: run.rail } : {}),
        state,
      });
      const ops: Op[] = [...ev.ops];
      let lastEvent = ev.event.seq;
      let stopEvent: AgentEvent | null = null;
      if (done) {
        const stop = this.events.make('stop', id, a.owner, svcond, { reason: 'max_ticks reached', ticks: tick });
        ops.push(...stop.ops);
        stopEvent = stop.event;
        lastEvent = stop.event.seq;
      }
      next = {
        ...current,
        ticks: tick,
        state,
        solver_state: run.state === undefined ? current.solver_state : run.state,
        last,
        next_svcond: nextOnGrid(current.spawned_svcond, current.program.every, svcond),
        last_event: lastEvent,
        ...(done ? { status: 'stopped' as const, stop_reason: 'max_ticks reached' } : {}),
      };
      tickEvent = ev.event;
      ops.push(...this.recordOps(next));
      if (stopEvent) pendingStop = stopEvent;
      return ops;
    };
    let pendingStop: AgentEvent | null = null;
    try {
      if (step.kind === 'compute') {
        const req = { domain: step.domain, operators: step.operators, inputs: fill(step.inputs, ctx) };
        await this.deps.compute.compute(caller, req, { seal: true }, { ops: (_facts, run) => finish(run) });
      } else if (step.kind === 'solver') {
        const inputs = fill(step.inputs, ctx);
        const state = step.carry_state ? (a.solver_state ?? undefined) : undefined;
        await this.deps.compute.solve(
          caller,
          step.solver,
          inputs,
          state,
          { agent: { id, tick } },
          {
            ops: (_facts, run) => finish({ ...run, state: step.carry_state ? run.state : undefined }),
          },
        );
      } else if (step.kind === 'contract') {
        await this.transition(a, svcond, step.contract_id, fill(step.event, ctx), finish);
      } else {
        await this.append(a, svcond, tick, fill(step.payload, ctx), step.event, finish);
      }
    } catch (err) {
      if (!this.halted.has(id)) await this.stopOnError(id, svcond, err);
      return;
    }
    this.ticksRun++;
    if (next === null || tickEvent === null) return;
    const done: AgentRecord = next;
    if (this.halted.has(id) || !this.running.has(id)) return;
    if (done.status === 'running') this.running.set(id, done);
    else this.running.delete(id);
    this.events.emit(pendingStop ? [tickEvent, pendingStop] : [tickEvent]);
    const derive = done.program.derive;
    if (done.status === 'running' && derive && tick % derive.every === 0) await this.derive(id, svcond);
  }

  /**
   * A chain append step, charged 1 (its entry is recorded either way). The machine's `inject_agent_rail` (read at each
   * step) decides where the entry goes: on, an `agent_event` row on the machine's chain; off (the default), the agent
   * rail only — the tick event carries the entry's digest and nothing is written on the chain. The charge, the row
   * when there is one, the agent's record and its event in one batch (docs/decisions.md,
   * "Agents", the agent rail).
   */
  private async append(a: AgentRecord, svcond: number, tick: number, payload: unknown, event: string, finish: (run: StepRun) => Op[]): Promise<void> {
    const entry = { agent: a.id, tick, event, payload };
    const machine = await this.deps.chain.getMachine(a.slug);
    // The owner's role now, not at spawn: an agent of an operator whose role was taken stops (403).
    requireRole(a.slug, machine?.roles[a.owner], 'append');
    const injected = machine?.inject_agent_rail === true;
    // Both loaded at once, checked right before the synchronous part (a bounded cache may let one go while the other loads).
    while (!this.deps.ledger.isLoaded(a.owner) || (injected && !this.deps.chain.isPrepared(a.slug))) {
      await this.deps.ledger.wallet(a.owner);
      if (injected) await this.deps.chain.prepare(a.slug);
    }
    const charge = this.deps.ledger.chargeOps(a.owner, 'agent_append', AGENT_APPEND_COST);
    let row: ReturnType<ChainService['appendOps']> | null = null;
    try {
      if (injected) row = this.deps.chain.appendOps(a.slug, svcond, 'agent_event', entry);
      const rail = { injected, event, entry_sha256: row ? row.row.payload_sha256 : sha256Hex(canonicalJson(entry)) };
      const chain = row ? { slug: a.slug, seq: row.row.seq, hash: row.row.hash } : undefined;
      const ops = [...charge.ops, ...(row ? [row.op] : []), ...finish({ value: null, unit: null, result_id: null, rail, ...(chain ? { chain } : {}) })];
      await this.deps.store.commit(ops);
    } catch (err) {
      row?.rollback();
      charge.rollback();
      throw err;
    }
  }

  /**
   * A contract-transition step: the chain's own transition (contracts.ts) of one of the machine's contracts with the
   * event built from the program's templates, charged as a transition (5), its row, charge record, the agent's record
   * and tick event in one batch. An event the contract refuses in its state (409) is a tick that changed nothing: it
   * is recorded (the tick event names the refusal), charged 1 (agent_refused_transition: no tick is free), nothing is
   * appended, and the agent goes on.
   */
  private async transition(a: AgentRecord, svcond: number, contractId: string, event: unknown, finish: (run: StepRun) => Op[]): Promise<void> {
    const contracts = this.deps.chain.contracts;
    requireRole(a.slug, (await this.deps.chain.getMachine(a.slug))?.roles[a.owner], 'transition');
    let charge: TallyCharge | null = null;
    try {
      await this.deps.ledger.holding(a.owner, () =>
        contracts.transition(
          a.slug,
          contractId,
          svcond,
          // An agent acts for its owner: the owner is the caller its rows record.
          a.owner,
          event,
          {
            prepare: () => this.deps.ledger.wallet(a.owner),
            take: () => {
              const paid = this.deps.ledger.chargeOps(a.owner, 'contract_transition', COSTS.contractTransition);
              charge = paid.charge;
              return paid;
            },
          },
          (seq) => [this.deps.chain.chargeOp(a.slug, seq, a.owner, charge!)],
          (row, moved) =>
            finish({
              value: null,
              unit: null,
              result_id: null,
              chain: { slug: a.slug, seq: row.seq, hash: row.hash },
              contract: { contract_id: contractId, event: (event as { type?: unknown }).type ?? null, ...moved, charge },
              contractState: moved.to,
            }),
        ),
      );
    } catch (err) {
      if (!(err instanceof ServiceError) || err.code !== 'SVC_ILLEGAL_TRANSITION') throw err;
      const d = err.extra;
      while (!this.deps.ledger.isLoaded(a.owner)) await this.deps.ledger.wallet(a.owner);
      const paid = this.deps.ledger.chargeOps(a.owner, 'agent_refused_transition', COSTS.agentRefusedTransition);
      const refused = { contract_id: contractId, refused: { state: d.state ?? null, event: d.event ?? null, reason: d.reason ?? null }, charge: paid.charge };
      try {
        const contractState = typeof d.state === 'string' ? d.state : null;
        await this.deps.store.commit([...paid.ops, ...finish({ value: null, unit: null, result_id: null, contract: refused, contractState })]);
      } catch (err2) {
        paid.rollback();
        throw err2;
      }
    }
  }

  /** A step that failed: 402 stops the agent (its owner cannot pay); any other refusal stops it with its code. */
  private async stopOnError(id: string, svcond: number, err: unknown): Promise<void> {
    const a = this.running.get(id);
    if (!a || this.halted.has(id)) return;
    this.halted.add(id);
    const code = err instanceof ServiceError ? err.code : 'SVC_INTERNAL_ERROR';
    const reason = code === 'INSUFFICIENT_BALANCE' ? 'insufficient_balance' : `step_failed: ${code}`;
    const ev = this.events.make('stop', id, a.owner, svcond, { reason, code, message: err instanceof Error ? err.message : String(err), ticks: a.ticks });
    const next: AgentRecord = { ...a, status: 'stopped', stop_reason: reason, last_event: ev.event.seq };
    try {
      await this.deps.store.commit([...this.recordOps(next), ...ev.ops]);
    } catch (err2) {
      this.halted.delete(id);
      throw err2;
    }
    this.running.delete(id);
    this.halted.delete(id);
    this.events.emit([ev.event]);
  }

  /** Derive a child (an agent spawn, cost 75) when the limits allow; a refused derive changes nothing. */
  private async derive(id: string, svcond: number): Promise<void> {
    const parent = this.running.get(id);
    if (!parent?.program.derive || this.halted.has(id)) return;
    const d = parent.program.derive;
    const depthLimit = Math.min(d.max_depth, this.limits.maxDepth);
    const childLimit = Math.min(d.max_children, this.limits.maxChildren);
    if (parent.depth + 1 > depthLimit || parent.children.length >= childLimit || this.runningOf(parent.owner) >= this.limits.maxPerOwner) return;
    const childProgram: Program = d.program ? (d.program as ChildProgram) : parent.program;
    while (!this.deps.ledger.isLoaded(parent.owner)) await this.deps.ledger.wallet(parent.owner);
    let charge: ReturnType<Ledger['chargeOps']>;
    try {
      charge = this.deps.ledger.chargeOps(parent.owner, 'agent_spawn', COSTS.agentSpawn);
    } catch (err) {
      await this.stopOnError(id, svcond, err);
      return;
    }
    const child = this.newRecord(parent.owner, parent.slug, childProgram, parent, svcond);
    const derived = this.events.make('derive', parent.id, parent.owner, svcond, { child: child.id, depth: child.depth, charge: charge.charge });
    const spawned = this.events.make('spawn', child.id, child.owner, svcond, {
      slug: child.slug,
      depth: child.depth,
      parent: parent.id,
      every: childProgram.every,
    });
    child.last_event = spawned.event.seq;
    const nextParent: AgentRecord = { ...parent, children: [...parent.children, child.id], last_event: derived.event.seq };
    try {
      await this.deps.store.commit([
        ...charge.ops,
        ...this.recordOps(nextParent),
        ...this.recordOps(child),
        { type: 'put', sub: this.byOwner, key: `${child.owner}!${child.id}`, value: 1 },
        ...derived.ops,
        ...spawned.ops,
      ]);
    } catch (err) {
      charge.rollback();
      throw err;
    }
    this.running.set(parent.id, nextParent);
    this.running.set(child.id, child);
    this.events.emit([derived.event, spawned.event]);
  }
}
