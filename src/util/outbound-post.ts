// One POST this node makes for a caller (a webhook delivery, a call to an identity's LLM provider): node:http(s),
// no redirects followed, the name resolved through the URL policy's guarded lookup (a name that points inside is
// refused at connect time, not only when the URL was registered), at most `keepBytes` of the answer kept.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isBlockedAddress, type UrlPolicy } from './url-policy.js';

export interface PostAnswer {
  status: number;
  /** The answer's first `keepBytes` bytes as UTF-8. */
  body: string;
}

export interface PostOptions {
  policy: UrlPolicy;
  /** Idle time allowed on the socket (default: none; `signal` may bound the whole call instead). */
  timeoutMs?: number | undefined;
  keepBytes: number;
  signal?: AbortSignal | undefined;
}

/** POST `body` to `raw`; rejects with an Error saying why when no answer came (refused, unreachable, too slow). */
export function postOnce(raw: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<PostAnswer> {
  return new Promise<PostAnswer>((resolve, reject) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return reject(new Error('bad url'));
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!options.policy.allowLoopback && isIP(host) !== 0 && isBlockedAddress(host)) return reject(new Error('private address refused'));
    if (options.signal?.aborted) return reject(new Error('aborted'));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(options.policy) as never,
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (c: Buffer) => {
          if (kept < options.keepBytes) {
            chunks.push(c);
            kept += c.length;
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).subarray(0, options.keepBytes).toString('utf8') }));
        res.on('error', reject);
      },
    );
    const timeoutMs = options.timeoutMs;
    if (timeoutMs !== undefined) req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
