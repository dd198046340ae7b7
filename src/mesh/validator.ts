// ONE validator for both mesh entrances (gossipsub topic validator and POST /api/mesh/gossip).
// Order of checks: secret configured (503) → event shape (400) → handshake present (401 MISSING_HANDSHAKE) →
// HMAC matches this sender/tick/body (401 INVALID_HANDSHAKE, constant-time) → tick within 120 of now
// (401 STALE_HANDSHAKE) → Ed25519 signature by the sender's key (401 INVALID_SIGNATURE) → duplicate check.
// The duplicate check claims the event id synchronously, so of two concurrent deliveries exactly one is new.
// Each refusal is a GossipError carrying its gossipsub action: stale and no-secret are Ignore, the rest Reject.
import { timingSafeEqual } from 'node:crypto';
import type { Clock } from '../kernel/clock.js';
import { stampAt } from '../kernel/clock.js';
import { canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import type { ErrorCode } from '../kernel/errors.js';
import { BoundedMap } from '../util/bounded-map.js';
import { GossipError, type GossipAction, type GossipVerdict } from './gossip-error.js';
import { HANDSHAKE_VERSION, eventId, handshakeFor, verifyEventSignature, type MeshEvent } from './wire.js';

export type { GossipVerdict } from './gossip-error.js';

/**
 * How far (in ticks) a mesh event's svcond may be from this node's clock: the staleness window of the handshake
 * (architecture.md §5), also used for signed answers of peers (key and machine lookups) and DNS claims.
 */
export const MAX_SKEW_TICKS = 120;
export const MAX_BODY_BYTES = 64 * 1024;
const TYPE_RE = /^[a-z][a-z0-9._-]{0,63}$/i;
const HANDSHAKE_RE = /^v1=[0-9a-f]{64}$/;

export type Validation = { ok: true; duplicate: boolean; id: string; digest: string; event: MeshEvent } | { ok: false; error: GossipError };

export interface ValidatorOptions {
  secret: string | null;
  clock: Clock;
  /** Most entries kept in the seen cache (oldest dropped first). */
  seenMax?: number;
  maxSkewTicks?: number;
}

/** Seen cache bounded in size (insertion order eviction) and age (an entry lives until its event would be stale). */
export class SeenCache {
  private readonly map: BoundedMap<string, number>;
  constructor(max: number) {
    this.map = new BoundedMap(max);
  }

  get size(): number {
    return this.map.size;
  }

  has(id: string): boolean {
    return this.map.has(id);
  }

  /** Record an id with the tick after which its event is stale anyway. */
  add(id: string, expiresAfterSvcond: number, nowSvcond: number): void {
    this.map.set(id, expiresAfterSvcond);
    this.sweep(nowSvcond);
  }

  delete(id: string): void {
    this.map.delete(id);
  }

  /** Drop expired entries from the oldest end. */
  sweep(nowSvcond: number): void {
    for (const [id, exp] of this.map) {
      if (exp >= nowSvcond) break;
      this.map.delete(id);
    }
  }
}

function fail(action: GossipAction, status: number, code: ErrorCode, message: string): Validation {
  return { ok: false, error: new GossipError(action, status, code, message) };
}

/** The gossipsub verdict of a validation: a duplicate is ignored, a refusal carries its own action. */
export function gossipVerdict(v: Validation): GossipVerdict {
  if (v.ok) return v.duplicate ? 'ignore' : 'accept';
  return v.error.action;
}

export class MeshValidator {
  readonly seen: SeenCache;
  private readonly secret: string | null;
  private readonly clock: Clock;
  private readonly maxSkew: number;

  constructor(opts: ValidatorOptions) {
    this.secret = opts.secret;
    this.clock = opts.clock;
    this.maxSkew = opts.maxSkewTicks ?? MAX_SKEW_TICKS;
    this.seen = new SeenCache(opts.seenMax ?? 20_000);
  }

  get enabled(): boolean {
    return this.secret !== null;
  }

  nowSvcond(): number {
    return stampAt(this.clock.nowNs()).svcond;
  }

  /** Validate an event and its handshake. On success the id is claimed in the seen cache (see release). */
  async validate(raw: unknown, handshake: unknown): Promise<Validation> {
    if (this.secret === null) return fail('ignore', 503, 'MESH_DISABLED', 'this node has no mesh secret configured');
    const shape = checkShape(raw);
    if (typeof shape === 'string') return fail('reject', 400, 'INVALID_EVENT', shape);
    const event = shape.event;

    if (handshake === undefined || handshake === null || handshake === '') {
      return fail('reject', 401, 'MISSING_HANDSHAKE', 'the x-node-handshake is missing');
    }
    if (typeof handshake !== 'string' || !HANDSHAKE_RE.test(handshake)) {
      return fail('reject', 401, 'INVALID_HANDSHAKE', `the handshake must be ${HANDSHAKE_VERSION} followed by 64 hex digits`);
    }
    const expected = Buffer.from(handshakeFor(this.secret, event.sender, event.svcond, shape.digest), 'utf8');
    const given = Buffer.from(handshake, 'utf8');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return fail('reject', 401, 'INVALID_HANDSHAKE', 'the handshake does not match this sender, tick and body');
    }
    const now = this.nowSvcond();
    if (Math.abs(event.svcond - now) > this.maxSkew) {
      return fail('ignore', 401, 'STALE_HANDSHAKE', `the event tick ${event.svcond} is more than ${this.maxSkew} ticks from now (${now})`);
    }
    if (!(await verifyEventSignature(event))) {
      return fail('reject', 401, 'INVALID_SIGNATURE', "the event signature does not verify with the sender's key");
    }
    const id = eventId(event.sender, event.svcond, shape.digest);
    const nowAfter = this.nowSvcond();
    if (this.seen.has(id)) return { ok: true, duplicate: true, id, digest: shape.digest, event };
    this.seen.add(id, event.svcond + this.maxSkew, nowAfter);
    return { ok: true, duplicate: false, id, digest: shape.digest, event };
  }

  /** Mark an event (e.g. one this node made, or one loaded from the store) as seen. */
  markSeen(id: string, svcond: number): void {
    this.seen.add(id, svcond + this.maxSkew, this.nowSvcond());
  }

  /** True the first time `id` is met within its event's skew window (then it is marked seen); false for a replay. */
  firstSight(id: string, svcond: number): boolean {
    if (this.seen.has(id)) return false;
    this.markSeen(id, svcond);
    return true;
  }

  /** Give a claimed id back when the event could not be stored, so a retry is not taken for a duplicate. */
  release(id: string): void {
    this.seen.delete(id);
  }
}

