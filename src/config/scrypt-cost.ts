// The cost of scrypt for identities' secrets (identity/secret-hash.ts), as log2 of its N: the default, and the range a
// node may be configured with (identity.scryptCost) and takes in a login verifier another node sends.

/** Node's default (N = 16384, 16 MiB of memory and ~0.1 s of a core a hash); a record that names no cost was made at it. */
export const DEFAULT_SCRYPT_COST = 14;
/** The cheapest cost taken (the test run's). */
export const MIN_SCRYPT_COST = 10;
/** The dearest cost taken: 20 is 1 GiB of memory and seconds of a core a hash. */
export const MAX_SCRYPT_COST = 20;
