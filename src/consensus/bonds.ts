// Contribution bonds (architecture.md §6): bond records, their attestations, and the registry every node keeps.
//   bond record  = {bond_id, zid, node, token_ids, svcond}, made at the identity's home (`node`)
//   attestation  = base64 Ed25519 by `node`'s key over canonicalJson({attests: 'bond', bond}) (release:
//                  {attests: 'release', release}); the `attests` member keeps one kind of signature from passing
//                  for the other
// The home marks the envelopes immovable and writes the bond record in one batch (Ledger.markImmovable), then
// gossips the attested record on svc/consensus/1 (`consensus.bond`, `consensus.release`). Every node keeps the
// registry in a sublevel and rebuilds its maps from it on start. A node holds at most one active bond: its
// operator's.
// Slashing is every node's fact (slashing.ts): an applied upheld verdict marks the bond slashed in the registry
// (`slashed`), which takes it out of the active maps at once: ineligible, its node's runs carry no bond. The bond's
// home, once it has moved the envelopes, signs `consensus.slashed` (`slash_applied`); past the mark's due tick
// without it the bond is `defaulted`: slashed anyway, and its node may not bond anyone until it applies it. A
// slashed operator cannot bond again until its cooldown ends (every node refuses such a bond attestation too). Decisions (already bonded, the node's one bond, a release in progress) are made synchronously
// against the in-memory maps and a pending set, so two concurrent requests cannot both pass; the maps change only
// after the batch is durable, so a failed batch leaves nothing behind.
import { z } from 'zod';
import { canonicalJson } from '../kernel/canonical.js';
import { InputError, ServiceError } from '../kernel/errors.js';
import type { Json, Op, Store, Sublevel } from '../store/db.js';
import type { EnvelopeRecord, Ledger } from '../tally/ledger.js';
import { GossipError } from '../mesh/gossip-error.js';
import type { GossipHandler } from '../mesh/gossip-handlers.js';
import type { MeshEvent } from '../mesh/wire.js';
import type { ContributionPolicy } from './policy.js';
import type { EnvelopeLocks } from '../tally/folders.js';
import { randomHex } from '../util/random-hex.js';
import { TICK_SECONDS_EXACT } from '../kernel/clock.js';

export const BOND_EVENT = 'consensus.bond';
export const RELEASE_EVENT = 'consensus.release';
export const SLASHED_EVENT = 'consensus.slashed';

export const BOND_ID_PATTERN = /^bond_[0-9a-f]{24}$/;
const TOKEN_ID = z.string().min(1).max(128);
const PEER_ID = z.string().min(1).max(128);

export interface BondRecord {
  bond_id: string;
  zid: string;
  /** The node (peer id) that holds the bond: the identity's home, whose operator the identity is. */
  node: string;
  token_ids: string[];
  /** Tick at which the bond was made. */
  svcond: number;
}

export interface ReleaseRecord {
  bond_id: string;
  zid: string;
  node: string;
  svcond: number;
}

/** A bond record with its attestation: the body of a consensus.bond event. */
export interface AttestedBond {
  bond: BondRecord;
  attestation: string;
}

/** A release with its attestation: the body of a consensus.release event. */
export interface AttestedRelease {
  release: ReleaseRecord;
  attestation: string;
}

/** A slashing as the bond's home applied it: the envelopes it moved, signed by that home. */
export interface SlashApplied {
  bond_id: string;
  challenge_id: string;
  node: string;
  token_ids: string[];
  svcond: number;
}

/** A slashing with its attestation: the body of a consensus.slashed event. */
export interface AttestedSlash {
  slashed: SlashApplied;
  attestation: string;
}

/** An upheld verdict against a bond, as every node marks it in its registry. */
export interface SlashMark {
  challenge_id: string;
  /** The challenge's tick (signed by its opener, the same at every node): the cooldown counts from it. */
  challenge_svcond: number;
  /** The tick by which the bond's home must have applied it: the challenge's deadline + slashing.applyTicks. */
  due_svcond: number;
}

/** Where a slashed bond stands at a tick: its home applied it, not yet (within the due tick), or defaulted. */
export type SlashState = 'applied' | 'pending' | 'defaulted';

