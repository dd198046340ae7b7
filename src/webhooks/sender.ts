// One HTTP POST of a delivery (util/outbound-post.ts): no redirects followed, the response window of spec 6.3, at
// most RESPONSE_KEPT bytes of the answer kept, a name resolving to a loopback or private address refused unless the
// policy allows loopback.
import { postOnce } from '../util/outbound-post.js';
import type { UrlPolicy } from '../util/url-policy.js';

export const RESPONSE_KEPT = 1024;

export interface SendResult {
  ok: boolean;
  status: number | null;
  body: string | null;
  error: string | null;
}

export type Sender = (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;

export function httpSender(policy: UrlPolicy, timeoutMs: number): Sender {
  return async (url, headers, body) => {
    try {
      const answer = await postOnce(url, headers, body, { policy, timeoutMs, keepBytes: RESPONSE_KEPT });
      return { ok: answer.status >= 200 && answer.status < 300, status: answer.status, body: answer.body, error: null };
    } catch (err) {
      return { ok: false, status: null, body: null, error: (err as Error).message };
    }
  };
}
