// Genesis (spec 4.2): POST /api/genesis/execute creates a state machine from a declared genesis document — its slug,
// visibility, roles and first events — in one atomic batch: the charge (50, part 8's state-machine creation), the
// machine and its admin key, a `genesis` row committing the document's digest and one row per first event, and the
// genesis record. The answer is sealed (svcProof, HMAC-SHA256 with the receipt key). Idempotent on the document's
// digest (SHA-256 of its RFC 8785 JSON): the same document again answers the first execution, charging nothing.
// An initial contract in the document is deployed in the same batch (a `contract_deploy` row after the genesis row,
// before the first events), with the chain's own contract code, within the owner's contract cap (an owner at the cap
// is refused 409 as a deploy is, before anything is charged or written); the machine's settings come from the document.
import { canonicalDigest } from '../kernel/canonical.js';
import { ServiceError } from '../kernel/errors.js';
import { signBody } from '../kernel/receipt.js';
import { stampAt, type Clock } from '../kernel/clock.js';
import type { Op, Store, Sublevel } from '../store/db.js';
import type { AuditRow, ChainService, Role } from '../chain/service.js';
import type { IdentityService } from '../identity/service.js';
import type { Ledger } from '../tally/ledger.js';
import type { Contract } from '../chain/contract-language.js';
import { COSTS } from '../tally/costs.js';
import { KeyedLock } from '../util/keyed-lock.js';
import type { TallyCharge } from '../records/types.js';

type Deployment = ReturnType<ChainService['contracts']['deployOps']>;

export interface GenesisDocument {
  slug: string;
  is_public: boolean;
  roles: Record<string, Exclude<Role, 'owner'>>;
  events: { type: string; payload: unknown }[];
  metadata: Record<string, unknown>;
  /** The machine's initial contract (validated), deployed at seq 2. */
  contract?: Contract;
  /** Settings (spec 2.7; default false). Present in the document, so in its digest, only when true. */
  inject_agent_rail?: true;
  inject_pulse_orb?: true;
}

export interface GenesisRecord {
  document_digest: string;
  owner: string;
  slug: string;
  svcond: number;
  rows: { seq: number; hash: string; transitionType: string }[];
  /** The initial contract's id (null: the document had none). */
  contract_id: string | null;
  settings: { is_public: boolean; inject_agent_rail: boolean; inject_pulse_orb: boolean };
  tally_charge: TallyCharge;
}

export interface GenesisDeps {
  store: Store;
  clock: Clock;
  chain: ChainService;
  identity: IdentityService;
  ledger: Ledger;
  receiptKey: Buffer;
}

export class GenesisService {
  private readonly records: Sublevel;
  /** One execution of a document at a time: a second one sent while the first is in flight answers its replay. */
  private readonly executing = new KeyedLock();

  constructor(private readonly deps: GenesisDeps) {
    this.records = deps.store.sub('genesis');
  }

  private answer(rec: GenesisRecord, replayed: boolean, adminKey: string | null): Record<string, unknown> {
    const body: Record<string, unknown> = { kind: 'genesis', ...rec, replayed };
    const sealed = { ...body, svcProof: signBody(this.deps.receiptKey, body) };
    return adminKey ? { ...sealed, admin_key: adminKey, message: 'the admin key is shown once' } : sealed;
  }

  /** Execute a document (or answer its earlier execution by the same owner). */
  async execute(zid: string, doc: GenesisDocument): Promise<{ created: boolean; body: Record<string, unknown> }> {
    const digest = canonicalDigest(doc);
    return this.executing.run(digest, () => this.executeOnce(zid, doc, digest));
  }