/**
 * What the registry keeps per bond id. `bond` is null for a release heard before its bond (kept so the late bond
 * stays released). A release whose attestation is '' was inferred here, not heard: a newer bond of the same node
 * superseded this one (a node holds one bond), and a real release heard later replaces it.
 */
export interface RegistryEntry {
  bond_id: string;
  bond: AttestedBond | null;
  release: AttestedRelease | null;
  /** The upheld verdict that slashed it (absent: never slashed). */
  slashed?: SlashMark | null;
  /** Its home's attestation that the slashing is applied (absent: not heard). */
  slash_applied?: AttestedSlash | null;
  /**
   * This node's tick when it first recorded the bond record (absent: recorded before this was kept, or made here):
   * a bond counts as made no earlier than BOND_HEARD_SLACK_TICKS before it (settledFrom), so a back-dated record
   * does not skip the settle time.
   */
  heard_svcond?: number;
}

/**
 * Ticks a bond record may be dated before the tick this node first heard it and still count from its own tick: gossip
 * in flight and clocks a little apart. A record heard later counts from (heard − this) here (settledFrom).
 */
export const BOND_HEARD_SLACK_TICKS = 8;

export const bondBody = z
  .object({
    bond: z
      .object({
        bond_id: z.string().regex(BOND_ID_PATTERN, 'bond_ followed by 24 hex digits'),
        zid: z.string().min(1).max(128),
        node: PEER_ID,
        token_ids: z.array(TOKEN_ID).min(1).max(1_500),
        svcond: z.number().int().nonnegative(),
      })
      .strict(),
    attestation: z.string().min(1).max(128),
  })
  .strict();

export const releaseBody = z
  .object({
    release: z
      .object({
        bond_id: z.string().regex(BOND_ID_PATTERN, 'bond_ followed by 24 hex digits'),
        zid: z.string().min(1).max(128),
        node: PEER_ID,
        svcond: z.number().int().nonnegative(),
      })
      .strict(),
    attestation: z.string().min(1).max(128),
  })
  .strict();

export const slashedBody = z
  .object({
    slashed: z
      .object({
        bond_id: z.string().regex(BOND_ID_PATTERN, 'bond_ followed by 24 hex digits'),
        challenge_id: z.string().regex(/^chl_[0-9a-f]{32}$/),
        node: PEER_ID,
        token_ids: z.array(TOKEN_ID).max(1_500),
        svcond: z.number().int().nonnegative(),
      })
      .strict(),
    attestation: z.string().min(1).max(128),
  })
  .strict();

/** The text a slashing attestation signs. */
export function slashedAttestationText(slashed: SlashApplied): string {
  return canonicalJson({ attests: 'slashed', slashed });
}

/** The text a bond attestation signs. */
export function bondAttestationText(bond: BondRecord): string {
  return canonicalJson({ attests: 'bond', bond });
}

/** The text a release attestation signs. */
export function releaseAttestationText(release: ReleaseRecord): string {
  return canonicalJson({ attests: 'release', release });
}

export interface BondServiceOptions {
  store: Store;
  ledger: Ledger;
  policy: ContributionPolicy;
  nodeId: () => string;
  nowSvcond: () => number;
  /**
   * The per-identity envelope lock that folder moves and transfers take: a bond reads envelope records and writes
   * them back marked, so a transfer or a move of the same envelopes must not come in between.
   */
  locks?: EnvelopeLocks;
  /** base64 Ed25519 signature of a text with this node's key. */
  sign: (text: string) => string;
  /** Does `signature` verify for `text` under the key of node `signer`? */
  verify: (signer: string, text: string, signature: string) => boolean;
  /** Gossip an event on svc/consensus/1 (absent without a mesh). */
  publish?: (type: string, body: unknown) => Promise<void>;
  /** Ids of the open challenges against a bond (challenges come with their own service; none yet). */
  openChallenges?: (bondId: string) => string[];
  /** Ticks a slashed operator cannot bond again, from its challenge's tick (0 or absent: no cooldown). */
  cooldownTicks?: number;
  /**
   * The node an identity is homed at, as this node's directory says (it may ask the peers), or null when unknown.
   * A bond heard from the mesh stands only for an identity homed at the bond's node.
   */
  homeOf?: (zid: string) => Promise<string | null>;
  /** Entries of bonds not heard here (a release or slashing heard first) kept at most; default UNHEARD_BONDS_MAX. */
  unheardMax?: number;
}

