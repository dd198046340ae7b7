// Stream channels (spec 2.7, 4.5): a solver (or an operator chain) with its inputs, ticked on demand or on the clock.
// Each tick continues a stateful solver from the channel's head state (its `initialState`), seals one envelope and
// receipt charged to the channel's owner, and moves the head in the SAME batch as the seal (compute/service.ts
// SealHooks): a tick is sealed and recorded together or not at all. Pushes go out after the batch is durable.
// A channel lives at its owner's home node (create is forwarded there). Its key is shown once and stored as a
// SHA-256 digest. An identity owns at most `channelsPerIdentity` open channels, counted by an index of open channels
// by owner written in the batches that open and close them; closing one frees its slot. A closed channel stays
// readable (GET, latest, verify) but every entrance that would feed or follow it — a tick, a pull link, a pull, a
// secure session or its pull, a subscription — is refused 409 SVC_CONFLICT (closedChannel); closing it takes its
// secure sessions out of the owner's count in the same batch.
import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../kernel/bytes.js';
import { capReached, ServiceError } from '../kernel/errors.js';
import { stampAt, type Clock } from '../kernel/clock.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import type { ComputeService, Sealed } from '../compute/service.js';
import type { Caller, KeyRecord } from '../records/types.js';
import { randomHex } from '../util/random-hex.js';
import { renderTemplate } from './template.js';
import { checkLink, signLink, type LinkCheck } from './links.js';
import type { StreamHub } from './hub.js';
import { SecureSessions, SESSIONS_PER_IDENTITY_DEFAULT, type SecureSession } from './secure.js';
import { backfillOnce } from '../store/backfill.js';
import { KeyedLock } from '../util/keyed-lock.js';
import { newChannelId } from './channel-id.js';
import { COSTS as COST } from '../tally/costs.js';

export const CHANNEL_KEY_PREFIX = 'stk_';
/**
 * Why a channel is not given a contract: spec 2.7 lists `contract` among a channel's fields without saying what it
 * does to a tick, so a channel keeps it null and a create that names one is refused (docs/decisions.md).
 */
export const CHANNEL_CONTRACT_REFUSAL =
  'a stream channel takes no contract on this node (the spec does not say what one would do to a tick): leave it out or null; deploy contracts on a state machine';
/** The chain_meta key of the pass that indexed channels opened before the owner index existed. */
export const OWNER_INDEX_VERSION_KEY = 'stream-owner-index-v1';

export interface StreamLimits {
  /** Open channels one identity may own. */
  channelsPerIdentity: number;
  /** Unexpired secure-pull sessions on one identity's channels. */
  sessionsPerIdentity: number;
}

export const STREAM_LIMITS_DEFAULT: StreamLimits = { channelsPerIdentity: 256, sessionsPerIdentity: SESSIONS_PER_IDENTITY_DEFAULT };

/**
 * What every entrance answers for a closed channel: 409 SVC_CONFLICT naming it (the channel is there, in a state that
 * refuses the request; the spec names no code for it). Reading it (GET, latest, verify) is still answered.
 */
export function closedChannel(id: string): ServiceError {
  return new ServiceError(409, 'SVC_CONFLICT', `stream channel ${id} is closed`, { channel: id });
}

/** The channel when it is open, else the closed-channel refusal. */
export function stillOpen(c: ChannelRecord): ChannelRecord {
  if (c.status !== 'open') throw closedChannel(c.id);
  return c;
}

/** Ticks between autotick seals: at least 1, at most about 24 h (spec part 8: 111 197 ticks). */
export const TICK_INTERVAL_MAX = 111_197;

export type ChannelSource =
  | { kind: 'solver'; solver: string; inputs: Record<string, unknown> }
  | { kind: 'compute'; domain: string; operators: string[]; inputs: Record<string, unknown> };

export interface ChannelRecord {
  id: string;
  owner: { zid: string; slug: string; home: string; key: KeyRecord };
  key_digest: string;
  source: ChannelSource;
  output_format: 'json' | 'template';
  template: string | null;
  contract: string | null;
  autotick: boolean;
  tick_interval: number;
  /** Why autotick stopped by itself (the owner could not pay), else null. */
  autotick_stopped: string | null;
  tick_count: number;
  head_state: unknown;
  last_result_id: string | null;
  last_svcond: number | null;
  status: 'open' | 'closed';
  created_svcond: number;
}

export interface CreateChannel {
  source: ChannelSource;
  outputFormat: 'json' | 'template';
  template: string | null;
  contract: string | null;
  autotick: boolean;
  tickIntervalZeqonds: number;
  initialState?: unknown;
}

