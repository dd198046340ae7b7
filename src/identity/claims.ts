// Claims of unique names (state-machine slugs, emails, identities) on this node. The node is the one writer of its
// store, so a name is unique when it is decided in one synchronous step: a claim is reserved in memory before any
// await, the store is asked whether the name is already written, the record goes out in the batch that creates it,
// and the claim is let go once that batch is on disk (the store answers from then on) or has failed (the name is
// free again). A check and a write with an await between them, unguarded, let every concurrent caller through.
import { ServiceError } from '../kernel/errors.js';

/** The kinds of unique names, and the field a caller's 409 names. */
export type ClaimSpace = 'slug' | 'email' | 'zid';

const FIELD: Record<ClaimSpace, string> = { slug: 'slug', email: 'email', zid: 'equation_sha256' };
const MESSAGE: Record<ClaimSpace, (name: string) => string> = {
  slug: (slug) => `state machine ${slug} exists`,
  email: () => 'an identity with this email already exists',
  zid: () => 'this identity is already registered',
};

/** 409 SVC_CONFLICT naming the field of the name that is taken. */
export function conflict(space: ClaimSpace, name: string): ServiceError {
  return new ServiceError(409, 'SVC_CONFLICT', MESSAGE[space](name), { field: FIELD[space] });
}

export interface Claim {
  /** Let the name go (after its batch is written or has failed); idempotent. */
  release(): void;
}

export class Claims {
  /** `space:name` of every name some caller is creating right now. */
  private readonly held = new Set<string>();

  /** Reserve a name, or null when another caller holds it. Synchronous: call it before the first await. */
  tryTake(space: ClaimSpace, name: string): Claim | null {
    const key = `${space}:${name}`;
    if (this.held.has(key)) return null;
    this.held.add(key);
    let released = false;
    return {
      release: () => {
        if (!released) this.held.delete(key);
        released = true;
      },
    };
  }

  /** Reserve a name, or throw 409 SVC_CONFLICT when another caller holds it. */
  take(space: ClaimSpace, name: string): Claim {
    const claim = this.tryTake(space, name);
    if (!claim) throw conflict(space, name);
    return claim;
  }

  /** Names held now (status, tests). */
  get size(): number {
    return this.held.size;
  }
}