/**
 * Releases and slashings of bonds not heard here kept at most (entries whose `bond` is null): each is kept so a late
 * bond stays released, and a member can sign them for bond ids it invents, from peer ids that cost nothing, so past
 * this many a further one is ignored (507 BOND_REGISTRY_FULL, not relayed). An honest node re-announces only its latest
 * bond's record, so a mesh holds about one such entry per node that ever bonded and was not heard.
 */
export const UNHEARD_BONDS_MAX = 4096;

export class BondService {
  private readonly sub: Sublevel;
  private readonly entries = new Map<string, RegistryEntry>();
  /** Entries whose bond is not heard here (bond null): bounded by unheardMax. */
  private unheard = 0;
  /** Active bond id by identity and by node. */
  private readonly byZid = new Map<string, string>();
  private readonly byNode = new Map<string, string>();
  /** Identities with a bond or release being written here, and whether this node's own bond is being made. */
  private readonly pending = new Set<string>();
  private nodeBonding = false;
  /** This node's latest bond entry (active or released): what reannounce() gossips again. */
  private latestOwn: RegistryEntry | null = null;

  constructor(private readonly o: BondServiceOptions) {
    this.sub = o.store.sub('bonds');
  }

  /** Rebuild the maps from the sublevel. */
  async load(): Promise<void> {
    const all = await this.o.store.range<RegistryEntry>(this.sub);
    for (const { value } of all) this.remember(value);
  }

  /** The active bond of an identity, or null. */
  ofZid(zid: string): AttestedBond | null {
    const id = this.byZid.get(zid);
    return id === undefined ? null : (this.entries.get(id)?.bond ?? null);
  }

  /** The active bond held by a node (its operator's), or null. */
  ofNode(node: string): AttestedBond | null {
    const id = this.byNode.get(node);
    return id === undefined ? null : (this.entries.get(id)?.bond ?? null);
  }

  /** This node's latest bond (active, released or slashed), or null when it never held one. */
  own(): RegistryEntry | null {
    return this.latestOwn;
  }

  /** Does the registry hold a bond of `node`, active or released (its key is then known to the mesh)? */
  registers(node: string): boolean {
    if (this.byNode.has(node)) return true;
    for (const e of this.entries.values()) if (e.bond?.bond.node === node) return true;
    return false;
  }

  /** A registry entry by bond id (active or released), or null. */
  get(bondId: string): RegistryEntry | null {
    return this.entries.get(bondId) ?? null;
  }

  /**
   * The node the registry holds bond `bondId` under (active, released or slashed), or null when no bond record of
   * that id is known here. A bond id counts for a node only when this is that node (executed_by, slashing).
   */
  holderOf(bondId: string): string | null {
    return this.entries.get(bondId)?.bond?.bond.node ?? null;
  }

  /**
   * The tick from which a bond counts as made here: its signed tick, unless this node first heard the record more
   * than BOND_HEARD_SLACK_TICKS after it — then that tick less the slack (a record cannot be dated into the past to
   * skip the settle time). Null for a bond id not known here.
   */
  settledFrom(bondId: string): number | null {
    const e = this.entries.get(bondId);
    if (!e?.bond) return null;
    const signed = e.bond.bond.svcond;
    return e.heard_svcond === undefined ? signed : Math.max(signed, e.heard_svcond - BOND_HEARD_SLACK_TICKS);
  }

  /** Ids of every bond of an identity this node knows (active or released; the registry is in memory). */
  idsOf(zid: string): string[] {
    const ids: string[] = [];
    for (const [id, e] of this.entries) if (e.bond?.bond.zid === zid) ids.push(id);
    return ids;
  }