/** The channel as GET shows it (never its key). */
export function channelView(c: ChannelRecord): Record<string, unknown> {
  return {
    id: c.id,
    owner: c.owner.zid,
    ...(c.source.kind === 'solver' ? { solver: c.source.solver } : { domain: c.source.domain, operators: c.source.operators }),
    inputs: c.source.inputs,
    outputFormat: c.output_format,
    template: c.template,
    contract: c.contract,
    autotick: c.autotick,
    autotick_stopped: c.autotick_stopped,
    tickIntervalZeqonds: c.tick_interval,
    tick_count: c.tick_count,
    head_state: c.head_state ?? null,
    last_result_id: c.last_result_id,
    last_svcond: c.last_svcond,
    status: c.status,
    created_svcond: c.created_svcond,
  };
}

/** What the X-Svc-* headers of a pull or a tick say (spec 2.7). */
export interface StreamHeaders {
  sealed: boolean;
  proof: string;
  token: string;
  svcond: string;
}

export function headersOf(body: Buffer | null): StreamHeaders {
  if (body === null) return { sealed: false, proof: '', token: '', svcond: '' };
  const b = JSON.parse(body.toString('utf8')) as { svcProof?: unknown; envelope?: { token_id?: unknown } | null; svcond?: unknown };
  return {
    sealed: true,
    proof: typeof b.svcProof === 'string' ? b.svcProof : '',
    token: typeof b.envelope?.token_id === 'string' ? b.envelope.token_id : '',
    svcond: String(b.svcond ?? ''),
  };
}

export interface StreamDeps {
  store: Store;
  clock: Clock;
  compute: ComputeService;
  /** A sealed result's bytes (the ledger). */
  resultBytes: (resultId: string) => Promise<Buffer | undefined>;
  linkKey: Buffer;
  /** The at-rest key of secure-pull session keys (secure.ts sessionAtRestKey). */
  sessionKey: Buffer;
  hub: StreamHub;
  /** Called after a tick is durable (webhooks, bench). */
  onTick?: (channel: ChannelRecord, sealed: Sealed) => void;
  limits?: StreamLimits;
}

export class StreamService {
  private readonly channels: Sublevel;
  private readonly autoIndex: Sublevel;
  /** Open channels by owner: `zid!id` → 1. */
  private readonly byOwner: Sublevel;
  /** Per-channel queue: ticks of one channel run one after another (each continues from the last head). */
  private readonly locks = new KeyedLock();
  /** One create at a time per owner: its count and its batch. */
  private readonly creating = new KeyedLock();
  /**
   * A close and a secure session's open, one at a time per channel (a close holds it inside its tick lock): a session is
   * opened on a channel still open, and a close counts every session opened before it. Not the tick lock, so an open
   * does not wait for a running tick.
   */
  private readonly gates = new KeyedLock();
  readonly limits: StreamLimits;
  /** Channels with autotick on (ids), loaded at start. */
  readonly autotickIds = new Set<string>();
  /** Secure-pull sessions (secure.ts). */
  readonly secure: SecureSessions;

  constructor(private readonly deps: StreamDeps) {
    this.limits = deps.limits ?? STREAM_LIMITS_DEFAULT;
    this.secure = new SecureSessions(() => this.nowMs(), deps.store, deps.sessionKey, this.limits.sessionsPerIdentity);
    this.channels = deps.store.sub('stream_channels');
    this.autoIndex = deps.store.sub('stream_autotick', 'utf8');
    this.byOwner = deps.store.sub('stream_owner');
  }

  private ownerKey(c: ChannelRecord): string {
    return `${c.owner.zid}!${c.id}`;
  }

  /** Open channels `zid` owns here, counted up to `cap`. */
  async openBy(zid: string, cap = this.limits.channelsPerIdentity): Promise<number> {
    return (await this.deps.store.range(this.byOwner, { gte: `${zid}!`, lt: `${zid}!~`, limit: cap })).length;
  }

  get hub(): StreamHub {
    return this.deps.hub;
  }

  async load(): Promise<void> {
    for (const { key } of await this.deps.store.range<string>(this.autoIndex)) this.autotickIds.add(key);
    await backfillOnce<ChannelRecord>(this.deps.store, {
      key: OWNER_INDEX_VERSION_KEY,
      source: this.channels,
      opsFor: (_id, c) => (c.status === 'open' ? [{ type: 'put', sub: this.byOwner, key: this.ownerKey(c), value: 1 }] : []),
    });
    await this.secure.load();
  }

  private nowMs(): number {
    return Number(this.deps.clock.nowNs() / 1_000_000n);
  }

  async get(id: string): Promise<ChannelRecord> {
    const c = typeof id === 'string' && id.length <= 128 ? await this.deps.store.get<ChannelRecord>(this.channels, id) : undefined;
    if (!c) throw new ServiceError(404, 'SVC_NOT_FOUND', `no stream channel ${JSON.stringify(id)}`);
    return c;
  }

