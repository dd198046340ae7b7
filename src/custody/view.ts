// What a node answers about an identity's custody (GET /api/mesh/custody/:zid and …/entries), and how final it is:
//   local      the home answers, and the identity's custody set is the home alone (R = 1, or no other member)
//   certified  the home answers: every write up to `certified_seq` is held by a majority of the custody set
//   held       a custodian answers: it holds (and signed) the entries up to `certified_seq`; later ones may exist
//   none       this node is neither the home nor holds an entry of the identity
import type { CustodySet } from './custody-set.js';
import type { Custodian } from './custodian.js';
import { FIRST_EPOCH, type EntrySignature, type CustodyEntry } from './entry.js';
import type { Replicator } from './replicator.js';

export type Finality = 'local' | 'certified' | 'held' | 'none';

export interface CustodyStatus {
  zid: string;
  epoch: number;
  home: string;
  custodians: string[];
  certified_seq: number;
  finality: Finality;
  /** The wallet as of `certified_seq` (null when this node holds none). */
  balance: { free: number; paid: number } | null;
}

export interface CustodyEntries {
  zid: string;
  seq: number;
  finality: Finality;
  entries: { entry: CustodyEntry; hash: string; signatures: EntrySignature[] }[];
}

export interface CustodyViewDeps {
  nodeId: () => string;
  /** The identity's custody set of now as this node knows it (its epoch's home and passed-over members). */
  currentSet: (zid: string) => Promise<CustodySet | null>;
  homeOf: (zid: string) => Promise<string | null>;
  /**
   * Is this node the identity's home, checked since its start (home-check.ts)? A home not checked yet answers as a
   * holder of what it certified (`held`). Absent: the directory's word.
   */
  servesAsHome?: (zid: string) => Promise<boolean>;
  /** The epoch of the latest home change this node knows of the identity (FIRST_EPOCH: none). */
  knownEpoch: (zid: string) => Promise<number>;
  wallet: (zid: string) => Promise<{ free: number; paid: number }>;
  replicator: Replicator;
  custodian: Custodian;
}

export class CustodyView {
  constructor(private readonly deps: CustodyViewDeps) {}

  /** null: the identity is not known here. */
  async status(zid: string): Promise<CustodyStatus | null> {
    const checked = await this.checkedHome(zid);
    const home = await this.deps.homeOf(zid);
    if (home === null) return null;
    const custodians = (await this.deps.currentSet(zid))?.custodians ?? [home];
    if (home === this.deps.nodeId()) {
      const head = await this.deps.replicator.certifiedHead(zid);
      const w = await this.deps.wallet(zid);
      return {
        zid,
        epoch: head?.epoch ?? FIRST_EPOCH,
        home,
        custodians,
        certified_seq: head?.seq ?? 0,
        finality: custodians.length < 2 ? 'local' : checked ? 'certified' : 'held',
        balance: { free: w.free, paid: w.paid },
      };
    }
    const held = await this.deps.custodian.head(zid);
    return {
      zid,
      epoch: Math.max(held?.epoch ?? FIRST_EPOCH, await this.deps.knownEpoch(zid)),
      home,
      custodians,
      certified_seq: held?.seq ?? 0,
      finality: held === null ? 'none' : 'held',
      balance: held?.balance ?? null,
    };
  }

  /** Is this node the identity's home, checked (the check may move the identity first)? */
  private async checkedHome(zid: string): Promise<boolean> {
    return this.deps.servesAsHome === undefined ? (await this.deps.homeOf(zid)) === this.deps.nodeId() : this.deps.servesAsHome(zid);
  }

  /** Entries from `fromSeq` with their signatures; null when this node has none of the identity. */
  async entries(zid: string, fromSeq: number, limit: number): Promise<CustodyEntries | null> {
    const checked = await this.checkedHome(zid);
    const home = await this.deps.homeOf(zid);
    if (home === this.deps.nodeId()) {
      const head = await this.deps.replicator.certifiedHead(zid);
      const entries = await this.deps.replicator.entries(zid, fromSeq, limit);
      const finality = this.deps.replicator.setOf(zid).custodians.length < 2 ? 'local' : checked ? 'certified' : 'held';
      return { zid, seq: head?.seq ?? 0, finality, entries };
    }
    const head = await this.deps.custodian.head(zid);
    if (head === null) return null;
    const self = this.deps.nodeId();
    const held = await this.deps.custodian.entries(zid, fromSeq, limit);
    return {
      zid,
      seq: head.seq,
      finality: 'held',
      entries: held.map((h) => ({ entry: h.entry, hash: h.hash, signatures: [{ node: self, signature: h.signature }] })),
    };
  }
}