  /** Active bonds, oldest first. */
  active(): AttestedBond[] {
    return [...this.byNode.values()]
      .map((id) => this.entries.get(id)!.bond!)
      .sort((a, b) => a.bond.svcond - b.bond.svcond || (a.bond.bond_id < b.bond.bond_id ? -1 : 1));
  }

  openChallenges(bondId: string): string[] {
    return this.o.openChallenges?.(bondId) ?? [];
  }

  /**
   * Bond `policy.bondEnvelopes` envelopes of `zid` (homed here): the given token ids, else the oldest held. 409 when
   * the identity already holds a bond or this node holds another identity's; 400 when it holds too few envelopes
   * or a token id is not its own. One batch: the envelopes' marks and the registry entry.
   */
  async bond(zid: string, tokenIds?: string[]): Promise<AttestedBond> {
    const node = this.o.nodeId();
    const needed = this.o.policy.bondEnvelopes;
    const existing = this.ofZid(zid);
    if (existing || this.pending.has(zid)) {
      throw new ServiceError(409, 'SVC_CONFLICT', 'this identity already holds a bond; release it first', { bond_id: existing?.bond.bond_id ?? null });
    }
    const cooldown = this.cooldownOf(zid);
    if (cooldown && this.o.nowSvcond() < cooldown.until_svcond) {
      // A tick is floor(unix time / tick length): the cooldown's end tick begins at this unix time.
      const endMs = Math.round(cooldown.until_svcond * TICK_SECONDS_EXACT * 1000);
      throw new ServiceError(
        403,
        'SVC_BOND_COOLDOWN',
        `this identity's bond was slashed (challenge ${cooldown.challenge_id}): it cannot bond again before tick ${cooldown.until_svcond}`,
        { challenge_id: cooldown.challenge_id, cooldown_until_svcond: cooldown.until_svcond, cooldown_until: new Date(endMs).toISOString() },
      );
    }
    const operator = this.ofNode(node);
    if (operator || this.nodeBonding) {
      throw new ServiceError(409, 'SVC_CONFLICT', "this node already holds a bond, its operator's: a node holds one bond", {
        bond_id: operator?.bond.bond_id ?? null,
      });
    }
    this.pending.add(zid);
    this.nodeBonding = true;
    try {
      const { attested, entry } = await this.locked(zid, async () => {
        const envelopes = tokenIds ? await this.chosen(zid, tokenIds, needed) : await this.oldest(zid, needed);
        const bond: BondRecord = { bond_id: `bond_${randomHex(24)}`, zid, node, token_ids: envelopes.map((e) => e.token_id), svcond: this.o.nowSvcond() };
        const attested: AttestedBond = { bond, attestation: this.o.sign(bondAttestationText(bond)) };
        const entry: RegistryEntry = { bond_id: bond.bond_id, bond: attested, release: null };
        await this.o.ledger.markImmovable(envelopes, bond.bond_id, [this.putOp(entry)]);
        return { attested, entry };
      });
      this.remember(entry);
      await this.gossip(BOND_EVENT, attested);
      return attested;
    } finally {
      this.pending.delete(zid);
      this.nodeBonding = false;
    }
  }

  /**
   * Release the bond of `zid` (homed here): 409 when it holds none or a challenge against it is open. Lifts the
   * mark of its envelopes still held under it and records the release, with `extra` ops (e.g. the mode's return to
   * idle), in one batch.
   */
  async release(zid: string, extra: Op[] = []): Promise<AttestedRelease> {
    const held = this.ofZid(zid);
    if (!held || this.pending.has(zid)) throw new ServiceError(409, 'SVC_CONFLICT', 'this identity holds no bond to release', { bond_id: null });
    const { bond } = held;
    const open = this.openChallenges(bond.bond_id);
    if (open.length > 0) {
      throw new ServiceError(409, 'SVC_BOND_CHALLENGED', `the bond cannot be released while ${open.length} challenge(s) against it are open`, {
        bond_id: bond.bond_id,
        open_challenges: open,
      });
    }
    this.pending.add(zid);
    try {
      const { attested, entry } = await this.locked(zid, async () => {
        const envelopes = (await this.o.ledger.envelopesById(bond.token_ids)).filter(
          (e): e is EnvelopeRecord => !!e && e.owner === zid && e.bond_id === bond.bond_id,
        );
        const release: ReleaseRecord = { bond_id: bond.bond_id, zid, node: bond.node, svcond: this.o.nowSvcond() };
        const attested: AttestedRelease = { release, attestation: this.o.sign(releaseAttestationText(release)) };
        const entry: RegistryEntry = { bond_id: bond.bond_id, bond: held, release: attested };
        await this.o.ledger.markImmovable(envelopes, null, [this.putOp(entry), ...extra]);
        return { attested, entry };
      });
      this.remember(entry);
      await this.gossip(RELEASE_EVENT, attested);
      return attested;
    } finally {
      this.pending.delete(zid);
    }
  }

