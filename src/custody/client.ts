// The requesting side of /svc/custody/1: a home sends a batch of entries with their records and reads the signatures;
// a custodian catching up (or a new home) fetches an identity's chain, page by page.
import type { Stream } from '@libp2p/interface';
import { readFrame, writeFrame } from '../mesh/frame.js';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import { excludedMember } from './custody-set.js';
import type { DebitCertificate } from './debit-certificate.js';
import type { CustodyEntry } from './entry.js';
import type { HomeChange } from './home-change.js';
import {
  chainAnswerSchema,
  changesAnswerSchema,
  CUSTODY_PROTOCOL,
  custodyAnswerSchema,
  MAX_ANSWER_BYTES,
  MAX_CHAIN_ANSWER_BYTES,
  type ChainAnswer,
  type ChainLink,
  type ChainRequest,
  type ChangesAnswer,
  type ChangesRequest,
  type CustodyAnswer,
  type EntryRecords,
  type PromiseAnswer,
  type PromiseRequest,
  type ProposalRequest,
  promiseAnswerSchema,
} from './protocol.js';

export interface CustodyClientDeps {
  openStream: (peer: string, protocol: string, signal: AbortSignal) => Promise<Stream>;
  selfId: () => string;
  secret: string;
  nowSvcond: () => number;
}

/**
 * `records`: one per entry, what its digest covers. `certificates`: one per entry (a credit's debit certificate, else
 * null), or undefined when no entry is a credit.
 */
export type SendBatch = (
  peer: string,
  entries: CustodyEntry[],
  records: EntryRecords[],
  signal: AbortSignal,
  certificates?: (DebitCertificate | null)[],
) => Promise<CustodyAnswer>;

/** The request a home sends for `entries` with their records (and their certificates, when a credit is among them): the batch and its handshake. */
export function custodyRequest(
  secret: string,
  sender: string,
  svcond: number,
  entries: CustodyEntry[],
  records: EntryRecords[],
  certificates?: (DebitCertificate | null)[],
): ProposalRequest {
  const unsigned = { v: 1 as const, svcond, entries, records, ...(certificates !== undefined ? { certificates } : {}) };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

/** The request for `zid`'s entries from seq `from`. */
export function chainRequest(secret: string, sender: string, svcond: number, zid: string, from: number): ChainRequest {
  const unsigned = { v: 1 as const, kind: 'fetch' as const, svcond, zid, from };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

/** One page of `zid`'s chain as `peer` holds it, from seq `from` (a refusal comes back as the answer's `refused`). */
export type FetchChain = (peer: string, zid: string, from: number, signal: AbortSignal) => Promise<ChainAnswer>;

/** One request, one answer on a fresh /svc/custody/1 stream. */
async function exchange(deps: CustodyClientDeps, peer: string, request: unknown, signal: AbortSignal, max: number): Promise<unknown> {
  const stream = await deps.openStream(peer, CUSTODY_PROTOCOL, signal);
  const onAbort = () => stream.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await writeFrame(stream, request);
    return await readFrame(stream.source, max);
  } finally {
    signal.removeEventListener('abort', onAbort);
    stream.abort(new Error('done'));
  }
}

/**
 * A fetch's answer as the asker takes it: well formed, its links of `zid` in seq order from `from`. A custodian that
 * signed an epoch entry on a chain it did not hold answers that chain's entries it holds, with a gap below
 * (custodian.ts onHeadChain): the taker finds the rest elsewhere by hash (failover.ts takeChain).
 */
export function chainAnswerOf(raw: unknown, zid: string, from: number): ChainAnswer {
  const parsed = chainAnswerSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`malformed chain answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  const links = parsed.data.links;
  if (links.some((l, i) => l.entry.zid !== zid || l.entry.seq < (i === 0 ? from : links[i - 1]!.entry.seq + 1)))
    throw new Error('the chain answer is not the entries asked for');
  return parsed.data;
}

export function chainFetcher(deps: CustodyClientDeps): FetchChain {
  return async (peer, zid, from, signal) =>
    chainAnswerOf(await exchange(deps, peer, chainRequest(deps.secret, deps.selfId(), deps.nowSvcond(), zid, from), signal, MAX_CHAIN_ANSWER_BYTES), zid, from);
}

/**
 * Every entry `peer` holds of `zid` from seq `from`, page after page (each from the seq after the last), at most
 * `maxEntries` (unchecked: checkChain next). Throws on a refusal or a failed stream.
 */
export async function fetchChain(fetch: FetchChain, peer: string, zid: string, from: number, signal: AbortSignal, maxEntries = 100_000): Promise<ChainLink[]> {
  const out: ChainLink[] = [];
  for (;;) {
    const page = await fetch(peer, zid, out.length === 0 ? from : out.at(-1)!.entry.seq + 1, signal);
    if (page.refused !== undefined) throw new Error(`${peer} refused the fetch: ${page.refused.code}: ${page.refused.reason}`);
    out.push(...page.links);
    if (!page.more || page.links.length === 0 || out.length >= maxEntries) return out;
  }
}

export function custodyClient(deps: CustodyClientDeps): SendBatch {
  return async (peer, entries, records, signal, certificates) => {
    const request = custodyRequest(deps.secret, deps.selfId(), deps.nowSvcond(), entries, records, certificates);
    const parsed = custodyAnswerSchema.safeParse(await exchange(deps, peer, request, signal, MAX_ANSWER_BYTES));
    if (!parsed.success) throw new Error(`malformed custody answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    if (parsed.data.refused === undefined && parsed.data.results.length !== entries.length) throw new Error('the custody answer does not answer every entry');
    return parsed.data;
  };
}