  /** Create a channel for an identity; the answer carries its key, shown this once. */
  async create(caller: Caller, req: CreateChannel): Promise<{ channel: ChannelRecord; key: string }> {
    if (caller.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'a stream channel belongs to an identity: use an identity key (sk_ or zsm_)');
    let headState: unknown = null;
    let source = req.source;
    if (source.kind === 'solver') {
      // 400s now, not at the first tick.
      const resolved = this.deps.compute.resolveSolver(source.solver, source.inputs, req.initialState);
      source = { kind: 'solver', solver: resolved.solver.id, inputs: source.inputs };
      headState = resolved.state === undefined ? null : JSON.parse(JSON.stringify(resolved.state));
    } else {
      // The chain evaluated once, unsealed and uncharged: its 400s now, not at the first tick.
      await this.deps.compute.compute(caller, { domain: source.domain, operators: source.operators, inputs: source.inputs }, { seal: false });
    }
    const key = `${CHANNEL_KEY_PREFIX}${randomHex(32)}${randomHex(16)}`;
    const id = newChannelId(caller.home);
    const channel: ChannelRecord = {
      id,
      owner: { zid: caller.zid, slug: caller.slug, home: caller.home, key: caller.key },
      key_digest: sha256Hex(key),
      source,
      output_format: req.outputFormat,
      template: req.template,
      contract: req.contract,
      autotick: req.autotick,
      tick_interval: req.tickIntervalZeqonds,
      autotick_stopped: null,
      tick_count: 0,
      head_state: headState,
      last_result_id: null,
      last_svcond: null,
      status: 'open',
      created_svcond: stampAt(this.deps.clock.nowNs()).svcond,
    };
    const ops: Op[] = [
      { type: 'put', sub: this.channels, key: id, value: channel },
      { type: 'put', sub: this.byOwner, key: this.ownerKey(channel), value: 1 },
    ];
    if (channel.autotick) ops.push({ type: 'put', sub: this.autoIndex, key: id, value: '1' });
    // Counted and written under the owner's lock: parallel creates cannot pass the cap; at it, 409 and nothing written.
    await this.creating.run(caller.zid, async () => {
      const open = await this.openBy(caller.zid);
      if (open >= this.limits.channelsPerIdentity) throw capReached('open stream channels', this.limits.channelsPerIdentity, open, 'close one to open another');
      await this.deps.store.commit(ops);
    });
    if (channel.autotick) this.autotickIds.add(id);
    return { channel, key };
  }

  /** Does `key` open this channel (its own key, compared by digest in constant time)? */
  isChannelKey(channel: ChannelRecord, key: string): boolean {
    if (!key.startsWith(CHANNEL_KEY_PREFIX)) return false;
    return timingSafeEqual(Buffer.from(sha256Hex(key), 'hex'), Buffer.from(channel.key_digest, 'hex'));
  }

  /** The owner as the caller a tick charges. */
  ownerCaller(c: ChannelRecord): Caller {
    return { kind: 'identity', zid: c.owner.zid, slug: c.owner.slug, home: c.owner.home, key: c.owner.key };
  }

  /** One tick: continue from the head state, seal, move the head in the seal's batch; then push. */
  tick(id: string): Promise<{ channel: ChannelRecord; sealed: Sealed }> {
    return this.locks.run(id, async () => {
      const c = stillOpen(await this.get(id));
      let next: ChannelRecord | null = null;
      const hooks = {
        ops: (facts: { result_id: string; svcond: number }, run: { state: unknown }): Op[] => {
          next = {
            ...c,
            tick_count: c.tick_count + 1,
            head_state: run.state === undefined ? c.head_state : run.state,
            last_result_id: facts.result_id,
            last_svcond: facts.svcond,
          };
          return [{ type: 'put', sub: this.channels, key: id, value: next }];
        },
      };
      const caller = this.ownerCaller(c);
      const stream = { stream: { channel: id, tick: c.tick_count + 1 } };
      const s = c.source;
      const sealed =
        s.kind === 'solver'
          ? await this.deps.compute.solve(caller, s.solver, s.inputs, c.head_state ?? undefined, stream, hooks)
          : await this.deps.compute.compute(caller, { domain: s.domain, operators: s.operators, inputs: s.inputs }, { seal: true }, hooks);
      const channel = next ?? c;
      // Durable now: push. Nothing a listener does changes the answer (the tick is sealed).
      try {
        this.deps.hub.publish(id, sealed.bytes);
        this.deps.onTick?.(channel, sealed);
      } catch {
        /* a push that fails is the subscriber's loss, not the tick's */
      }
      return { channel, sealed };
    });
  }

