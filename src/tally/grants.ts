// Operator grants (architecture.md §7): paid credits, and the identity's tier, arrive only from the node's
// operator (there is no payment provider). A grant is one batch: the wallet's paid balance, the tier record and a
// `credit_grant` row in the identity's audit chain, computed synchronously from memory (ledger.ts's rule).
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../kernel/errors.js';
import { matchesToken } from '../config/operator-token.js';
import type { Op, Store } from '../store/db.js';
import type { ChainService, AuditRow } from '../chain/service.js';
import type { IdentityService } from '../identity/service.js';
import type { Ledger } from './ledger.js';
import type { Tier, TierBook, TierRecord } from './tiers.js';
import type { Wallet } from '../records/types.js';

export type { TierRecord };

export interface GrantResult {
  grant_id: string;
  zid: string;
  credits: number;
  tier: Tier;
  balance: Wallet & { total: number };
  audit: AuditRow;
}

export class Grants {
  constructor(
    private readonly deps: {
      store: Store;
      ledger: Ledger;
      chain: ChainService;
      identity: IdentityService;
      /** Identities' tiers (tiers.ts): the grant writes the record in its batch and the book applies it after. */
      tiers: TierBook;
      /** SHA-256 of the operator token (config/operator-token.ts); the token itself is not kept. */
      operatorTokenDigest: Buffer;
      nodeId: () => string;
    },
  ) {}

  /** Is `presented` this node's operator token? (Constant time.) */
  isOperator(presented: string): boolean {
    return matchesToken(presented, this.deps.operatorTokenDigest);
  }

  /**
   * Grant `credits` paid credits (and set the tier when given) to an identity homed here. 404 when this node does
   * not know the identity; 409 when it is homed on another node (the route names the home).
   */
  async grant(zid: string, credits: number, tier: Tier | undefined, svcond: number, unixMs: number): Promise<GrantResult> {
    const ident = await this.deps.identity.getIdentity(zid);
    if (!ident) throw new ServiceError(404, 'SVC_NOT_FOUND', `no identity ${zid} is known on this node`);
    // The identity record's home: the node it registered on, or the one that took it over (custody failover).
    if (ident.home !== this.deps.nodeId()) {
      throw new ServiceError(409, 'SVC_CONFLICT', `identity ${zid} is homed on node ${ident.home}: grant there, with that node's operator token`, {
        field: 'zid',
        home: ident.home,
      });
    }
    const slug = ident.default_machine ?? this.deps.identity.defaultSlug(zid);
    // Both in memory at once, checked right before the synchronous part (a bounded cache may let one go while the other loads).
    while (!this.deps.ledger.isLoaded(zid) || !this.deps.chain.isPrepared(slug)) {
      await this.deps.ledger.wallet(zid);
      await this.deps.chain.prepare(slug);
    }
    const previousTier = this.deps.tiers.of(zid);
    // From here to the commit: synchronous, so no other change of this wallet or chain comes in between.
    const grantId = `grant_${randomUUID().replaceAll('-', '')}`;
    const newTier = tier ?? previousTier;
    const credit = this.deps.ledger.creditOps(zid, 0, credits);
    const appended = this.deps.chain.appendOps(slug, svcond, 'credit_grant', { grant_id: grantId, zid, credits, tier: newTier });
    const ops: Op[] = [...credit.ops, appended.op];
    if (tier !== undefined) ops.push(this.deps.tiers.putOp(zid, { tier, grant_id: grantId, svcond, unix_ms: unixMs }));
    try {
      await this.deps.store.commit(ops);
    } catch (err) {
      appended.rollback();
      credit.rollback();
      throw err;
    }
    // Durable: the identity's next request computes at its new tier.
    if (tier !== undefined) this.deps.tiers.applied(zid, tier);
    const w = credit.wallet;
    return { grant_id: grantId, zid, credits, tier: newTier, balance: { free: w.free, paid: w.paid, total: w.free + w.paid }, audit: appended.row };
  }
}