  /** Run `work` under the identity's envelope lock (when the node gave one). */
  private locked<T>(zid: string, work: () => Promise<T>): Promise<T> {
    return this.o.locks ? this.o.locks.run(zid, work) : work();
  }

  /**
   * Gossip this node's latest bond again (its release when released), so a node that joined or was away since
   * learns it: gossip has no history. Idempotent at the receivers; called on a timer by the node.
   */
  async reannounce(): Promise<void> {
    const own = this.latestOwn;
    if (!own?.bond) return;
    if (own.slash_applied) await this.gossip(SLASHED_EVENT, own.slash_applied);
    else if (own.release && own.release.attestation !== '') await this.gossip(RELEASE_EVENT, own.release);
    else if (!own.release) await this.gossip(BOND_EVENT, own.bond);
  }

  /** The gossip rows: consensus.bond, consensus.release and consensus.slashed, verified and applied to the registry. */
  handlers(): [GossipHandler<AttestedBond>, GossipHandler<AttestedRelease>, GossipHandler<AttestedSlash>] {
    return [
      { type: BOND_EVENT, body: bondBody, handle: (body, event) => this.applyBond(body, event) },
      { type: RELEASE_EVENT, body: releaseBody, handle: (body, event) => this.applyRelease(body, event) },
      { type: SLASHED_EVENT, body: slashedBody, handle: (body, event) => this.applySlashed(body, event) },
    ];
  }

  // ---------------------------------------------------------------- slashing

  /**
   * Mark a bond slashed by an upheld verdict (every node, slashing.ts): out of the active maps at once. Idempotent:
   * the first mark stands. `extra` ops go in the same batch.
   */
  async markSlashed(bondId: string, mark: SlashMark, extra: Op[] = []): Promise<void> {
    const known = this.entries.get(bondId);
    if (known?.slashed) {
      if (extra.length > 0) await this.o.store.commit(extra);
      return;
    }
    const entry: RegistryEntry = {
      bond_id: bondId,
      bond: known?.bond ?? null,
      release: known?.release ?? null,
      slashed: mark,
      slash_applied: known?.slash_applied ?? null,
      ...heardOf(known),
    };
    await this.o.store.commit([this.putOp(entry), ...extra]);
    this.remember(entry);
  }

  /**
   * At the bond's home: the registry op recording its own slashing as applied (in the slashing's batch), and what
   * remembers and gossips it once that batch is durable.
   */
  appliedOps(applied: SlashApplied): { ops: Op[]; done: () => Promise<void> } {
    const attested: AttestedSlash = { slashed: applied, attestation: this.o.sign(slashedAttestationText(applied)) };
    const known = this.entries.get(applied.bond_id);
    const entry: RegistryEntry = {
      bond_id: applied.bond_id,
      bond: known?.bond ?? null,
      release: known?.release ?? null,
      slashed: known?.slashed ?? null,
      slash_applied: attested,
      ...heardOf(known),
    };
    return {
      ops: [this.putOp(entry)],
      done: async () => {
        this.remember(entry);
        await this.gossip(SLASHED_EVENT, attested);
      },
    };
  }

  /** Where a bond's slashing stands at tick `now`; null when it was never slashed. */
  slashState(bondId: string, now: number): SlashState | null {
    const e = this.entries.get(bondId);
    if (!e || (!e.slashed && !e.slash_applied)) return null;
    if (e.slash_applied) return 'applied';
    return now > e.slashed!.due_svcond ? 'defaulted' : 'pending';
  }