  /** The last sealed envelope, or null before the first tick. */
  async latestBytes(c: ChannelRecord): Promise<Buffer | null> {
    if (c.last_result_id === null) return null;
    return (await this.deps.resultBytes(c.last_result_id)) ?? null;
  }

  /** GET latest: the last output in the channel's format. */
  async latest(c: ChannelRecord): Promise<{ bytes: Buffer | null; contentType: string; body: Buffer | string | null }> {
    const bytes = await this.latestBytes(c);
    if (c.output_format === 'template') {
      const text = bytes === null ? '' : renderTemplate(c.template ?? '', JSON.parse(bytes.toString('utf8')));
      return { bytes, contentType: 'text/plain; charset=utf-8', body: text };
    }
    return { bytes, contentType: 'application/json; charset=utf-8', body: bytes };
  }

  async close(id: string): Promise<ChannelRecord> {
    return this.locks.run(id, () =>
      this.gates.run(id, async () => {
        const c = await this.get(id);
        if (c.status === 'closed') return c;
        const closed: ChannelRecord = { ...c, status: 'closed', autotick: false };
        await this.deps.store.commit([
          { type: 'put', sub: this.channels, key: id, value: closed },
          { type: 'del', sub: this.autoIndex, key: id },
          { type: 'del', sub: this.byOwner, key: this.ownerKey(c) },
          ...(await this.secure.uncountOps(c.owner.zid, id)),
        ]);
        this.autotickIds.delete(id);
        this.deps.hub.closeChannel(id, 'channel closed');
        return closed;
      }),
    );
  }

  /** A secure-pull session on an open channel (secure.ts open); 409 once the channel is closed. */
  openSecure(id: string, clientPublic: KeyObject): Promise<{ session: SecureSession; serverPublicKey: string }> {
    return this.gates.run(id, async () => {
      const c = stillOpen(await this.get(id));
      return this.secure.open(c.id, c.owner.zid, clientPublic);
    });
  }

  /** Autotick stops by itself (the owner cannot pay); recorded so a restart does not start it again. */
  async stopAutotick(id: string, reason: string): Promise<void> {
    await this.locks.run(id, async () => {
      const c = await this.get(id);
      await this.deps.store.commit([
        { type: 'put', sub: this.channels, key: id, value: { ...c, autotick: false, autotick_stopped: reason } },
        { type: 'del', sub: this.autoIndex, key: id },
      ]);
      this.autotickIds.delete(id);
    });
  }

  /** What one tick of the channel costs its owner: a solver run, or a closed-form chain (KO42 free, 1 … 20). */
  tickPrice(c: ChannelRecord): number {
    if (c.source.kind === 'solver') return COST.solver;
    return Math.min(20, Math.max(1, c.source.operators.filter((o) => o !== 'KO42').length)) * COST.computePerOperator;
  }

  /**
   * The owner turns autotick on or off (PATCH /api/svc/streams/:id), optionally with a new interval. Turning it on
   * again after it stopped for lack of funds clears `autotick_stopped`; 402 INSUFFICIENT_BALANCE (nothing written) when
   * the owner still cannot pay one tick. Stored with the autotick index in one batch, so a restart keeps it.
   */
  async setAutotick(id: string, on: boolean, tickIntervalZeqonds?: number): Promise<ChannelRecord> {
    return this.locks.run(id, async () => {
      const c = stillOpen(await this.get(id));
      if (on) await this.deps.compute.assertCanPayCost(this.ownerCaller(c), this.tickPrice(c));
      const next: ChannelRecord = { ...c, autotick: on, autotick_stopped: null, tick_interval: tickIntervalZeqonds ?? c.tick_interval };
      await this.deps.store.commit([
        { type: 'put', sub: this.channels, key: id, value: next },
        on ? { type: 'put', sub: this.autoIndex, key: id, value: '1' } : { type: 'del', sub: this.autoIndex, key: id },
      ]);
      if (on) this.autotickIds.add(id);
      else this.autotickIds.delete(id);
      return next;
    });
  }

  /**
   * A signed pull link (links.ts) to an open channel. Read under the channel's gate, as a close writes under it: a link
   * asked for while the channel closes waits for the close and is refused, never issued to open nothing.
   */
  link(id: string, ttlSeconds: number): Promise<{ sig: string; expiresMs: number }> {
    return this.gates.run(id, async () => {
      const c = stillOpen(await this.get(id));
      const expiresMs = this.nowMs() + ttlSeconds * 1000;
      return { sig: signLink(this.deps.linkKey, c.id, expiresMs), expiresMs };
    });
  }

  checkLink(channelId: string, sig: unknown): LinkCheck {
    return checkLink(this.deps.linkKey, channelId, sig, this.nowMs());
  }
}
