// Trace ids (part 7: in every error body, the X-Trace-Id header and the log line): a random per-source prefix and a
// counter — unique, cheap, and not a secret.
import { randomBytes } from 'node:crypto';

export function traceIdSource(): () => string {
  const prefix = `tr_${randomBytes(4).toString('hex')}`;
  let counter = 0;
  return () => `${prefix}${(counter++).toString(16).padStart(8, '0')}`;
}
