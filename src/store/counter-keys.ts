// The names of the counters store/counters.ts keeps (the tally's, the quotas', chat's, demo keys' mints): one place
// for their formats, below every folder that counts. store/counters.ts groups `env:`, `envf:`, `chg:` and `rec:`
// names by identity; QuotaService prunes the day counters by their prefixes.

/** Envelopes of an identity. */
export function envelopeCounter(zid: string): string {
  return `env:${zid}`;
}

/** Envelopes of an identity in one folder. */
export function folderCounter(zid: string, folder: string): string {
  return `${folderCounterPrefix(zid)}${folder}`;
}

/** The prefix of all folder counters of an identity (the folder name follows it). */
export function folderCounterPrefix(zid: string): string {
  return `envf:${zid}:`;
}

/** Credits charged to an identity so far (its running total: the carry of the exact split, split.ts). */
export function chargedCounter(zid: string): string {
  return `chg:${zid}`;
}

/** Results of an identity published here (its by-owner record rows: GET /api/tally/record?owner= total). */
export function recordCounter(zid: string): string {
  return `rec:${zid}`;
}

/** The prefixes of the per-day quota counters: each is followed by the UTC day (YYYY-MM-DD) and the caller. */
export const DAY_COUNTER_PREFIXES = ['anon:', 'demo:', 'used:', 'claimed:', 'claimip:', 'chat:', 'claimipm:', 'claimipp:'] as const;

/**
 * The prefixes of the day counters of one identity (`<prefix><day>:<zid>`): its computations, its claim and its chat
 * messages. They are part of what its home answers for it, so they ride with its ledger writes (custody/ledger-ops.ts).
 */
export const IDENTITY_DAY_PREFIXES = ['used:', 'claimed:', 'chat:'] as const;

/** The zid a day counter of an identity is kept for (the part after its day), else null. */
export function identityOfDayCounter(name: string): string | null {
  if (!IDENTITY_DAY_PREFIXES.some((prefix) => name.startsWith(prefix))) return null;
  const end = name.lastIndexOf(':');
  return end > name.indexOf(':') ? name.slice(end + 1) : null;
}

/** Daily claims of an identity on a UTC day (0 or 1). */
export function claimDayCounter(day: string, zid: string): string {
  return `claimed:${day}:${zid}`;
}

/** Daily claims from one address in a UTC hour (YYYY-MM-DDTHH: pruned with the day counters, by day). */
export function claimAddressCounter(hour: string, ip: string): string {
  return `claimip:${hour}:${ip}`;
}

/** Daily claims other homes served to one address (its mesh digest, claim-addresses.ts) in a UTC hour: their sum. */
export function claimAddressElsewhereCounter(hour: string, addressDigest: string): string {
  return `claimipm:${hour}:${addressDigest}`;
}

/** The latest count one home gossiped for an address (its mesh digest) and UTC hour. */
export function claimAddressPeerCounter(hour: string, addressDigest: string, peerId: string): string {
  return `claimipp:${hour}:${addressDigest}:${peerId}`;
}

/** Computations of an anonymous caller (by IP) on a UTC day. */
export function anonymousDayCounter(day: string, ip: string): string {
  return `anon:${day}:${ip}`;
}

/** Computations of a demo key on a UTC day. */
export function demoDayCounter(day: string, keyId: string): string {
  return `demo:${day}:${keyId}`;
}

/**
 * Own demo keys minted from one IP on a UTC day. Under the 'demo:<day>:' day prefix (pruned with it), beside the demo
 * keys' own counters (demo:<day>:sk_…), which a key id never confuses with 'mint:'.
 */
export function demoMintCounter(day: string, ip: string): string {
  return `demo:${day}:mint:${ip}`;
}

/** Computations of an identity on a UTC day. */
export function identityDayCounter(day: string, zid: string): string {
  return `used:${day}:${zid}`;
}

/** Chat messages of an identity on a UTC day (POST /api/llm/chat: the first ones of a day are free). */
export function chatDayCounter(day: string, zid: string): string {
  return `chat:${day}:${zid}`;
}
