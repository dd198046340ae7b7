// The gossip handler table: one row per event type — type → body schema (zod) → handler. Every event that passed
// the validator (handshake, tick, signature, duplicate; mesh/validator.ts) goes through here before it is accepted,
// on both entrances, and the row decides the verdict:
//   - a type with no row is accepted as it is (stored, relayed, given to onEvent observers): a capability rolls
//     out node by node, so a node forwards the events of a newer type it cannot read yet. At a modest rate only:
//     such events share one node-wide budget (UNKNOWN_TYPES_PER_MINUTE), past which they are ignored (429
//     SVC_RATE_LIMIT, scope node: not stored, not relayed, the peer not penalised); a member can invent types
//     without end and a peer id costs nothing, so no per-sender budget would hold;
//   - a type with a row travels on topicForType(type) only: on another topic it is rejected;
//   - a body failing the row's schema is rejected (400 INVALID_EVENT);
//   - the handler then applies the event; it refuses by throwing a GossipError, whose action (ignore or reject) is
//     the verdict. Any other error it throws is a local failure: ignore (the peer is not penalised), 500.
// Handlers run before the event is stored, and a store failure lets the sender retry: a handler must be idempotent.
//
// Registering a capability's events (consensus, economy, …), once, before the node starts taking gossip:
//
//   mesh.gossip.register({
//     type: 'consensus.vote',                   // its topic follows from the type (wire.ts topicForType)
//     body: z.object({ result_id: z.string(), digest: z.string().regex(/^[0-9a-f]{64}$/) }),
//     handle: async (vote, event) => {          // `vote` is the parsed body; event.sender is the verified signer
//       if (!committee.has(event.sender)) throw new GossipError('reject', 403, 'SVC_FORBIDDEN', 'not a member');
//       await votes.record(vote, event.sender);
//     },
//   });
//
// register returns the function that removes the row. A type has at most one row.
import type { z } from 'zod';
import { ServiceError } from '../kernel/errors.js';
import { SlidingWindow, windowFull } from '../util/sliding-window.js';
import { GossipError, invalidEvent } from './gossip-error.js';
import { topicForType, type MeshEvent, type MeshTopic } from './wire.js';

export interface GossipHandler<B = unknown> {
  /** The event type, e.g. 'dns.register'. */
  readonly type: string;
  /** The body's schema; the handler receives the parsed body. */
  readonly body: z.ZodType<B>;
  /** Apply an event from another node; throw GossipError to ignore or reject it. */
  handle(body: B, event: MeshEvent): void | Promise<void>;
}

/**
 * Events of types without a row a node accepts a minute, from every sender together (2 a second on average). A type
 * rolling out (one event per node and tick interval, as results.sealed) fits on a small mesh, and beyond it the nodes
 * that know the type relay it among themselves; a flood of invented types costs every node at most this many stored
 * and relayed events.
 */
export const UNKNOWN_TYPES_PER_MINUTE = 120;

export interface GossipHandlerTableOptions {
  /** Clock of the unknown-type budget (ms; default Date.now). */
  nowMs?: () => number;
  /** Events of types without a row accepted a minute (default UNKNOWN_TYPES_PER_MINUTE). */
  unknownTypesPerMinute?: number;
}

export class GossipHandlerTable {
  private readonly rows = new Map<string, GossipHandler>();
  private readonly unknownTypes: SlidingWindow;
  private readonly nowMs: () => number;

  constructor(opts: GossipHandlerTableOptions = {}) {
    this.nowMs = opts.nowMs ?? Date.now;
    this.unknownTypes = new SlidingWindow(opts.unknownTypesPerMinute ?? UNKNOWN_TYPES_PER_MINUTE, 60_000, this.nowMs, 1);
  }

  register<B>(handler: GossipHandler<B>): () => void {
    if (this.rows.has(handler.type)) throw new Error(`a gossip handler for ${handler.type} is already registered`);
    const row = handler as unknown as GossipHandler;
    this.rows.set(handler.type, row);
    return () => {
      if (this.rows.get(handler.type) === row) this.rows.delete(handler.type);
    };
  }

  /** Event types with a row, sorted. */
  types(): string[] {
    return [...this.rows.keys()].sort();
  }

  /** Does the type have a row (its events are read here)? */
  has(type: string): boolean {
    return this.rows.has(type);
  }

  /** The body schema of a type's row (undefined when the type has no row). */
  bodySchema(type: string): z.ZodType | undefined {
    return this.rows.get(type)?.body;
  }

  /** Check and apply a validated event that arrived on a topic. Resolves when accepted; throws GossipError. */
  async run(event: MeshEvent, topic: MeshTopic): Promise<void> {
    const row = this.rows.get(event.type);
    if (!row) return this.spendUnknownBudget(event.type);
    const home = topicForType(event.type);
    if (topic !== home) throw invalidEvent(`${event.type} events travel on ${home}, not ${topic}`);
    const parsed = row.body.safeParse(event.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? `body.${issue.path.join('.')}` : 'body';
      throw invalidEvent(`${event.type}: ${where}: ${issue?.message ?? 'does not match its schema'}`);
    }
    try {
      await row.handle(parsed.data, event);
    } catch (err) {
      if (err instanceof GossipError) throw err;
      const message = err instanceof ServiceError ? `${err.code}: ${err.message}` : String(err);
      throw new GossipError('ignore', 500, 'SVC_INTERNAL_ERROR', `the ${event.type} handler failed here: ${message}`);
    }
  }

  /** Count an event of a type without a row against the node-wide budget; past it, ignore (429, scope node). */
  private spendUnknownBudget(type: string): void {
    const heldUntil = this.unknownTypes.heldUntil('');
    if (heldUntil !== null) {
      const { message, extra } = windowFull(
        this.unknownTypes,
        heldUntil,
        this.nowMs(),
        `${type} has no row here: events of such types are taken at most ${this.unknownTypes.max} a minute, from every sender together`,
        'node',
      );
      throw new GossipError('ignore', 429, 'SVC_RATE_LIMIT', message, extra);
    }
    this.unknownTypes.add('');
  }
}