  /** The latest cooldown of an identity's slashed bonds (its end tick and the challenge), or null. */
  cooldownOf(zid: string): { until_svcond: number; challenge_id: string } | null {
    const ticks = this.o.cooldownTicks ?? 0;
    let out: { until_svcond: number; challenge_id: string } | null = null;
    if (ticks <= 0) return null;
    for (const e of this.entries.values()) {
      if (e.bond?.bond.zid !== zid || !e.slashed) continue;
      const until = e.slashed.challenge_svcond + ticks;
      if (!out || until > out.until_svcond) out = { until_svcond: until, challenge_id: e.slashed.challenge_id };
    }
    return out;
  }

  /** A bond of `node` whose slashing its home has not applied past the due tick, or null. */
  defaultedOf(node: string, now: number): RegistryEntry | null {
    for (const e of this.entries.values()) if (e.bond?.bond.node === node && this.slashState(e.bond_id, now) === 'defaulted') return e;
    return null;
  }

  /** [REJECT] unless the sender is the bond's node and the attestation verifies under its key. Idempotent. */
  async applySlashed(body: AttestedSlash, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    const { slashed } = body;
    if (event.sender !== slashed.node) throw new GossipError('reject', 400, 'INVALID_ATTESTATION', "a slashing must be gossiped by the bond's node");
    if (!this.o.verify(slashed.node, slashedAttestationText(slashed), body.attestation))
      throw new GossipError('reject', 400, 'INVALID_ATTESTATION', "the slashing attestation is not signed by the bond's node");
    const known = this.entries.get(slashed.bond_id);
    if (known?.bond && known.bond.bond.node !== slashed.node)
      throw new GossipError('reject', 400, 'INVALID_ATTESTATION', 'a slashing signed by a node that does not hold the bond');
    if (known?.slash_applied) return;
    if (known === undefined) this.refuseUnheardPastBound(slashed.bond_id);
    const entry: RegistryEntry = {
      bond_id: slashed.bond_id,
      bond: known?.bond ?? null,
      release: known?.release ?? null,
      slashed: known?.slashed ?? null,
      slash_applied: body,
      ...heardOf(known),
    };
    await this.o.store.commit([this.putOp(entry)]);
    this.remember(entry);
  }

  /** [REJECT] unless the sender is the bond's node and the attestation verifies under its key. Idempotent. */
  async applyBond(body: AttestedBond, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    const { bond } = body;
    if (event.sender !== bond.node) throw new GossipError('reject', 400, 'INVALID_ATTESTATION', "a bond attestation must be gossiped by the bond's node");
    // A bond of fewer envelopes than the policy asks puts less at stake than every node assumes: refused.
    if (new Set(bond.token_ids).size < this.o.policy.bondEnvelopes)
      throw new GossipError(
        'reject',
        400,
        'INVALID_ATTESTATION',
        `a bond holds ${this.o.policy.bondEnvelopes} distinct envelopes; this one names ${new Set(bond.token_ids).size}`,
      );
    if (!this.o.verify(bond.node, bondAttestationText(bond), body.attestation)) {
      throw new GossipError('reject', 400, 'INVALID_ATTESTATION', "the bond attestation is not signed by the bond's node");
    }
    const known = this.entries.get(bond.bond_id);
    if (!known?.bond) {
      this.refuseSlashedOperator(bond);
      await this.refuseForeignIdentity(bond);
    }
    if (known?.bond) {
      if (known.bond.attestation !== body.attestation && canonicalJson(known.bond.bond) !== canonicalJson(bond)) {
        throw new GossipError('reject', 400, 'INVALID_ATTESTATION', 'another bond record under a known bond id');
      }
      return;
    }
    const entry: RegistryEntry = {
      bond_id: bond.bond_id,
      bond: body,
      release: known?.release ?? null,
      slashed: known?.slashed ?? null,
      slash_applied: known?.slash_applied ?? null,
      heard_svcond: this.o.nowSvcond(),
    };
    const ops: Op[] = [this.putOp(entry)];
    // A node holds one bond: a newer bond of the same node means the older one was released (its release not heard yet).
    const older = this.byNode.get(bond.node);
    const olderEntry = older !== undefined ? this.entries.get(older) : undefined;
    if (olderEntry?.bond && olderEntry.bond.bond.svcond > bond.svcond && entry.release === null) {
      // This one is the older: kept, superseded at once.
      entry.release = { release: { bond_id: bond.bond_id, zid: bond.zid, node: bond.node, svcond: olderEntry.bond.bond.svcond }, attestation: '' };
      ops[0] = this.putOp(entry);
    } else if (olderEntry?.bond && entry.release === null) {
      const superseded: RegistryEntry = {
        ...olderEntry,
        release: { release: { bond_id: olderEntry.bond_id, zid: olderEntry.bond.bond.zid, node: bond.node, svcond: bond.svcond }, attestation: '' },
      };
      ops.push(this.putOp(superseded));
      await this.o.store.commit(ops);
      this.remember(superseded);
      this.remember(entry);
      return;
    }
    await this.o.store.commit(ops);
    this.remember(entry);
  }

