// Creating a state machine: its record and its zsm_ admin key written in one batch, the slug held from before the
// first await to the batch's end (identity/claims.ts), and the creation announced once written. The machine's rules
// are here (which slugs a caller may choose, what the record holds, who owns it); the admin key is the identity
// service's (its key table, its assertions to the mesh), which issues it through the AdminKeys port.
import { ServiceError } from '../kernel/errors.js';
import type { Op, Store } from '../store/db.js';
import type { Role } from './roles.js';
import type { ChainService, MachineRecord } from './service.js';

/** Slugs of identities' default machines: never chosen by callers, so no registration finds its slug taken. */
export const DEFAULT_SLUG_PREFIX = 'm-';

/** A new machine's settings besides is_public (spec 2.7: booleans, default false). */
export type MachineFlags = Partial<Pick<MachineRecord, 'inject_agent_rail' | 'inject_pulse_orb'>>;

/** A machine's new zsm_ admin key, as the identity service issues it. */
export interface AdminKey {
  /** The key's text, shown once to the creator. */
  key: string;
  /** Its SHA-256, kept on the machine record. */
  digest: string;
  /** Ops storing the key's record, written in the machine's batch. */
  ops: Op[];
  /** Tell the mesh about the key, once the batch is written. */
  announce(): void;
}

export interface MachineCreationDeps {
  store: Store;
  chain: ChainService;
  nodeId: () => string;
  nowMs: () => number;
  /** Issue the zsm_ admin key of a new machine of `zid`. */
  adminKey(zid: string, slug: string): AdminKey;
  /** Slugs being created right now: one claim table with the emails and zids being registered (identity/claims.ts). */
  slugClaims: { take(slug: string): { release(): void }; conflict(slug: string): ServiceError };
}

/** A machine ready to be written: the ops of its batch, its admin key (returned once), and what to run once written. */
export interface NewMachine {
  ops: Op[];
  adminKey: string;
  machine: MachineRecord;
  announce: () => void;
}

export class MachineCreation {
  constructor(private readonly deps: MachineCreationDeps) {}

  /** Ops creating a machine with its zsm_ admin key (returned once); `announce` once they are written. */
  newMachine(zid: string, slug: string, svcond: number, isPublic = false, roles: Record<string, Role> = {}, flags: MachineFlags = {}): NewMachine {
    const { chain, nodeId, nowMs } = this.deps;
    const key = this.deps.adminKey(zid, slug);
    const machine: MachineRecord = {
      slug,
      owner: zid,
      genesis_svcond: svcond,
      is_public: isPublic,
      key_digest: key.digest,
      roles: { ...roles, [zid]: 'owner' },
      inject_agent_rail: flags.inject_agent_rail ?? false,
      inject_pulse_orb: flags.inject_pulse_orb ?? false,
      home: nodeId(),
      created_unix_ms: nowMs(),
    };
    return {
      ops: [...chain.machineOps(machine), ...key.ops],
      adminKey: key.key,
      machine,
      announce: () => {
        chain.created(slug);
        chain.machineWritten(slug);
        key.announce();
      },
    };
  }

  /**
   * Create a further state machine for an identity (returns the admin key once). Of concurrent creations of one
   * slug, one goes on (the claim is taken before the first await); m-… slugs are identities' default machines.
   * `charge`, when given, is called synchronously just before the batch is written: its ops (the creation's charge)
   * go into the same batch, and its rollback runs if the batch fails; if it throws (402), nothing is written.
   */
  async create(
    zid: string,
    slug: string,
    svcond: number,
    isPublic: boolean,
    charge?: () => { ops: Op[]; rollback: () => void },
    /** Roles of other identities on the new machine (a genesis document's); the creator is always its owner. */
    roles?: Record<string, Role>,
    /** The machine's settings besides is_public (a genesis document's); absent: false. */
    flags?: MachineFlags,
  ): Promise<{ machine: MachineRecord; adminKey: string }> {
    if (slug.startsWith(DEFAULT_SLUG_PREFIX)) {
      const reason = `slugs starting with "${DEFAULT_SLUG_PREFIX}" name identities' default machines and cannot be chosen`;
      throw new ServiceError(400, 'SVC_INVALID_INPUT', `invalid input slug: ${reason}`, { field: 'slug', reason, allowed: null });
    }
    const claim = this.deps.slugClaims.take(slug);
    try {
      if (await this.deps.chain.getMachine(slug)) throw this.deps.slugClaims.conflict(slug);
      const paid = charge?.();
      const { ops, adminKey, machine, announce } = this.newMachine(zid, slug, svcond, isPublic, roles, flags);
      try {
        await this.deps.store.commit(paid ? [...paid.ops, ...ops] : ops);
      } catch (err) {
        paid?.rollback();
        throw err;
      }
      announce();
      return { machine, adminKey };
    } finally {
      claim.release();
    }
  }
}
