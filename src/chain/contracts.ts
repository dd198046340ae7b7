// JSON contracts on a state machine's chain. A deploy appends a `contract_deploy` row committing
// {contract_id, definition}; a transition appends a `contract_transition` row committing {contract_id, event, from,
// to, caller} (caller: the zid that sent the event). The definition and each transition's event and caller are kept
// (the chain commits their digests); a contract's state is never stored: it is rebuilt by replaying its events
// through the language (contract-language.ts) with the caller each row recorded, never a current request's, each
// checked against its audit row, the first time it is needed after a start — the same on every node.
//
// Rows written before the caller was recorded commit {contract_id, event, from, to} and replay with no caller: a
// contract deployed then could not name the caller (the operand did not exist), so its replay is unchanged.
//
// Bounds: the live states in memory are a cache, bounded by entries and by estimated bytes (least recently used out
// first; a miss rebuilds from the store, so no answer depends on it), and an identity deploys at most
// `perIdentity` contracts on this node, counted by an index of contracts by deployer written in each deploy's batch.
import { sha256Hex } from '../kernel/bytes.js';
import { canonicalJson } from '../kernel/canonical.js';
import { capReached, ServiceError } from '../kernel/errors.js';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { LruMap } from '../util/bounded-map.js';
import { backfillOnce } from '../store/backfill.js';
import type { AuditRow, ChainService } from './service.js';
import {
  parseContract,
  parseEvent,
  step,
  transitionTable,
  type Contract,
  type ContractEvent,
  type ContractState,
  type Primitive,
  type TransitionTable,
} from './contract-language.js';

export const CONTRACT_DEPLOY = 'contract_deploy';
export const CONTRACT_TRANSITION = 'contract_transition';
const CACHE_MAX = 4096;
/** The chain_meta key of the pass that indexed contracts deployed before the deployer index existed. */
export const DEPLOYER_INDEX_VERSION_KEY = 'contract-deployer-index-v1';
/**
 * Heap bytes of a parsed contract and its transition table per byte of its definition's JSON: measured at 1.4 for
 * long strings and 3.6 for many small objects (a 700 KB definition of 256 transitions × 64 guards and effects held
 * 2.6 MB), so 4 bounds both.
 */
export const CONTRACT_HEAP_PER_JSON_BYTE = 4;

export interface ContractLimits {
  /** Contracts one identity may deploy on this node (they are never deleted). */
  perIdentity: number;
  /** Estimated bytes of live contract states kept in memory, all contracts together. */
  cacheBytes: number;
}

export const CONTRACT_LIMITS_DEFAULT: ContractLimits = { perIdentity: 1000, cacheBytes: 64 * 1024 * 1024 };

interface ContractRecord {
  contract_id: string;
  slug: string;
  definition: Contract;
  deployed_seq: number;
  deployed_by: string;
}

interface TransitionRecord {
  seq: number;
  event: ContractEvent;
  from: string;
  to: string;
  /** The zid that sent the event; absent in records written before the caller was recorded. */
  caller?: string;
}

interface Live extends ContractState {
  record: ContractRecord;
  table: TransitionTable;
  applied: number;
  /** Estimated heap bytes of the parsed definition and its table (the cache's weight). */
  bytes: number;
}

/** What a live contract is estimated to hold in memory (CONTRACT_HEAP_PER_JSON_BYTE). */
export function contractBytes(definition: Contract): number {
  return CONTRACT_HEAP_PER_JSON_BYTE * Buffer.byteLength(canonicalJson(definition));
}

export interface ContractView {
  contract_id: string;
  slug: string;
  name: string;
  state: string;
  vars: Record<string, Primitive>;
  transitions_applied: number;
  deployed_seq: number;
}

/**
 * The charge of a transition: `prepare` loads the wallet (awaited after the state is known), `take` charges it
 * synchronously just before the batch (see Ledger.chargeOps; 402 and nothing written when short).
 */
export interface ChargeFn {
  prepare: () => Promise<unknown>;
  take: () => { ops: Op[]; rollback: () => void };
}

/** What a `contract_transition` row commits; a row written before callers were recorded has no `caller`. */
export function transitionPayload(contractId: string, event: ContractEvent, from: string, to: string, caller: string | undefined): unknown {
  return caller === undefined ? { contract_id: contractId, event, from, to } : { contract_id: contractId, event, from, to, caller };
}

export class ContractService {
  private readonly contracts: Sublevel;
  private readonly events: Sublevel;
  /** Contracts by deployer: `zid!slug!contract_id` → 1, written in the deploy's batch. */
  private readonly byDeployer: Sublevel;
  private readonly live: LruMap<string, Live>;

  constructor(
    private readonly store: Store,
    private readonly chain: ChainService,
    readonly limits: ContractLimits = CONTRACT_LIMITS_DEFAULT,
  ) {
    this.contracts = store.sub('chain_contracts');
    this.events = store.sub('chain_contract_events');
    this.byDeployer = store.sub('chain_contract_deployer');
    this.live = new LruMap<string, Live>(CACHE_MAX, () => false, { max: limits.cacheBytes, of: (l) => l.bytes });
  }