/** Structural check of {type, sender, svcond, body, signature}; returns a message on failure. */
export function checkShape(raw: unknown): { event: MeshEvent; digest: string } | string {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return 'the event must be a JSON object';
  const o = raw as Record<string, unknown>;
  const allowed = new Set(['type', 'sender', 'svcond', 'body', 'signature']);
  for (const k of Object.keys(o)) if (!allowed.has(k)) return `unknown event field "${k}"`;
  if (typeof o.type !== 'string' || !TYPE_RE.test(o.type)) return 'type must be a string of 1-64 letters, digits, . _ -';
  if (typeof o.sender !== 'string' || o.sender.length === 0 || o.sender.length > 128) return 'sender must be a peer id string';
  if (typeof o.svcond !== 'number' || !Number.isSafeInteger(o.svcond) || o.svcond < 0) return 'svcond must be a non-negative integer';
  if (!('body' in o) || o.body === undefined) return 'body is required';
  if (typeof o.signature !== 'string' || o.signature.length === 0 || o.signature.length > 200) return 'signature must be a base64 string';
  let text: string;
  try {
    text = canonicalJson(o.body);
  } catch {
    return 'body has no canonical JSON form';
  }
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) return `body exceeds ${MAX_BODY_BYTES} bytes`;
  const event: MeshEvent = { type: o.type, sender: o.sender, svcond: o.svcond, body: o.body, signature: o.signature };
  return { event, digest: sha256Hex(text) };
}
