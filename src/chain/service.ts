// State machines and their hash-chained audit logs. Appends to one chain are serialised: the next row is
// built synchronously from the in-memory head, and its op goes into the caller's atomic batch.
import { canonicalJson } from '../kernel/canonical.js';
import type { SealSigner } from '../kernel/receipt.js';
import { sha256Hex } from '../kernel/bytes.js';
import { ServiceError } from '../kernel/errors.js';
import { JsonText, padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { Holds, LruMap, PendingWrites, whileHeld } from '../util/bounded-map.js';
import { KeyedLock } from '../util/keyed-lock.js';
import { MachineIndex } from './machine-index.js';
import { applySettings, type SettingsPatch } from './settings.js';
import type { Role } from './roles.js';
import type { ChargeSplit, TallyCharge } from '../records/types.js';
import type { TickStamp } from '../kernel/clock.js';
import { SEALED_EVENT, sealEvent } from './sealed-event.js';
import { CONTRACT_LIMITS_DEFAULT, ContractService, type ContractLimits } from './contracts.js';
import { MerkleLog } from './merkle-log.js';
import { Checkpoints } from './checkpoints.js';
import { Frontier, leafHash } from './merkle.js';
import { backfillOnce } from '../store/backfill.js';

/** Chain heads kept in memory, unless configured (limits.identityCacheMax: one machine per identity). */
export const HEADS_CACHE_DEFAULT = 4096;
const MOD_256 = 1n << 256n;

/** A head's share of the heads digest: SHA-256 of "slug seq hash" as a number (slugs and hashes have no spaces). */
function headTerm(slug: string, head: Head): bigint {
  return BigInt(`0x${sha256Hex(`${slug} ${head.seq} ${head.hash}`)}`);
}

export type { Role } from './roles.js';

export interface MachineRecord {
  slug: string;
  owner: string;
  genesis_svcond: number;
  is_public: boolean;
  /** SHA-256 of the machine's zsm_ admin key (1:1 with the machine). */
  key_digest: string;
  roles: Record<string, Role>;
  inject_agent_rail: boolean;
  inject_pulse_orb: boolean;
  home: string;
  created_unix_ms: number;
  /** Set when another home won the machine's slug (slug-loss.ts): the machine stays here, unreachable by slug. */
  lost?: MachineLoss;
}

/** What the losing home of a slug race records on its machine, in the batch that refunds the creation charge. */
export interface MachineLoss {
  /** The home whose claim won the slug. */
  lost_to: string;
  lost_unix_ms: number;
  /**
   * The creation charge given back to the owner (0 when none was recorded), and to which part of the wallet: `both`
   * when it took free and paid credits (`free` and `paid` say how many each; older charge records lack the split).
   */
  refund: { credits: number; to: 'free' | 'paid' | 'both'; free?: number; paid?: number };
}

export interface AuditRow {
  seq: number;
  svcond: number;
  transitionType: string;
  /** SHA-256 of the payload: the chain commits the digest, never the bytes. */
  payload_sha256: string;
  prev_hash: string;
  hash: string;
}

export const GENESIS_HASH = '0'.repeat(64);

export function rowHash(row: Omit<AuditRow, 'hash'>): string {
  return sha256Hex(rowText(row));
}

/**
 * The canonical JSON a row's hash is taken over: the row without its hash, as it is (a row read back with a member
 * of another type, tampered, hashes differently: a "5" where 5 was must not hash the same).
 */
export function rowText(row: Omit<AuditRow, 'hash'>): string {
  const { seq, svcond, transitionType, payload_sha256, prev_hash } = row;
  return canonicalJson({ seq, svcond, transitionType, payload_sha256, prev_hash });
}

interface Head {
  seq: number;
  hash: string;
  /** The machine's running tally (undefined until read: prepare() reads it; charges and envelopes need it). */
  tally?: MachineTally;
}

/** What a machine's charges and envelopes add up to: kept in memory with its head, stored in each index entry. */
export interface MachineTally {
  /** Charges recorded for actions on the machine (its creation, contract transitions). */
  charges: number;
  /** Credits those charges took. */
  credits: number;
  /** Envelopes sealed with a row on the machine (compute seals of its callers). */
  envelopes: number;
}

/**
 * A charge record: the charge, who paid, and the machine's running totals after it (written in its batch). `split`:
 * the free and paid credits it took (creation charges; a refund gives each part back where it came
 * from; a record without it is refunded to `funded_by`'s part).
 */
export type MachineCharge = TallyCharge & { seq: number; zid: string; charges_total?: number; credits_total?: number; split?: ChargeSplit };

/** An entry of the machine's envelope index: the envelope's token id and the machine's envelope count after it. */
export interface MachineEnvelopeEntry {
  token_id: string;
  envelopes_total: number;
}

/** The one-time pass indexing envelopes sealed before the machine envelope index existed, in chain_meta. */
const ENVELOPE_BACKFILL_KEY = 'machine-envelopes-v1';
/** Machines whose envelope index the pass added to: their running totals are counted again (slug → true). */
const ENVELOPE_RETOTAL_SUB = 'chain_envelopes_retotal';

/** A row appended by POST /api/chain/:slug/events, and its sealed envelope when one was asked for. */
export interface AppendedEvent {
  row: AuditRow;
  envelope: Record<string, unknown> | null;
}

/** Where a stored envelope was sealed, read from its sealed result (the body's `audit` and `result_digest`). */
export interface EnvelopeSealing {
  slug: string;
  seq: number;
  result_digest: string;
}

/** Where a sealed result's body says it was sealed (its `audit` member: slug and seq), or null. */
export function sealingOfBody(body: Record<string, unknown> | undefined): EnvelopeSealing | null {
  const audit = body?.audit as { slug?: unknown; seq?: unknown } | null | undefined;
  const digest = body?.result_digest;
  if (!audit || typeof audit.slug !== 'string' || typeof audit.seq !== 'number' || typeof digest !== 'string') return null;
  return { slug: audit.slug, seq: audit.seq, result_digest: digest };
}

/** Charges one listing of a machine recorded before running totals existed reads at most. */
const LEGACY_CHARGES_SCAN = 100_000;

export class ChainService {
  private readonly machines: Sublevel;
  private readonly rows: Sublevel;
  /** The chains used most recently (a miss reads the chain's last row); one with an append in flight stays. */
  private readonly heads: LruMap<string, Head>;
  private readonly pending: PendingWrites<string>;
  /** Chains whose heads a caller holds in memory (hold()): never evicted while held. */
  private readonly holds = new Holds<string>();
  /**
   * Σ headTerm over every machine's head, mod 2^256: kept as heads move, so the digest covers every chain without
   * all heads in memory (a sum, not a hash of the sorted list: a list would need them all).
   */
  private headsSum = 0n;
  /** Chains whose head rewrite() took out of memory and out of the digest: the next load puts it back in both. */
  private readonly unsummed = new Set<string>();
  /** Who holds a role on which machine, and the public machines (aggregate/list). */
  readonly index: MachineIndex;
  private readonly charges: Sublevel;
  /** The envelopes sealed with a row on each machine: `${slug}!${seq}` → MachineEnvelopeEntry (tally/envelopes). */
  private readonly envelopes: Sublevel;
  /** One change at a time per machine record (settings) or contract (transitions): a keyed lock. */
  readonly locks = new KeyedLock();
  /** JSON contracts deployed on this node's machines (contracts.ts). */
  readonly contracts: ContractService;
  /** Each machine's rows as an RFC 6962 tree (merkle-log.ts), and its signed checkpoints (checkpoints.ts). */
  readonly merkle: MerkleLog;
  readonly checkpoints: Checkpoints;
  private slugClaims: { markOp: (slug: string) => Op; written: (slug: string) => void } | null = null;

  constructor(
    private readonly store: Store,
    headsCacheMax = HEADS_CACHE_DEFAULT,
    /** What sealed events are sealed with (the node's receipt key and phi0); absent: sealed events are refused. */
    private readonly sealing: { receiptKey: Buffer; sealSigner: SealSigner; phi0: number; nodeId: () => string } | null = null,
    contractLimits: ContractLimits = CONTRACT_LIMITS_DEFAULT,
  ) {
    this.machines = store.sub('machines');
    this.rows = store.sub('chain_rows');
    this.pending = new PendingWrites(store.progress);
    this.index = new MachineIndex(store);
    this.charges = store.sub('chain_charges');
    this.envelopes = store.sub('chain_envelopes');
    this.contracts = new ContractService(store, this, contractLimits);
    this.merkle = new MerkleLog(store, this.rows, this.locks);
    this.checkpoints = new Checkpoints(store, this.merkle, async (slug) => (await this.head(slug)).seq);
    this.heads = new LruMap(headsCacheMax, (slug) => this.pending.pending(slug) || this.holds.held(slug));
  }

  /** Keep a chain's head in memory, once prepared, until the returned release is called (several prepared at once). */
  hold(slug: string): () => void {
    return this.holds.hold(slug);
  }

  /** Chain heads in memory now (≤ the bound, plus any with an append in flight). */
  get headsCached(): number {
    return this.heads.size;
  }

  /** The digest's sum moves from the head `from` (null: none) to `to` (null: none, the chain leaves the digest). */
  private moveHead(slug: string, from: Head | null, to: Head | null): void {
    let sum = this.headsSum;
    if (to !== null) sum += headTerm(slug, to);
    if (from !== null) sum -= headTerm(slug, from);
    this.headsSum = ((sum % MOD_256) + MOD_256) % MOD_256;
  }

  async getMachine(slug: string): Promise<MachineRecord | undefined> {
    return this.store.get<MachineRecord>(this.machines, slug);
  }

  /** Ops that create a machine; the caller commits them with its own records (one batch), then calls created(). */
  machineOps(machine: MachineRecord): Op[] {
    const owed = this.slugClaims ? [this.slugClaims.markOp(machine.slug)] : [];
    return [{ type: 'put', sub: this.machines, key: machine.slug, value: machine }, ...this.index.ops(null, machine), ...owed];
  }

  /** Ops writing a machine's record moved to another home (`before`: the record held here, null when none is). */
  machineMoveOps(before: MachineRecord | null, after: MachineRecord): Op[] {
    return [{ type: 'put', sub: this.machines, key: after.slug, value: after }, ...this.index.ops(before, after)];
  }

  /**
   * Slugs claimed mesh-wide (node/chain.ts, with a mesh): each creation's batch carries a slug-loss marker
   * (chain/slug-loss.ts), and once written the directory checks the slug (`written`), which clears it or settles a loss.
   */
  trackSlugClaims(claims: { markOp: (slug: string) => Op; written: (slug: string) => void }): void {
    this.slugClaims = claims;
  }

  /** A machine's creation batch is on disk (identity/service.ts). */
  machineWritten(slug: string): void {
    this.slugClaims?.written(slug);
  }

  /** PATCH settings: checked against the role matrix (settings.ts), written with its index changes in one batch. */
  async updateSettings(slug: string, callerZid: string, patch: SettingsPatch): Promise<MachineRecord> {
    return this.locks.run(`machine:${slug}`, async () => {
      const machine = await this.getMachine(slug);
      if (!machine) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug}`);
      const next = applySettings(machine, callerZid, patch);
      await this.store.commit([{ type: 'put', sub: this.machines, key: slug, value: next }, ...this.index.ops(machine, next)]);
      return next;
    });
  }

  /**
   * The op recording a charge made for an action on this machine (its creation: seq 0; else the row it paid for),
   * with the machine's running totals after it. Synchronous, in the batch of the row it paid for: the head's tally
   * must be in memory (append() and prepare() read it), and a failed batch's rollback restores it with the head.
   */
  chargeOp(slug: string, seq: number, zid: string, charge: TallyCharge, split?: ChargeSplit): Op {
    let totals: { charges: number; credits: number };
    if (seq === 0) totals = { charges: 1, credits: charge.charged };
    else {
      const head = this.heads.get(slug);
      if (!head?.tally) throw new Error(`chain tally of ${slug} not prepared`);
      head.tally = { ...head.tally, charges: head.tally.charges + 1, credits: head.tally.credits + charge.charged };
      totals = head.tally;
    }
    const value: MachineCharge = { seq, zid, ...charge, charges_total: totals.charges, credits_total: totals.credits, ...(split ? { split } : {}) };
    return { type: 'put', sub: this.charges, key: `${slug}!${padNum(seq)}`, value };
  }

  /** The op indexing an envelope sealed with row `seq` of the machine (synchronous, in the sealing batch; as chargeOp). */
  envelopeOp(slug: string, seq: number, tokenId: string): Op {
    const head = this.heads.get(slug);
    if (!head?.tally) throw new Error(`chain tally of ${slug} not prepared`);
    head.tally = { ...head.tally, envelopes: head.tally.envelopes + 1 };
    const value: MachineEnvelopeEntry = { token_id: tokenId, envelopes_total: head.tally.envelopes };
    return { type: 'put', sub: this.envelopes, key: `${slug}!${padNum(seq)}`, value };
  }

  /** The machine's totals as stored: the newest entry of each index carries them (two reads, never a scan). */
  private async storedTally(slug: string): Promise<MachineTally> {
    const [charge] = await this.store.range<MachineCharge>(this.charges, { gte: `${slug}!`, lt: `${slug}!~`, reverse: true, limit: 1 });
    const [env] = await this.store.range<MachineEnvelopeEntry>(this.envelopes, { gte: `${slug}!`, lt: `${slug}!~`, reverse: true, limit: 1 });
    let charges = charge?.value.charges_total;
    let credits = charge?.value.credits_total;
    if (charge && (charges === undefined || credits === undefined)) {
      // Written before running totals: counted once (the next charge stores the totals).
      const all = await this.store.range<MachineCharge>(this.charges, { gte: `${slug}!`, lt: `${slug}!~`, limit: LEGACY_CHARGES_SCAN });
      charges = all.length;
      credits = all.reduce((sum, e) => sum + e.value.charged, 0);
    }
    return { charges: charges ?? 0, credits: credits ?? 0, envelopes: env?.value.envelopes_total ?? 0 };
  }

  /** The charge recorded for the machine's creation (seq 0), if any. */
  async creationCharge(slug: string): Promise<MachineCharge | undefined> {
    return this.store.get<MachineCharge>(this.charges, `${slug}!${padNum(0)}`);
  }

  /** The op writing a changed machine record, with its index changes (the caller commits them in its batch). */
  machineUpdateOps(before: MachineRecord, after: MachineRecord): Op[] {
    return [{ type: 'put', sub: this.machines, key: after.slug, value: after }, ...this.index.ops(before, after)];
  }

  /** Commit ops of the chain's records with the caller's own, in one batch. */
  commit(ops: Op[]): Promise<void> {
    return this.store.commit(ops);
  }

  /** Machine records by slug (undefined where there is none). */
  async machinesBySlug(slugs: string[]): Promise<(MachineRecord | undefined)[]> {
    return this.store.getMany<MachineRecord>(this.machines, slugs);
  }

  /** The machine records' sublevel, walked by a start-time pass (chain/slug-loss.ts: the one-time marking). */
  get machineRecords(): Sublevel {
    return this.machines;
  }

  /** The machine's totals: from memory when its head is there, else from the store. */
  async tally(slug: string): Promise<MachineTally> {
    const head = await this.head(slug);
    return { ...head.tally! };
  }

  /** The machine's charges, newest first, with their total count and credits (running totals: no scan). */
  async listCharges(slug: string, limit: number, offset: number): Promise<{ total: number; credits: number; items: MachineCharge[] }> {
    const { charges, credits } = await this.tally(slug);
    const page = await this.store.range<MachineCharge>(this.charges, { gte: `${slug}!`, lt: `${slug}!~`, reverse: true, limit: offset + limit });
    return { total: charges, credits, items: page.slice(offset).map((e) => e.value) };
  }

  /** The envelopes sealed with rows of the machine, newest first: {seq, token_id} (the caller reads the records). */
  async listEnvelopes(slug: string, limit: number, offset: number): Promise<{ total: number; items: { seq: number; token_id: string }[] }> {
    const { envelopes } = await this.tally(slug);
    const page = await this.store.range<MachineEnvelopeEntry>(this.envelopes, {
      gte: `${slug}!`,
      lt: `${slug}!~`,
      reverse: true,
      limit: offset + limit,
    });
    return { total: envelopes, items: page.slice(offset).map((e) => ({ seq: Number(e.key.slice(e.key.lastIndexOf('!') + 1)), token_id: e.value.token_id })) };
  }

  /**
   * Index the envelopes sealed before the machine envelope index existed (once, at start; store/backfill.ts): each
   * stored envelope whose sealed result names a `compute_sealed` row of a machine here, and whose row commits exactly
   * that envelope (the payload's digest is recomputed), gets its entry. Then the machines it added to have their
   * running totals counted again, in seq order (a stop in between: counted at the next start, from the marks left).
   */
  async indexOldEnvelopes(envelopes: Sublevel, sealedAt: (resultId: string) => Promise<EnvelopeSealing | null>): Promise<number> {
    const retotal = this.store.sub(ENVELOPE_RETOTAL_SUB);
    const added = await backfillOnce<{ result_id?: string; face_value?: number }>(this.store, {
      key: ENVELOPE_BACKFILL_KEY,
      source: envelopes,
      opsFor: async (tokenId, env) => {
        if (typeof env.result_id !== 'string' || typeof env.face_value !== 'number') return [];
        const at = await sealedAt(env.result_id);
        if (!at || !Number.isSafeInteger(at.seq) || at.seq < 1) return [];
        const key = `${at.slug}!${padNum(at.seq)}`;
        if ((await this.store.get(this.envelopes, key)) !== undefined) return [];
        const row = await this.row(at.slug, at.seq);
        if (!row || row.transitionType !== 'compute_sealed') return [];
        const payload = { result_id: env.result_id, result_digest: at.result_digest, token_id: tokenId, face_value: env.face_value };
        if (sha256Hex(canonicalJson(payload)) !== row.payload_sha256) return [];
        const entry: MachineEnvelopeEntry = { token_id: tokenId, envelopes_total: 0 };
        return [
          { type: 'put', sub: this.envelopes, key, value: entry },
          { type: 'put', sub: retotal, key: at.slug, value: true },
        ];
      },
    });
    const slugs: string[] = [];
    for await (const slug of retotal.keys()) slugs.push(slug as string);
    for (const slug of slugs) {
      await this.retotalEnvelopes(slug);
      await this.store.commit([{ type: 'del', sub: retotal, key: slug }]);
    }
    return added;
  }

  /** Count a machine's envelope entries again, in seq order, into their running totals (the cached tally is dropped). */
  private async retotalEnvelopes(slug: string): Promise<void> {
    let n = 0;
    let ops: Op[] = [];
    const it = this.envelopes.iterator({ gte: `${slug}!`, lt: `${slug}!~` });
    try {
      for await (const [key, value] of it) {
        const entry = value as MachineEnvelopeEntry;
        n++;
        if (entry.envelopes_total !== n) ops.push({ type: 'put', sub: this.envelopes, key: key as string, value: { ...entry, envelopes_total: n } });
        if (ops.length >= 1000) {
          await this.store.commit(ops);
          ops = [];
        }
      }
    } finally {
      await it.close();
    }
    await this.store.commit(ops);
    const head = this.heads.get(slug);
    if (head) delete head.tally;
  }

  /**
   * A machine's ops were written: its (empty) chain joins the heads, as every machine's does at start, so
   * headsDigest() is the same before and after a restart. Not before the write: a batch that fails leaves no head.
   * A caller that must append in the same batch (genesis) calls it first and undoes it if the batch fails.
   */
  created(slug: string, tally?: MachineTally): () => void {
    if (this.heads.has(slug)) return () => {};
    const genesis: Head = tally ? { seq: 0, hash: GENESIS_HASH, tally: { ...tally } } : { seq: 0, hash: GENESIS_HASH };
    this.heads.set(slug, genesis);
    this.moveHead(slug, null, genesis);
    let undone = false;
    const mark = this.heads.mark();
    // Called after the batch's own rows were rolled back (the head is back at seq 0, or evicted): the chain leaves
    // the heads and the digest (unless a rewrite since took it out of both, as appendOps' rollback).
    return () => {
      if (undone) return;
      undone = true;
      if (this.heads.forgottenSince(slug, mark)) return;
      if (this.heads.get(slug)?.seq === 0) this.heads.delete(slug);
      this.moveHead(slug, genesis, null);
    };
  }

  /** The head from the chain's last row, kept in memory (its tally unread). */
  private rowHead(slug: string): Promise<Head> {
    return this.heads.load(
      slug,
      async () => {
        const last = await this.store.range<AuditRow>(this.rows, { gte: `${slug}!`, lt: `${slug}!~`, reverse: true, limit: 1 });
        return last[0] ? { seq: last[0].value.seq, hash: last[0].value.hash } : { seq: 0, hash: GENESIS_HASH };
      },
      (head) => this.loaded(slug, head),
    );
  }

  /** A head read from the store joined the cache: it joins the digest again when rewrite() took it out. */
  private loaded(slug: string, head: Head): void {
    if (this.unsummed.delete(slug)) this.moveHead(slug, null, head);
  }

  /**
   * Write `ops` (by `write`, one batch) that write audit rows or machine records without appendOps or created(): the
   * chain a custody failover took over, an old home's copy replaced by the new home's chain, a machine moved here with
   * its identity (custody/home-moves.ts). The heads of the chains whose rows it writes are dropped from memory, so the
   * next append reads the last row written and chains on it instead of on a head the rows have passed; and the digest
   * follows the store: each such head is loaded and held before the batch (the sum holds the term of a head not in
   * memory, its last row's), its term taken out after it, and the chain loaded again, which puts its new term in, as
   * it puts in the term of a machine the batch creates. A machine record moved (its home) changes no head. The digest
   * is the one a restart computes.
   */
  async rewrite(ops: readonly Op[], write: () => Promise<void>): Promise<void> {
    const rowsWritten = new Set<string>();
    const machinesPut = new Set<string>();
    for (const op of ops) {
      if (op.sub === this.rows) rowsWritten.add(op.key.slice(0, op.key.indexOf('!')));
      else if (op.sub === this.machines) machinesPut.add(op.key);
    }
    const chains = [...new Set([...rowsWritten, ...machinesPut])];
    await whileHeld(
      chains.map((slug) => this.hold(slug)),
      async () => {
        const before = await Promise.all(chains.map((slug) => this.getMachine(slug)));
        const summed = chains.map((slug, i) => before[i] !== undefined && !this.unsummed.has(slug));
        await Promise.all(chains.map((slug, i) => (summed[i] && rowsWritten.has(slug) ? this.rowHead(slug) : null)));
        await write();
        const after = await Promise.all(chains.map((slug) => this.getMachine(slug)));
        const changed = chains.map((slug, i) => rowsWritten.has(slug) || (before[i] === undefined && after[i] !== undefined));
        // Synchronous from the read of each head in memory to the mark: no append moves a term in between.
        chains.forEach((slug, i) => {
          if (!changed[i]) return;
          const held = this.heads.get(slug);
          if (summed[i] && !this.unsummed.has(slug) && held !== undefined) this.moveHead(slug, held, null);
          this.heads.forget(slug);
          if (after[i] !== undefined) this.unsummed.add(slug);
          else this.unsummed.delete(slug);
        });
        await Promise.all(chains.map((slug, i) => (changed[i] && after[i] !== undefined ? this.rowHead(slug) : null)));
      },
    );
  }

  private async head(slug: string): Promise<Head> {
    for (;;) {
      const cached = this.heads.get(slug);
      if (cached?.tally) return cached;
      if (cached) {
        // A head without its tally (created(), or loaded at start): the tally is read once. Nothing changes a tally
        // that is not in memory, so the stored one is current; the first read to land is kept.
        const tally = await this.storedTally(slug);
        const now = this.heads.get(slug);
        if (now && !now.tally) now.tally = tally;
        if (now) return now;
        continue;
      }
      const head = await this.heads.load(
        slug,
        async () => {
          const [last, tally] = await Promise.all([
            this.store.range<AuditRow>(this.rows, { gte: `${slug}!`, lt: `${slug}!~`, reverse: true, limit: 1 }),
            this.storedTally(slug),
          ]);
          return last[0] ? { seq: last[0].value.seq, hash: last[0].value.hash, tally } : { seq: 0, hash: GENESIS_HASH, tally };
        },
        (loaded) => this.loaded(slug, loaded),
      );
      if (head.tally) return head;
    }
  }

  /** Load the head of every machine (at start), so headsDigest() covers all chains, not just those touched since. */
  async loadHeads(): Promise<number> {
    await this.index.rebuildIfMissing(this.machines);
    await this.checkpoints.load();
    const it = this.machines.keys();
    let n = 0;
    try {
      for await (const slug of it) {
        // The row head only: a machine's tally is read when it is first prepared.
        this.moveHead(slug as string, null, this.heads.get(slug as string) ?? (await this.rowHead(slug as string)));
        n++;
      }
    } finally {
      await it.close();
    }
    return n;
  }

  /** Make sure the head and its tally are cached, so appendOps, chargeOp and envelopeOp can run synchronously. */
  async prepare(slug: string): Promise<void> {
    await this.head(slug);
  }

  /** The seq the next appendOps on this chain will take (synchronous after prepare). */
  nextSeq(slug: string): number {
    const head = this.heads.get(slug);
    if (!head) throw new Error(`chain head of ${slug} not prepared`);
    return head.seq + 1;
  }

  /** Is the head of this chain in memory with its tally (appendOps, chargeOp and envelopeOp can run)? */
  isPrepared(slug: string): boolean {
    return this.heads.get(slug)?.tally !== undefined;
  }

  /**
   * Build the next row and its op (synchronous after prepare). Returns a rollback to call when the batch fails,
   * so the cached head never points at a row that was not written.
   */
  appendOps(slug: string, svcond: number, transitionType: string, payload: unknown): { row: AuditRow; op: Op; rollback: () => void } {
    const head = this.heads.get(slug);
    if (!head) throw new Error(`chain head of ${slug} not prepared`);
    const seq = head.seq + 1;
    const payloadSha256 = sha256Hex(canonicalJson(payload));
    const text = rowText({ seq, svcond, transitionType, payload_sha256: payloadSha256, prev_hash: head.hash });
    // Written out, not spread and extended: V8 gives `{ ...base, hash }` a new hidden class on every call (measured:
    // a map allocation and a page fault per seal, and megamorphic reads of the row downstream).
    const row: AuditRow = { seq, svcond, transitionType, payload_sha256: payloadSha256, prev_hash: head.hash, hash: sha256Hex(text) };
    const previous: Head = { seq: head.seq, hash: head.hash, tally: head.tally };
    const next: Head = { seq: row.seq, hash: row.hash, tally: head.tally };
    this.heads.set(slug, next);
    this.pending.changed(slug);
    this.moveHead(slug, previous, next);
    this.checkpoints.touched(slug);
    const mark = this.heads.mark();
    return {
      row,
      // Stored as the hashed text plus the hash (parsed back, the same row): the row is serialised once.
      op: { type: 'put', sub: this.rows, key: `${slug}!${padNum(row.seq)}`, value: new JsonText(`${text.slice(0, -1)},"hash":"${row.hash}"}`) },
      rollback: () => {
        // Rewritten since from a chain without this row (a custody state transfer): its head is already out of memory
        // and out of the digest, and the next load reads the rewritten chain. Nothing of this row is left to undo.
        if (this.heads.forgottenSince(slug, mark)) return;
        this.moveHead(slug, next, previous);
        // Not in memory: evicted after its failed batch settled; the store has the head without this row.
        const now = this.heads.get(slug);
        if (now && now.seq === row.seq) this.heads.set(slug, previous);
        else this.heads.delete(slug);
      },
    };
  }

  /**
   * Append one row of the caller's own (an event, a contract transition, an embed row) in its own batch, with
   * `extra(row)`'s ops (a charge, a contract's state) in the same batch. Resolves after the batch is durable.
   */
  async append(
    slug: string,
    svcond: number,
    transitionType: string,
    payload: unknown,
    extra?: (row: AuditRow) => Op[],
    /** Instead of `payload`: the payload made from the row's seq (read and used with no await between). */
    payloadFor?: (seq: number) => unknown,
  ): Promise<AuditRow> {
    while (!this.isPrepared(slug)) await this.prepare(slug);
    const body = payloadFor ? payloadFor(this.heads.get(slug)!.seq + 1) : payload;
    const appended = this.appendOps(slug, svcond, transitionType, body);
    let ops: Op[];
    try {
      ops = [appended.op, ...(extra ? extra(appended.row) : [])];
    } catch (err) {
      appended.rollback();
      throw err;
    }
    try {
      await this.store.commit(ops);
    } catch (err) {
      appended.rollback();
      throw err;
    }
    return appended.row;
  }

  /**
   * POST /events: a row committing SHA-256 of the payload (never the bytes); sealed, a row of type sealed_event
   * committing the SHA-256 of a sealed envelope that carries the payload's digest (sealed-event.ts).
   */
  async appendEvent(
    slug: string,
    stamp: TickStamp,
    payload: unknown,
    sealed: boolean,
    /** Records the caller writes in the row's batch, told the row and envelope (an idempotent request's answer). */
    answerOps?: (appended: AppendedEvent) => Op[],
  ): Promise<AppendedEvent> {
    if (!sealed) {
      const extra = answerOps && ((row: AuditRow) => answerOps({ row, envelope: null }));
      return { row: await this.append(slug, stamp.svcond, 'event', payload, extra), envelope: null };
    }
    const sealing = this.sealing;
    if (!sealing) throw new Error('this chain service was built without a receipt key: it cannot seal events');
    let envelope: Record<string, unknown> = {};
    const extra = answerOps && ((row: AuditRow) => answerOps({ row, envelope }));
    const row = await this.append(slug, stamp.svcond, SEALED_EVENT, null, extra, (seq) => {
      envelope = sealEvent(sealing.receiptKey, sealing.sealSigner, {
        slug,
        seq,
        stamp,
        payloadSha256: sha256Hex(canonicalJson(payload)),
        node: sealing.nodeId(),
        phi0: sealing.phi0,
      });
      return envelope;
    });
    return { row, envelope };
  }

  /** One stored row (undefined when absent). */
  async row(slug: string, seq: number): Promise<AuditRow | undefined> {
    return this.store.get<AuditRow>(this.rows, `${slug}!${padNum(seq)}`);
  }

  async headOf(slug: string): Promise<{ seq: number; hash: string }> {
    const { seq, hash } = await this.head(slug);
    return { seq, hash };
  }

  /** Rows from seq `from` to `to` inclusive (bounded). */
  async explore(slug: string, from = 1, to = from + 99, max = 1000): Promise<AuditRow[]> {
    const hi = Math.min(to, from + max - 1);
    const rows = await this.store.range<AuditRow>(this.rows, { gte: `${slug}!${padNum(from)}`, lt: `${slug}!${padNum(hi + 1)}` });
    return rows.map((r) => r.value);
  }

  /** Walk the whole chain; name the first bad row. */
  async validate(
    slug: string,
  ): Promise<{ slug: string; valid: boolean; rows: number; head: string; root_hash: string; first_bad: null | { seq: number; reason: string } }> {
    if (!(await this.getMachine(slug))) throw new ServiceError(404, 'SVC_NOT_FOUND', `no state machine ${slug}`);
    let prev = GENESIS_HASH;
    let expectedSeq = 1;
    let count = 0;
    // The RFC 6962 root of the sound prefix (what a checkpoint of this size signs).
    const tree = new Frontier();
    const it = this.rows.iterator({ gte: `${slug}!`, lt: `${slug}!~` });
    try {
      for await (const [, value] of it) {
        const row = value as AuditRow;
        count++;
        let reason: string | null = null;
        // The canonical text once: the row's hash and its leaf hash are both taken over it.
        const text = rowText(row);
        if (row.seq !== expectedSeq) reason = `sequence gap: expected ${expectedSeq}, found ${row.seq}`;
        else if (row.prev_hash !== prev) reason = 'prev_hash does not match the previous row';
        else if (sha256Hex(text) !== row.hash) reason = 'row hash does not match its contents';
        if (reason) return { slug, valid: false, rows: count, head: prev, root_hash: tree.root().toString('hex'), first_bad: { seq: row.seq, reason } };
        tree.append(leafHash(text));
        prev = row.hash;
        expectedSeq++;
      }
    } finally {
      await it.close();
    }
    return { slug, valid: true, rows: count, head: prev, root_hash: tree.root().toString('hex'), first_bad: null };
  }

  /** The digest of every chain head this node holds (for mesh head state). */
  headsDigest(): string {
    return sha256Hex(this.headsSum.toString(16).padStart(64, '0'));
  }
}
