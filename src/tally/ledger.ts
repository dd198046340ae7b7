// Wallets, envelopes, charges and day counters, and the one sealing batch of architecture.md §3 step 7:
// result record + caller's envelope + audit-chain row + wallet charge + counters, written atomically.
// Everything that depends on in-memory state (balances, chain head, counters) is computed synchronously,
// so concurrent seals serialise without locks; the batch itself is group-committed by the store.
import { randomHex } from '../util/random-hex.js';
import { canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import { ServiceError } from '../kernel/errors.js';
import { padNum, type Op, type Store, type Sublevel } from '../store/db.js';
import { BoundedMap, Holds, LruMap, PendingWrites, whileHeld } from '../util/bounded-map.js';
import type { Counters } from '../store/counters.js';
import type { Caller, ChargeSplit, TallyCharge, Wallet } from '../records/types.js';
import type { ChainService, AuditRow } from '../chain/service.js';
import { chargedCounter, envelopeCounter, folderCounter, folderCounterPrefix } from '../store/counter-keys.js';
import { splitCharge } from './split.js';
import { compactTemplateId, decodeCompact, isCompact, rebuildBody, templateFromStored, type StoredTemplate } from './stored-result.js';

export { FOUNDATION_SHARE_PERCENT, splitCharge } from './split.js';
const READ_TEMPLATES_MAX = 256;

/** A charge the node made as an identity's home and never wrote (Ledger.unwrittenChargesOps). */
export interface UnwrittenCharge {
  cost: number;
  /** The identity's running total of credits charged before it (its split's carry). */
  chargedBefore: number;
  /** Whether the write sealed a result. */
  sealed: boolean;
}
/** Sublevels of envelopes: records by token id, and the owner's and the owner's folder's indexes (keys end in the zero-padded seq). */
export const ENVELOPE_SUBS = { envelopes: 'envelopes', byOwner: 'env_owner', byFolder: 'env_folder' } as const;

export interface EnvelopeRecord {
  token_id: string;
  owner: string;
  face_value: number;
  folder: string;
  funding: 'free' | 'paid';
  soulbound: boolean;
  svcond: number;
  result_id: string;
  hash: string;
  seq: number;
  /** Set while the envelope is bonded (consensus/bonds.ts): transfers refuse it, folder moves keep it. */
  immovable?: true;
  /** The bond that holds it, while immovable. */
  bond_id?: string;
  /** The transfer that brought it to its owner (tally/transfers.ts), when it came by one. */
  transfer_id?: string;
}

/** What an envelope's hash commits to. */
export interface EnvelopeCore {
  token_id: string;
  owner: string;
  face_value: number;
  result_id: string;
  result_digest: string;
  svcond: number;
}

export interface SealContext {
  tally_charge: TallyCharge;
  envelope: EnvelopeRecord | null;
  audit: AuditRow | null;
}

export interface LedgerOptions {
  initialCredits: number;
  /** Wallets kept in memory (least recently used go first; a miss reads the store). Default WALLET_CACHE_DEFAULT. */
  walletCacheMax?: number;
}

/** Wallets kept in memory, unless configured (limits.identityCacheMax). */
export const WALLET_CACHE_DEFAULT = 4096;

/** 402 when a wallet cannot pay `cost`. */
function checkBalance(w: Wallet, cost: number): void {
  if (w.free + w.paid < cost) {
    throw new ServiceError(402, 'INSUFFICIENT_BALANCE', `this action costs ${cost} credits; balance is ${w.free + w.paid}`, { cost, balance: w.free + w.paid });
  }
}

export class Ledger {
  private readonly wallets: Sublevel;
  private readonly envelopes: Sublevel;
  private readonly byOwner: Sublevel;
  private readonly byFolder: Sublevel;
  private readonly results: Sublevel;
  /** Body templates of results stored compact by earlier versions, by id (stored-result.ts); read only. */
  private readonly templates: Sublevel;
  /** The wallets used most recently; one changed in memory and not yet written stays (walletWrites). */
  private readonly walletCache: LruMap<string, Wallet>;
  private readonly walletWrites: PendingWrites<string>;
  /** Wallets a caller holds in memory (holding()): never evicted while held. */
  private readonly walletHolds = new Holds<string>();
  /** Templates read back for compact results, by id (a template never changes under its id: it is its SHA-256). */
  private readonly readTemplates = new BoundedMap<string, StoredTemplate>(READ_TEMPLATES_MAX);

  constructor(
    private readonly store: Store,
    private readonly counters: Counters,
    private readonly chain: ChainService,
    private readonly options: LedgerOptions,
  ) {
    this.wallets = store.sub('wallets', 'json', { rewritten: true });
    this.envelopes = store.sub(ENVELOPE_SUBS.envelopes);
    this.byOwner = store.sub(ENVELOPE_SUBS.byOwner);
    this.byFolder = store.sub(ENVELOPE_SUBS.byFolder);
    this.results = store.sub('results', 'bytes');
    this.templates = store.sub('result_templates', 'utf8');
    this.walletWrites = new PendingWrites(store.progress);
    this.walletCache = new LruMap(options.walletCacheMax ?? WALLET_CACHE_DEFAULT, (zid) => this.walletWrites.pending(zid) || this.walletHolds.held(zid));
    // A store written before charged_total existed: its running total is what was burned plus the foundation's.
    if (counters.get('charged_total') === 0 && counters.get('burned_total') + counters.get('foundation_total') > 0) {
      counters.bump('charged_total', counters.get('burned_total') + counters.get('foundation_total'));
      counters.bump('foundation_shares_total', counters.get('foundation_total'));
    }
  }

  /** Wallets in memory now (≤ the bound, plus any with a write in flight). */
  get walletsCached(): number {
    return this.walletCache.size;
  }

  /**
   * The wallet, read into memory with the identity's counters (what chargeOps and seal use synchronously). A bounded
   * cache may let them go before the caller resumes: a caller loops until isLoaded() right before the synchronous
   * use, or holds them (holding()) when it awaits anything in between.
   */
  async wallet(zid: string): Promise<Wallet> {
    const counting = this.counters.loadIdentity(zid);
    if (counting !== undefined) await counting;
    const cached = this.walletCache.get(zid);
    if (cached) return cached;
    return this.walletCache.load(zid, async () => (await this.store.get<Wallet>(this.wallets, zid)) ?? { free: this.options.initialCredits, paid: 0 });
  }

  /** Are the identity's wallet and counters in memory (chargeOps, creditOps and cachedWallet can run now)? */
  isLoaded(zid: string): boolean {
    return this.walletCache.has(zid) && this.counters.hasIdentity(zid);
  }

  /**
   * Run `use` with the identity's wallet and counters loaded and held in memory until it settles: what chargeOps,
   * creditOps and cachedWallet read synchronously stays there across the awaits `use` makes before them (a bounded
   * cache would let them go, and the charge would fail as a bug instead of being made).
   */
  holding<T>(zid: string, use: () => Promise<T>): Promise<T> {
    return whileHeld([this.walletHolds.hold(zid), this.counters.hold(zid)], async () => {
      await this.wallet(zid);
      return use();
    });
  }

  /** Drop a wallet kept in memory (its records were written past the ledger: a custody failover's state transfer). */
  forgetWallet(zid: string): void {
    this.walletCache.forget(zid);
  }

  /** Give a charge back to a wallet in memory, unless it was dropped since `mark` (rewritten from a chain without it). */
  private giveBack(zid: string, mark: number, free: number, paid: number): void {
    if (this.walletCache.forgottenSince(zid, mark)) return;
    const now = this.walletCache.get(zid);
    if (now) this.walletCache.set(zid, { free: now.free + free, paid: now.paid + paid });
  }

  /** A wallet already in memory (await wallet(zid) first). */
  cachedWallet(zid: string): Wallet {
    const w = this.walletCache.get(zid);
    if (!w) throw new Error('wallet not prepared');
    return w;
  }

  /**
   * 402 before any work when the wallet cannot pay. Synchronous (undefined, or a throw) when the wallet is in memory,
   * as it is for every caller after its first request: an await per step of every request is work saved.
   */
  assertCanPay(caller: Caller, cost: number): Promise<void> | undefined {
    if (caller.kind !== 'identity') return undefined;
    const cached = this.walletCache.get(caller.zid);
    if (cached === undefined) return this.wallet(caller.zid).then((w) => checkBalance(w, cost));
    checkBalance(cached, cost);
    return undefined;
  }

  /**
   * Change a wallet in memory by (dFree, dPaid) and return the op that stores it and the undo. The undo gives the
   * delta back rather than restoring a copy, so changes queued after this one survive rollbacks in any order.
   * The wallet must be in memory (await wallet(zid) first); the caller commits the op in its own batch.
   */
  private adjust(zid: string, dFree: number, dPaid: number): { wallet: Wallet; op: Op; rollback: () => void } {
    const w = this.walletCache.get(zid);
    if (!w) throw new Error('wallet not prepared');
    const next: Wallet = { free: w.free + dFree, paid: w.paid + dPaid };
    this.walletCache.set(zid, next);
    this.walletWrites.changed(zid);
    const mark = this.walletCache.mark();
    const rollback = () => this.giveBack(zid, mark, -dFree, -dPaid);
    return { wallet: next, op: { type: 'put', sub: this.wallets, key: zid, value: next }, rollback };
  }

  /**
   * The split of a charge of `cost` to `zid`, applied to the counters in memory as (name, delta) pairs pushed onto
   * `bumped` (the caller persists them in its batch and reverts them if it fails). The charge's own split comes
   * from the identity's running total (its carry); the node's totals from the node's running total, so
   * foundation_total is exactly ⌊20 % of charged_total⌋ (split.ts; docs/decisions.md, "Exact split").
   */
  private split(zid: string, cost: number, bumped: (string | number)[]): { burned: number; foundation: number } {
    const name = chargedCounter(zid);
    const share = splitCharge(cost, this.counters.get(name));
    const node = splitCharge(cost, this.counters.get('charged_total'));
    const start = bumped.length;
    bumped.push(
      name,
      cost,
      'charged_total',
      cost,
      'burned_total',
      node.burned,
      'foundation_total',
      node.foundation,
      'foundation_shares_total',
      share.foundation,
    );
    for (let i = start; i < bumped.length; i += 2) this.counters.bump(bumped[i] as string, bumped[i + 1] as number);
    return share;
  }

  /**
   * Charge `cost` for an action that seals no result (state-machine creation), computed synchronously from memory:
   * the caller puts `ops` in the batch that performs the action and calls `rollback` if that batch fails. 402 when
   * the wallet cannot pay, before anything changes. Free credits are spent first, as in seal(). The wallet must be
   * in memory (await wallet(zid) first), so the check and the change happen with nothing in between.
   */
  chargeOps(zid: string, action: string, cost: number): { charge: TallyCharge; split: ChargeSplit; ops: Op[]; rollback: () => void } {
    const w = this.walletCache.get(zid);
    if (!w) throw new Error('wallet not prepared');
    checkBalance(w, cost);
    const fromFree = Math.min(w.free, cost);
    const mark = this.counters.mark();
    const debit = this.adjust(zid, -fromFree, -(cost - fromFree));
    const bumped: (string | number)[] = [];
    const { burned, foundation } = this.split(zid, cost, bumped);
    const names: string[] = [];
    for (let i = 0; i < bumped.length; i += 2) names.push(bumped[i] as string);
    const ops = [debit.op, ...this.counters.persistOps(names)];
    const charge: TallyCharge = {
      action,
      cost,
      charged: cost,
      burned,
      foundation,
      funded_by: fromFree === cost ? 'free' : 'paid',
      balance_after: debit.wallet,
    };
    const rollback = () => {
      for (let i = 0; i < bumped.length; i += 2) this.counters.revert(bumped[i] as string, bumped[i + 1] as number, mark);
      debit.rollback();
    };
    return { charge, split: { free: fromFree, paid: cost - fromFree }, ops, rollback };
  }

  /**
   * The node's totals of charges it made as an identity's home and never wrote: its write was certified after the
   * node stopped before its batch (a later home took the entry with the chain), and the chain that carries it is
   * written here (custody/unwritten-charges.ts). The identity's own running total rides in the chain; the node's
   * (charged, burned, foundation, sealed) count them here, once, as the write would have. Persist `ops` in the batch
   * that writes the chain; `rollback` if it fails.
   */
  unwrittenChargesOps(charges: readonly UnwrittenCharge[]): { ops: Op[]; rollback: () => void } {
    if (charges.length === 0) return { ops: [], rollback: () => undefined };
    const bumped: (string | number)[] = [];
    for (const c of charges) {
      const start = bumped.length;
      const node = splitCharge(c.cost, this.counters.get('charged_total'));
      const share = splitCharge(c.cost, c.chargedBefore);
      bumped.push('charged_total', c.cost, 'burned_total', node.burned, 'foundation_total', node.foundation, 'foundation_shares_total', share.foundation);
      if (c.sealed) bumped.push('sealed_total', 1);
      for (let i = start; i < bumped.length; i += 2) this.counters.bump(bumped[i] as string, bumped[i + 1] as number);
    }
    const names = new Set<string>();
    for (let i = 0; i < bumped.length; i += 2) names.add(bumped[i] as string);
    return {
      ops: this.counters.persistOps([...names]),
      rollback: () => {
        for (let i = 0; i < bumped.length; i += 2) this.counters.revert(bumped[i] as string, bumped[i + 1] as number);
      },
    };
  }

  /** Credit a wallet (a grant, a claim): like chargeOps(), synchronous, the wallet in memory. */
  creditOps(zid: string, free: number, paid: number): { wallet: Wallet; ops: Op[]; rollback: () => void } {
    const c = this.adjust(zid, free, paid);
    return { wallet: c.wallet, ops: [c.op], rollback: c.rollback };
  }

  /** Load what seal() needs synchronously (wallet and chain head); undefined when both are in memory already. */
  prepare(caller: Caller): Promise<void> | undefined {
    if (caller.kind !== 'identity' || (this.walletCache.has(caller.zid) && this.chain.isPrepared(caller.slug) && this.counters.hasIdentity(caller.zid)))
      return undefined;
    return (async () => {
      await this.wallet(caller.zid);
      await this.chain.prepare(caller.slug);
    })();
  }

  /**
   * Seal a result atomically. `build` receives the charge, envelope and audit row and returns the signed body's
   * JSON bytes, which are stored under resultId and returned. Resolves after the batch is durable. On failure every in-memory
   * change is rolled back and nothing is written.
   */
  async seal(args: {
    caller: Caller;
    action: string;
    cost: number;
    resultId: string;
    resultDigest: string;
    svcond: number;
    unixMs: number;
    /** Counters reserved for this work (Counters.reserve): settled in the seal's batch. */
    counterNames: string[];
    build: (ctx: SealContext) => Buffer;
    /** Other records of the result written in the same batch (tally/record.ts), and counters it bumps by one. */
    extra?: { ops: Op[]; bump: string[] };
  }): Promise<{ bytes: Buffer }> {
    const { caller, cost } = args;
    const ops: Op[] = [];
    const rollbacks: (() => void)[] = [];
    /** Counter increments applied in memory, as name, delta pairs (reverted if the batch fails). */
    const bumped: (string | number)[] = [];
    const mark = this.counters.mark();
    let charge: TallyCharge;
    let envelope: EnvelopeRecord | null = null;
    let audit: AuditRow | null = null;
    let numbered = false;

    // Loaded by prepare() before the work, but a bounded cache may have let them go since: load again (the loop
    // ends when all three are in memory at once; from here to the commit nothing waits, so they stay).
    if (caller.kind === 'identity') for (let p = this.prepare(caller); p !== undefined; p = this.prepare(caller)) await p;
    if (caller.kind === 'identity') {
      const w = this.walletCache.get(caller.zid);
      if (!w) throw new Error('wallet not prepared');
      checkBalance(w, cost);
      const fromFree = Math.min(w.free, cost);
      const fromPaid = cost - fromFree;
      const next: Wallet = { free: w.free - fromFree, paid: w.paid - fromPaid };
      this.walletCache.set(caller.zid, next);
      this.walletWrites.changed(caller.zid);
      // Undone by giving the charge back, not by restoring a copy: seals of the same wallet made after this one
      // (in this batch or queued) keep their own charges when they roll back in any order.
      const mark = this.walletCache.mark();
      rollbacks.push(() => this.giveBack(caller.zid, mark, fromFree, fromPaid));
      ops.push({ type: 'put', sub: this.wallets, key: caller.zid, value: next });
      const { burned, foundation } = this.split(caller.zid, cost, bumped);
      const funding = fromFree === cost ? 'free' : 'paid';
      charge = { action: args.action, cost, charged: cost, burned, foundation, funded_by: funding, balance_after: next };
      const envName = envelopeCounter(caller.zid);
      const folderName = folderCounter(caller.zid, 'inbox');
      bumped.push(envName, 1, folderName, 1);
      // The node-wide envelope number is never given back (a failed seal leaves a gap): a write made meanwhile may
      // hold the next one, and a number handed out twice gives two envelopes of an owner one index key.
      this.counters.bump('envelope_seq', 1);
      numbered = true;
      this.counters.bump(envName, 1);
      this.counters.bump(folderName, 1);
      const seq = this.counters.get('envelope_seq');
      const tokenId = `env_${randomHex(24)}`;
      const core: EnvelopeCore = {
        token_id: tokenId,
        owner: caller.zid,
        face_value: burned,
        result_id: args.resultId,
        result_digest: args.resultDigest,
        svcond: args.svcond,
      };
      envelope = {
        token_id: tokenId,
        owner: caller.zid,
        face_value: burned,
        folder: 'inbox',
        funding,
        soulbound: funding === 'free',
        svcond: args.svcond,
        result_id: args.resultId,
        hash: sha256Hex(canonicalJson(core)),
        seq,
      };
      ops.push({ type: 'put', sub: this.envelopes, key: tokenId, value: envelope });
      ops.push({ type: 'put', sub: this.byOwner, key: `${caller.zid}!${padNum(seq)}`, value: tokenId });
      ops.push({ type: 'put', sub: this.byFolder, key: `${caller.zid}!inbox!${padNum(seq)}`, value: tokenId });
      const appended = this.chain.appendOps(caller.slug, args.svcond, 'compute_sealed', {
        result_id: args.resultId,
        result_digest: args.resultDigest,
        token_id: tokenId,
        face_value: burned,
      });
      audit = appended.row;
      ops.push(appended.op);
      rollbacks.push(appended.rollback);
      // The machine's envelope index (GET /api/chain/:slug/tally/envelopes), its count restored with the head on a rollback.
      ops.push(this.chain.envelopeOp(caller.slug, appended.row.seq, tokenId));
    } else {
      charge = { action: args.action, cost, charged: 0, burned: 0, foundation: 0, funded_by: caller.kind, balance_after: null };
    }
    this.counters.bump('sealed_total', 1);
    bumped.push('sealed_total', 1);
    if (args.extra) {
      for (const name of args.extra.bump) {
        this.counters.bump(name, 1);
        bumped.push(name, 1);
      }
      for (const op of args.extra.ops) ops.push(op);
    }
    // One op per counter record: the node totals, the identity's envelope counts, the day-quota slot(s).
    const names: string[] = numbered ? ['envelope_seq'] : [];
    for (let i = 0; i < bumped.length; i += 2) names.push(bumped[i] as string);
    this.counters.persistOps(names, ops);
    // The day-quota slots reserved for this work become counts in this batch (a failed batch holds them again).
    for (const name of args.counterNames) this.counters.settle(name);
    this.counters.persistOps(args.counterNames, ops);

    let bytes: Buffer;
    try {
      // Serialised once by build: the same bytes are sent and stored.
      bytes = args.build({ tally_charge: charge, envelope, audit });
      ops.push({ type: 'put', sub: this.results, key: args.resultId, value: bytes });
      await this.store.commit(ops);
    } catch (err) {
      for (let i = 0; i < bumped.length; i += 2) this.counters.revert(bumped[i] as string, bumped[i + 1] as number, mark);
      for (const name of args.counterNames) this.counters.unsettle(name);
      for (const undo of rollbacks.reverse()) undo();
      throw err;
    }
    return { bytes };
  }

  /** A sealed result's body as it was sent, or undefined (a record in the old compact format is rebuilt). */
  async getResultBytes(resultId: string): Promise<Buffer | undefined> {
    const record = await this.store.get<Buffer>(this.results, resultId);
    if (record === undefined || !isCompact(record)) return record;
    const templateId = compactTemplateId(record);
    let template = this.readTemplates.get(templateId);
    if (template === undefined) {
      const json = await this.store.get<string>(this.templates, templateId);
      if (json === undefined) throw new Error(`result ${resultId}: its template ${templateId} is missing`);
      template = templateFromStored(json);
      // Many results share a template (a repeated request): it is read and parsed once.
      this.readTemplates.set(templateId, template);
    }
    const { holes, members } = decodeCompact(record, template);
    return rebuildBody(template, holes, members);
  }

  async getResult(resultId: string): Promise<Record<string, unknown> | undefined> {
    const bytes = await this.getResultBytes(resultId);
    return bytes === undefined ? undefined : (JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
  }

  /** Read an owner's counters into memory (before heldCount or folders); undefined when they are there. */
  loadCounts(zid: string): Promise<void> | undefined {
    return this.counters.loadIdentity(zid);
  }

  /** Envelopes an owner holds (the counter; never a scan; loadCounts first). */
  heldCount(zid: string): number {
    return this.counters.get(envelopeCounter(zid));
  }

  /** An owner's oldest envelopes, at most `limit`, oldest first (by seal order). */
  async oldestEnvelopes(zid: string, limit: number): Promise<EnvelopeRecord[]> {
    const ids = await this.store.range<string>(this.byOwner, { gte: `${zid}!`, lt: `${zid}!~`, limit });
    return (
      await this.store.getMany<EnvelopeRecord>(
        this.envelopes,
        ids.map((e) => e.value),
      )
    ).filter((e): e is EnvelopeRecord => !!e);
  }

  /** Envelope records by token id (undefined where there is none). */
  async envelopesById(tokenIds: string[]): Promise<(EnvelopeRecord | undefined)[]> {
    return this.store.getMany<EnvelopeRecord>(this.envelopes, tokenIds);
  }

  /**
   * Set (bondId) or lift (null) the immovable mark of envelopes, in ONE batch with `extra` (the bond record): both
   * land or neither. The records keep their folder, so the folder counts do not change. The caller makes its
   * decisions (which envelopes, whether a bond may be made) synchronously before calling, as seal() does.
   */
  async markImmovable(envelopes: EnvelopeRecord[], bondId: string | null, extra: Op[] = []): Promise<EnvelopeRecord[]> {
    const marked = envelopes.map((e) => {
      const { immovable: _i, bond_id: _b, ...rest } = e;
      return bondId === null ? (rest as EnvelopeRecord) : { ...rest, immovable: true as const, bond_id: bondId };
    });
    const ops: Op[] = marked.map((e) => ({ type: 'put', sub: this.envelopes, key: e.token_id, value: e }));
    await this.store.commit([...ops, ...extra]);
    return marked;
  }

  /** An owner's folders with their envelope counts (from the counters; empty folders left out). */
  folders(zid: string): { folder: string; count: number }[] {
    const prefix = folderCounterPrefix(zid);
    return this.counters
      .withPrefix(prefix)
      .map(([name, count]) => ({ folder: name.slice(prefix.length), count }))
      .filter((f) => f.count > 0);
  }

  /** Envelopes of an owner, newest first; total from the counter (never a scan). */
  async listEnvelopes(zid: string, opts: { limit: number; offset: number; folder?: string; q?: string }): Promise<{ total: number; items: EnvelopeRecord[] }> {
    if (opts.q) {
      const env = await this.store.get<EnvelopeRecord>(this.envelopes, opts.q);
      const hit = env && env.owner === zid && (!opts.folder || env.folder === opts.folder) ? [env] : [];
      return { total: hit.length, items: hit.slice(opts.offset, opts.offset + opts.limit) };
    }
    for (let p = this.counters.loadIdentity(zid); p !== undefined; p = this.counters.loadIdentity(zid)) await p;
    const total = this.counters.get(opts.folder ? folderCounter(zid, opts.folder) : envelopeCounter(zid));
    const prefix = opts.folder ? `${zid}!${opts.folder}!` : `${zid}!`;
    const sub = opts.folder ? this.byFolder : this.byOwner;
    // An index key whose record is gone or names another owner or folder (a copy of a ledger a failover moved and
    // moved back) lists nothing: the page is filled from the keys after it, and the offset counts listed envelopes.
    const wanted = opts.offset + opts.limit;
    const listed: EnvelopeRecord[] = [];
    let lt = `${prefix}~`;
    for (let step = wanted; listed.length < wanted;) {
      const ids = await this.store.range<string>(sub, { gte: prefix, lt, reverse: true, limit: step });
      const records = await this.store.getMany<EnvelopeRecord>(
        this.envelopes,
        ids.map((e) => e.value),
      );
      for (const e of records) if (e !== undefined && e.owner === zid && (!opts.folder || e.folder === opts.folder)) listed.push(e);
      if (ids.length < step) break;
      lt = ids[ids.length - 1]!.key;
      step = Math.max(wanted - listed.length, 64);
    }
    return { total, items: listed.slice(opts.offset, wanted) };
  }
}