/**
 * The request a candidate sends for a promise of `epoch` of `zid`, with its handshake; `change`: the latest home change
 * of the identity the candidate knows (absent: none).
 */
export function promiseRequest(
  secret: string,
  sender: string,
  svcond: number,
  zid: string,
  epoch: number,
  excluded?: string[],
  change?: HomeChange | null,
): PromiseRequest {
  const unsigned = { v: 1 as const, kind: 'promise' as const, svcond, zid, epoch, ...excludedMember(excluded), ...(change == null ? {} : { change }) };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

/**
 * Ask `peer` to promise `epoch` of `zid` to this node, its set passing over `excluded` (absent: none), showing the
 * latest home change of the identity this node knows (`change`; absent or null: none).
 */
export type AskPromise = (
  peer: string,
  zid: string,
  epoch: number,
  signal: AbortSignal,
  excluded?: string[],
  change?: HomeChange | null,
) => Promise<PromiseAnswer>;

export function promiseClient(deps: CustodyClientDeps): AskPromise {
  return async (peer, zid, epoch, signal, excluded, change) => {
    const request = promiseRequest(deps.secret, deps.selfId(), deps.nowSvcond(), zid, epoch, excluded, change);
    const raw = await exchange(deps, peer, request, signal, MAX_ANSWER_BYTES);
    const parsed = promiseAnswerSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`malformed promise answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  };
}

/** The request for the home changes of `zid` a node keeps above epoch `after`. */
export function changesRequest(secret: string, sender: string, svcond: number, zid: string, after: number): ChangesRequest {
  const unsigned = { v: 1 as const, kind: 'changes' as const, svcond, zid, after };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

/** One page of the home changes of `zid` that `peer` keeps above epoch `after` (unchecked: home-history.ts checks them). */
export type FetchChanges = (peer: string, zid: string, after: number, signal: AbortSignal) => Promise<ChangesAnswer>;

export function changesFetcher(deps: CustodyClientDeps): FetchChanges {
  return async (peer, zid, after, signal) => {
    const raw = await exchange(deps, peer, changesRequest(deps.secret, deps.selfId(), deps.nowSvcond(), zid, after), signal, MAX_ANSWER_BYTES);
    const parsed = changesAnswerSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`malformed changes answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    if (parsed.data.refused !== undefined) throw new Error(`${peer} refused: ${parsed.data.refused.reason}`);
    if (parsed.data.changes.some((c, i, all) => c.zid !== zid || c.epoch <= (i === 0 ? after : all[i - 1]!.epoch)))
      throw new Error('the changes answer is not the changes asked for');
    return parsed.data;
  };
}