  private async executeOnce(zid: string, doc: GenesisDocument, digest: string): Promise<{ created: boolean; body: Record<string, unknown> }> {
    const earlier = await this.deps.store.get<GenesisRecord>(this.records, digest);
    if (earlier) return this.replay(zid, earlier);
    await this.deps.ledger.wallet(zid);
    const svcond = stampAt(this.deps.clock.nowNs()).svcond;
    let rec: GenesisRecord | null = null;
    let deployment: Deployment | null = null;
    let created: Awaited<ReturnType<IdentityService['createMachine']>>;
    try {
      const create = () =>
        this.deps.identity.createMachine(
          zid,
          doc.slug,
          svcond,
          doc.is_public,
          () => {
            // Synchronous up to the commit: the charge (402 here writes nothing), then the machine's first rows.
            const paid = this.deps.ledger.chargeOps(zid, 'genesis', COSTS.genesis);
            // The new chain's head, so its first rows can be appended in this batch (undone if the batch fails), with
            // its tally from the start: the creation charge this batch records (below), no envelopes yet.
            const uncreate = this.deps.chain.created(doc.slug, { charges: 1, credits: paid.charge.charged, envelopes: 0 });
            const appended: { row: AuditRow; op: Op; rollback: () => void }[] = [];
            const recordOps: Op[] = [];
            try {
              appended.push(this.deps.chain.appendOps(doc.slug, svcond, 'genesis', { document_digest: digest }));
              if (doc.contract) {
                // The chain's own deploy, its row next (seq 2) and its record in this batch.
                const d = this.deps.chain.contracts.deployOps(doc.slug, svcond, zid, doc.contract);
                deployment = d;
                appended.push({ row: d.row, op: d.ops[0]!, rollback: d.rollback });
                recordOps.push(...d.ops.slice(1));
              }
              for (const e of doc.events) appended.push(this.deps.chain.appendOps(doc.slug, svcond, 'genesis_event', { type: e.type, payload: e.payload }));
            } catch (err) {
              for (const a of appended.reverse()) a.rollback();
              uncreate();
              paid.rollback();
              throw err;
            }
            rec = {
              document_digest: digest,
              owner: zid,
              slug: doc.slug,
              svcond,
              rows: appended.map((a) => ({ seq: a.row.seq, hash: a.row.hash, transitionType: a.row.transitionType })),
              contract_id: deployment?.contractId ?? null,
              settings: { is_public: doc.is_public, inject_agent_rail: doc.inject_agent_rail === true, inject_pulse_orb: doc.inject_pulse_orb === true },
              tally_charge: paid.charge,
            };
            const ops: Op[] = [
              ...paid.ops,
              // The machine's own tally records its creation charge (seq 0), as POST /api/chain/state-machines does.
              this.deps.chain.chargeOp(doc.slug, 0, zid, paid.charge, paid.split),
              ...appended.map((a) => a.op),
              ...recordOps,
              { type: 'put', sub: this.records, key: digest, value: rec },
            ];
            return {
              ops,
              rollback: () => {
                for (const a of [...appended].reverse()) a.rollback();
                uncreate();
                paid.rollback();
              },
            };
          },
          doc.roles,
          { inject_agent_rail: doc.inject_agent_rail === true, inject_pulse_orb: doc.inject_pulse_orb === true },
        );
      // A document with a contract deploys one: its batch is written within the owner's cap, as a deploy's is.
      created = doc.contract ? await this.deps.chain.contracts.withinCap(zid, create) : await create();
    } catch (err) {
      // A concurrent execution of the same document took the slug first: answer it.
      const first = err instanceof ServiceError && err.code === 'SVC_CONFLICT' ? await this.deps.store.get<GenesisRecord>(this.records, digest) : undefined;
      if (first) return this.replay(zid, first);
      throw err;
    }
    if (rec === null) throw new Error('genesis committed without its record');
    // The contract's live state starts now (else its first use rebuilds it from the record and the row).
    (deployment as Deployment | null)?.deployed();
    return { created: true, body: this.answer(rec, false, created.adminKey) };
  }

  private replay(zid: string, rec: GenesisRecord): { created: boolean; body: Record<string, unknown> } {
    if (rec.owner !== zid)
      throw new ServiceError(409, 'SVC_CONFLICT', `this genesis document was executed by another identity (state machine ${rec.slug})`, { slug: rec.slug });
    return { created: false, body: this.answer(rec, true, null) };
  }
}