  /** Live states in memory now: how many, and their estimated bytes (≤ limits.cacheBytes but for the newest one). */
  get cached(): { entries: number; bytes: number } {
    return { entries: this.live.size, bytes: this.live.weight };
  }

  /** Index the contracts deployed before the deployer index existed (once; at start). */
  async indexDeployersOnce(): Promise<number> {
    return backfillOnce<ContractRecord>(this.store, {
      key: DEPLOYER_INDEX_VERSION_KEY,
      source: this.contracts,
      opsFor: (_key, record) => [this.deployerOp(record)],
    });
  }

  private deployerOp(record: ContractRecord): Op {
    return { type: 'put', sub: this.byDeployer, key: `${record.deployed_by}!${record.slug}!${record.contract_id}`, value: 1 };
  }

  /** Contracts `zid` deployed on this node, counted up to `cap`. */
  async deployedBy(zid: string, cap = this.limits.perIdentity): Promise<number> {
    return (await this.store.range(this.byDeployer, { gte: `${zid}!`, lt: `${zid}!~`, limit: cap })).length;
  }

  private view(l: Live): ContractView {
    return {
      contract_id: l.record.contract_id,
      slug: l.record.slug,
      name: l.record.definition.name,
      state: l.state,
      vars: { ...l.vars },
      transitions_applied: l.applied,
      deployed_seq: l.record.deployed_seq,
    };
  }

  /** A deployment at row `seq`: the record and the row's payload (the id is the same on every node for one history). */
  private deployment(slug: string, seq: number, zid: string, definition: Contract): { record: ContractRecord; payload: unknown } {
    const contractId = `ctr_${sha256Hex(canonicalJson({ slug, seq, definition })).slice(0, 24)}`;
    return { record: { contract_id: contractId, slug, definition, deployed_seq: seq, deployed_by: zid }, payload: { contract_id: contractId, definition } };
  }

  private recordOp(record: ContractRecord): Op {
    return { type: 'put', sub: this.contracts, key: `${record.slug}!${record.contract_id}`, value: record };
  }

  private remember(record: ContractRecord): Live {
    const live: Live = {
      record,
      table: transitionTable(record.definition),
      state: record.definition.initial,
      vars: { ...record.definition.variables },
      applied: 0,
      bytes: contractBytes(record.definition),
    };
    this.live.set(`${record.slug}!${record.contract_id}`, live);
    return live;
  }

  /**
   * Run `write`, a batch that deploys one contract of `zid` (a deploy, or a genesis with an initial contract), once
   * `zid` holds fewer than the cap: the count is read and the batch written under one lock per deployer, so parallel
   * deploys cannot pass the cap. At the cap, 409 SVC_CONFLICT and `write` never runs, so nothing is written.
   */
  async withinCap<T>(zid: string, write: () => Promise<T>): Promise<T> {
    return this.chain.locks.run(`contracts-of:${zid}`, async () => {
      const held = await this.deployedBy(zid);
      if (held >= this.limits.perIdentity)
        throw capReached('contracts', this.limits.perIdentity, held, 'a deployed contract stays on its machine, so none frees a slot');
      return write();
    });
  }

  /**
   * Validate (400 pointing at the offending path) and deploy: one row, the record and its deployer index entry in one
   * batch, within the deployer's cap (withinCap: at it, 409 and nothing written).
   */
  async deploy(slug: string, svcond: number, zid: string, json: unknown): Promise<{ contract: ContractView; row: AuditRow }> {
    const definition = parseContract(json);
    return this.withinCap(zid, async () => {
      let record: ContractRecord | null = null;
      const row = await this.chain.append(
        slug,
        svcond,
        CONTRACT_DEPLOY,
        null,
        () => [this.recordOp(record!), this.deployerOp(record!)],
        (seq) => {
          const d = this.deployment(slug, seq, zid, definition);
          record = d.record;
          return d.payload;
        },
      );
      return { contract: this.view(this.remember(record!)), row };
    });
  }

  /**
   * A deploy inside a caller's batch (genesis): synchronous after chain.prepare(slug), the next row of the chain and
   * the record's op. Call `deployed()` once the batch is durable (the live state), `rollback()` when it fails. The
   * caller writes its batch inside withinCap(zid, …), so the cap holds for these deploys too.
   */
  deployOps(
    slug: string,
    svcond: number,
    zid: string,
    definition: Contract,
  ): { row: AuditRow; ops: Op[]; contractId: string; rollback: () => void; deployed: () => ContractView } {
    const { record, payload } = this.deployment(slug, this.chain.nextSeq(slug), zid, definition);
    const appended = this.chain.appendOps(slug, svcond, CONTRACT_DEPLOY, payload);
    return {
      row: appended.row,
      ops: [appended.op, this.recordOp(record), this.deployerOp(record)],
      contractId: record.contract_id,
      rollback: appended.rollback,
      deployed: () => this.view(this.remember(record)),
    };
  }

