// The home's side of one /svc/custody/1 exchange: open a stream to a custodian, send a batch, read its answer.
import type { Stream } from '@libp2p/interface';
import { readFrame, writeFrame } from '../mesh/frame.js';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import type { DebitCertificate } from './debit-certificate.js';
import type { CustodyEntry } from './entry.js';
import {
  CUSTODY_PROTOCOL,
  custodyAnswerSchema,
  MAX_ANSWER_BYTES,
  promiseAnswerSchema,
  type CustodyAnswer,
  type CustodyRequest,
  type PromiseAnswer,
  type PromiseRequest,
} from './protocol.js';

export interface CustodyClientDeps {
  openStream: (peer: string, protocol: string, signal: AbortSignal) => Promise<Stream>;
  selfId: () => string;
  secret: string;
  nowSvcond: () => number;
}

/** `certificates`: one per entry (a credit's debit certificate, else null), or undefined when no entry is a credit. */
export type SendBatch = (peer: string, entries: CustodyEntry[], signal: AbortSignal, certificates?: (DebitCertificate | null)[]) => Promise<CustodyAnswer>;

/** The request a home sends for `entries` (and their certificates, when a credit is among them): the batch and its handshake. */
export function custodyRequest(
  secret: string,
  sender: string,
  svcond: number,
  entries: CustodyEntry[],
  certificates?: (DebitCertificate | null)[],
): CustodyRequest {
  const unsigned = { v: 1 as const, svcond, entries, ...(certificates !== undefined ? { certificates } : {}) };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

export function custodyClient(deps: CustodyClientDeps): SendBatch {
  return async (peer, entries, signal, certificates) => {
    const request = custodyRequest(deps.secret, deps.selfId(), deps.nowSvcond(), entries, certificates);
    const stream = await deps.openStream(peer, CUSTODY_PROTOCOL, signal);
    const onAbort = () => stream.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await writeFrame(stream, request);
      const parsed = custodyAnswerSchema.safeParse(await readFrame(stream.source, MAX_ANSWER_BYTES));
      if (!parsed.success) throw new Error(`malformed custody answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      if (parsed.data.refused === undefined && parsed.data.results.length !== entries.length) throw new Error('the custody answer does not answer every entry');
      return parsed.data;
    } finally {
      signal.removeEventListener('abort', onAbort);
      stream.abort(new Error('done'));
    }
  };
}

/** The request a candidate sends for a promise of `epoch` of `zid`, with its handshake. */
export function promiseRequest(secret: string, sender: string, svcond: number, zid: string, epoch: number): PromiseRequest {
  const unsigned = { v: 1 as const, kind: 'promise' as const, svcond, zid, epoch };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

export type AskPromise = (peer: string, zid: string, epoch: number, signal: AbortSignal) => Promise<PromiseAnswer>;

export function promiseClient(deps: CustodyClientDeps): AskPromise {
  return async (peer, zid, epoch, signal) => {
    const stream = await deps.openStream(peer, CUSTODY_PROTOCOL, signal);
    const onAbort = () => stream.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await writeFrame(stream, promiseRequest(deps.secret, deps.selfId(), deps.nowSvcond(), zid, epoch));
      const parsed = promiseAnswerSchema.safeParse(await readFrame(stream.source, MAX_ANSWER_BYTES));
      if (!parsed.success) throw new Error(`malformed promise answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      return parsed.data;
    } finally {
      signal.removeEventListener('abort', onAbort);
      stream.abort(new Error('done'));
    }
  };
}
