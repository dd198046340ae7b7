// The home's side of one /svc/custody/1 exchange: open a stream to a custodian, send a batch, read its answer.
import type { Stream } from '@libp2p/interface';
import { readFrame, writeFrame } from '../mesh/frame.js';
import { bodyDigest, handshakeFor } from '../mesh/wire.js';
import type { CustodyEntry } from './entry.js';
import { CUSTODY_PROTOCOL, custodyAnswerSchema, MAX_ANSWER_BYTES, type CustodyAnswer, type CustodyRequest } from './protocol.js';

export interface CustodyClientDeps {
  openStream: (peer: string, protocol: string, signal: AbortSignal) => Promise<Stream>;
  selfId: () => string;
  secret: string;
  nowSvcond: () => number;
}

export type SendBatch = (peer: string, entries: CustodyEntry[], signal: AbortSignal) => Promise<CustodyAnswer>;

/** The request a home sends for `entries`: the batch and its handshake. */
export function custodyRequest(secret: string, sender: string, svcond: number, entries: CustodyEntry[]): CustodyRequest {
  const unsigned = { v: 1 as const, svcond, entries };
  return { ...unsigned, handshake: handshakeFor(secret, sender, svcond, bodyDigest(unsigned)) };
}

export function custodyClient(deps: CustodyClientDeps): SendBatch {
  return async (peer, entries, signal) => {
    const request = custodyRequest(deps.secret, deps.selfId(), deps.nowSvcond(), entries);
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