  /** The contract's live state: in memory, else rebuilt from its record and events, each checked against its row. */
  private async load(slug: string, contractId: string): Promise<Live> {
    const key = `${slug}!${contractId}`;
    const cached = this.live.get(key);
    if (cached) return cached;
    const record = /^ctr_[0-9a-f]{24}$/.test(contractId) ? await this.store.get<ContractRecord>(this.contracts, key) : undefined;
    if (!record) throw new ServiceError(404, 'SVC_NOT_FOUND', `no contract ${contractId} on state machine ${slug}`);
    const live = await this.rebuild(record);
    return this.live.get(key) ?? (this.live.set(key, live), live);
  }

  /** Replay a contract from its deploy row: the state it is in after every stored transition. */
  async rebuild(record: ContractRecord): Promise<Live> {
    const { slug, contract_id: id, definition } = record;
    const deployRow = await this.chain.row(slug, record.deployed_seq);
    if (!deployRow || deployRow.transitionType !== CONTRACT_DEPLOY || deployRow.payload_sha256 !== sha256Hex(canonicalJson({ contract_id: id, definition }))) {
      throw corrupt(id, record.deployed_seq);
    }
    const live: Live = {
      record,
      table: transitionTable(definition),
      state: definition.initial,
      vars: { ...definition.variables },
      applied: 0,
      bytes: contractBytes(definition),
    };
    const stored = await this.store.range<TransitionRecord>(this.events, { gte: `${slug}!${id}!`, lt: `${slug}!${id}!~` });
    for (const { value: t } of stored) {
      const row = await this.chain.row(slug, t.seq);
      const payload = transitionPayload(id, t.event, t.from, t.to, t.caller);
      if (!row || row.transitionType !== CONTRACT_TRANSITION || row.payload_sha256 !== sha256Hex(canonicalJson(payload))) throw corrupt(id, t.seq);
      // The recorded caller (null before callers were recorded), never the caller of a request being served.
      const next = step(id, definition, live.table, live, t.event, t.caller ?? null);
      if (next.from !== t.from || next.state !== t.to) throw corrupt(id, t.seq);
      live.state = next.state;
      live.vars = next.vars;
      live.applied++;
    }
    return live;
  }

  async get(slug: string, contractId: string): Promise<ContractView & { definition: Contract }> {
    // Under the contract's lock: a rebuild never races a transition's write.
    const l = await this.chain.locks.run(`contract:${slug}!${contractId}`, () => this.load(slug, contractId));
    return { ...this.view(l), definition: l.record.definition };
  }

  async list(slug: string): Promise<{ contract_id: string; name: string; deployed_seq: number }[]> {
    const all = await this.store.range<ContractRecord>(this.contracts, { gte: `${slug}!`, lt: `${slug}!~`, limit: 1000 });
    return all
      .map((e) => ({ contract_id: e.value.contract_id, name: e.value.definition.name, deployed_seq: e.value.deployed_seq }))
      .sort((a, b) => a.deployed_seq - b.deployed_seq);
  }

  /**
   * Apply an event sent by `caller` (the zid the route authenticated, or an agent's owner; one at a time per
   * contract): 409 when illegal, else the charge, the row (committing the caller) and the event with its caller in
   * one batch; the live state moves only after the batch is durable.
   */
  async transition(
    slug: string,
    contractId: string,
    svcond: number,
    caller: string,
    eventJson: unknown,
    charge: ChargeFn,
    chargeRecord: (seq: number) => Op[],
    /** More ops for the transition's batch, given its row (an agent's record and tick event); may throw to refuse. */
    attach?: (row: AuditRow, moved: { from: string; to: string; vars: Record<string, Primitive> }) => Op[],
  ): Promise<{ contract: ContractView; from: string; row: AuditRow; transition: number }> {
    const event = parseEvent(eventJson);
    return this.chain.locks.run(`contract:${slug}!${contractId}`, async () => {
      const live = await this.load(slug, contractId);
      const next = step(contractId, live.record.definition, live.table, live, event, caller);
      await charge.prepare();
      const paid = charge.take();
      let row: AuditRow;
      try {
        const payload = transitionPayload(contractId, event, next.from, next.state, caller);
        row = await this.chain.append(slug, svcond, CONTRACT_TRANSITION, payload, (r) => [
          ...paid.ops,
          ...chargeRecord(r.seq),
          {
            type: 'put',
            sub: this.events,
            key: `${slug}!${contractId}!${padNum(r.seq)}`,
            value: { seq: r.seq, event, from: next.from, to: next.state, caller } satisfies TransitionRecord,
          },
          ...(attach ? attach(r, { from: next.from, to: next.state, vars: next.vars }) : []),
        ]);
      } catch (err) {
        paid.rollback();
        throw err;
      }
      live.state = next.state;
      live.vars = next.vars;
      live.applied++;
      return { contract: this.view(live), from: next.from, row, transition: next.transition };
    });
  }

  /** Forget every live state (a test of the rebuild, and what a restart does). */
  forget(): void {
    this.live.clear();
  }
}

function corrupt(contractId: string, seq: number): ServiceError {
  return new ServiceError(500, 'SVC_INTERNAL_ERROR', `contract ${contractId}: its stored log does not match the chain at row ${seq}`, {
    contract_id: contractId,
    seq,
  });
}