  /** [REJECT] unless the sender is the bond's node and the attestation verifies under its key. Idempotent. */
  async applyRelease(body: AttestedRelease, event: Pick<MeshEvent, 'sender'>): Promise<void> {
    const { release } = body;
    if (event.sender !== release.node) throw new GossipError('reject', 400, 'INVALID_ATTESTATION', "a release must be gossiped by the bond's node");
    if (!this.o.verify(release.node, releaseAttestationText(release), body.attestation)) {
      throw new GossipError('reject', 400, 'INVALID_ATTESTATION', "the release attestation is not signed by the bond's node");
    }
    const known = this.entries.get(release.bond_id);
    if (known?.bond && known.bond.bond.node !== release.node)
      throw new GossipError('reject', 400, 'INVALID_ATTESTATION', 'a release signed by a node that does not hold the bond');
    if (known?.release && known.release.attestation !== '') return;
    if (known === undefined) this.refuseUnheardPastBound(release.bond_id);
    const entry: RegistryEntry = { ...(known ?? { bond_id: release.bond_id, bond: null }), release: body };
    await this.o.store.commit([this.putOp(entry)]);
    this.remember(entry);
  }

  // ---------------------------------------------------------------- internals

  /**
   * A bond heard from the mesh, not yet in the registry: refused when its identity is in a slashing's cooldown at the bond's tick, or its
   * node has not applied a slashing past the due tick (a home that skips its own slashing bonds no one).
   */
  private refuseSlashedOperator(bond: BondRecord): void {
    const cooldown = this.cooldownOf(bond.zid);
    if (cooldown && bond.svcond < cooldown.until_svcond)
      throw new GossipError(
        'ignore',
        403,
        'SVC_BOND_COOLDOWN',
        `${bond.zid} was slashed (challenge ${cooldown.challenge_id}): it cannot bond again before tick ${cooldown.until_svcond}`,
      );
    const defaulted = this.defaultedOf(bond.node, this.o.nowSvcond());
    if (defaulted)
      throw new GossipError(
        'ignore',
        403,
        'SVC_BOND_COOLDOWN',
        `node ${bond.node} has not applied the slashing of ${defaulted.bond_id}: it bonds no one until it does`,
      );
  }

  /**
   * A bond is made at its identity's home (bond()), so a record naming an identity homed elsewhere, or unknown here,
   * is not one: a node holding the mesh secret could otherwise take another identity's place in the registry (its
   * release, its cooldown, its committee seat). Ignored, not rejected: an honest home's bond re-announced after a
   * failover moved its identity looks the same, and an identity not heard of yet comes with the next announcement.
   */
  /** [IGNORE] a record of a bond not heard here once the registry holds unheardMax of them (UNHEARD_BONDS_MAX). */
  private refuseUnheardPastBound(bondId: string): void {
    const max = this.o.unheardMax ?? UNHEARD_BONDS_MAX;
    if (this.unheard < max) return;
    throw new GossipError(
      'ignore',
      507,
      'BOND_REGISTRY_FULL',
      `this node holds its maximum of ${max} releases and slashings of bonds it has not heard: ${bondId} is not recorded`,
    );
  }

  private async refuseForeignIdentity(bond: BondRecord): Promise<void> {
    if (!this.o.homeOf) return;
    const home = await this.o.homeOf(bond.zid);
    if (home === bond.node) return;
    throw new GossipError(
      'ignore',
      403,
      'INVALID_ATTESTATION',
      home === null ? `${bond.zid} is not an identity known here` : `${bond.zid} is homed at ${home}, not at the bond's node ${bond.node}`,
    );
  }

  private async oldest(zid: string, needed: number): Promise<EnvelopeRecord[]> {
    for (let p = this.o.ledger.loadCounts(zid); p !== undefined; p = this.o.ledger.loadCounts(zid)) await p;
    const held = this.o.ledger.heldCount(zid);
    if (held < needed) throw notEnough(held, needed);
    const envelopes = (await this.o.ledger.oldestEnvelopes(zid, needed)).filter((e) => e.owner === zid && !e.immovable);
    if (envelopes.length < needed) throw notEnough(envelopes.length, needed);
    return envelopes;
  }

  private async chosen(zid: string, tokenIds: string[], needed: number): Promise<EnvelopeRecord[]> {
    const unique = new Set(tokenIds);
    if (unique.size !== tokenIds.length) throw new InputError('token_ids', 'a token id is listed twice');
    for (let p = this.o.ledger.loadCounts(zid); p !== undefined; p = this.o.ledger.loadCounts(zid)) await p;
    if (tokenIds.length !== needed) throw notEnough(tokenIds.length, needed, this.o.ledger.heldCount(zid));
    const records = await this.o.ledger.envelopesById(tokenIds);
    for (let i = 0; i < tokenIds.length; i++) {
      const e = records[i];
      if (!e || e.owner !== zid) throw new InputError('token_ids', `${tokenIds[i]} is not an envelope of this identity`);
      if (e.immovable) throw new InputError('token_ids', `${tokenIds[i]} is already bonded`);
    }
    return records as EnvelopeRecord[];
  }

  private putOp(entry: RegistryEntry): Op {
    return { type: 'put', sub: this.sub, key: entry.bond_id, value: entry as unknown as Json };
  }

  private remember(entry: RegistryEntry): void {
    const before = this.entries.get(entry.bond_id);
    this.unheard += (entry.bond === null ? 1 : 0) - (before !== undefined && before.bond === null ? 1 : 0);
    this.entries.set(entry.bond_id, entry);
    const b = entry.bond?.bond;
    if (!b) return;
    if (b.node === this.o.nodeId() && (this.latestOwn === null || this.latestOwn.bond_id === b.bond_id || this.latestOwn.bond!.bond.svcond <= b.svcond))
      this.latestOwn = entry;
    // Released or slashed (marked here, or applied at its home): no longer active.
    if (entry.release === null && !entry.slashed && !entry.slash_applied) {
      this.byZid.set(b.zid, b.bond_id);
      this.byNode.set(b.node, b.bond_id);
    } else {
      if (this.byZid.get(b.zid) === b.bond_id) this.byZid.delete(b.zid);
      if (this.byNode.get(b.node) === b.bond_id) this.byNode.delete(b.node);
    }
  }

  private async gossip(type: string, body: unknown): Promise<void> {
    if (!this.o.publish) return;
    // The bond is made and durable here whatever the mesh does: a publish failure is not the caller's failure.
    await this.o.publish(type, body).catch(() => undefined);
  }
}

/** The tick a known entry's bond was first heard here, to keep in an entry written anew. */
function heardOf(known: RegistryEntry | undefined): Pick<RegistryEntry, 'heard_svcond'> {
  return known?.heard_svcond === undefined ? {} : { heard_svcond: known.heard_svcond };
}

/** 400: too few envelopes for a bond, with how many are held and needed. */
function notEnough(have: number, needed: number, held = have): ServiceError {
  return new ServiceError(400, 'SVC_INSUFFICIENT_ENVELOPES', `a bond needs ${needed} envelopes; ${held} are held`, { held, needed });
}
