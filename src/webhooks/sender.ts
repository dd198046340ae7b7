// One HTTP POST of a delivery: node:http/https, no redirects followed, the response window of spec 6.3, at most
// RESPONSE_KEPT bytes of the answer kept. A name is resolved here and refused when it resolves to a loopback or
// private address (url-policy.ts), unless the policy allows loopback.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { isBlockedAddress, type UrlPolicy } from './url-policy.js';

export const RESPONSE_KEPT = 1024;

export interface SendResult {
  ok: boolean;
  status: number | null;
  body: string | null;
  error: string | null;
}

export type Sender = (url: string, headers: Record<string, string>, body: string) => Promise<SendResult>;

export function httpSender(policy: UrlPolicy, timeoutMs: number): Sender {
  const lookup = (hostname: string, options: { all?: boolean; family?: number }, cb: (...a: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return cb(err);
      const ok = policy.allowLoopback ? addresses : addresses.filter((a) => !isBlockedAddress(a.address));
      if (ok.length === 0) return cb(new Error(`${hostname} resolves to a private address`));
      if (options.all) cb(null, ok);
      else cb(null, ok[0]!.address, ok[0]!.family);
    });
  };
  return (raw, headers, body) =>
    new Promise<SendResult>((resolve) => {
      let settled = false;
      const done = (r: SendResult) => {
        if (!settled) {
          settled = true;
          resolve(r);
        }
      };
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        return done({ ok: false, status: null, body: null, error: 'bad url' });
      }
      const host = url.hostname.replace(/^\[|\]$/g, '');
      if (!policy.allowLoopback && isIP(host) !== 0 && isBlockedAddress(host))
        return done({ ok: false, status: null, body: null, error: 'private address refused' });
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(
        url,
        { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, lookup: lookup as never },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          res.on('data', (c: Buffer) => {
            if (kept < RESPONSE_KEPT) {
              chunks.push(c);
              kept += c.length;
            }
          });
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            done({ ok: status >= 200 && status < 300, status, body: Buffer.concat(chunks).subarray(0, RESPONSE_KEPT).toString('utf8'), error: null });
          });
          res.on('error', (e) => done({ ok: false, status: res.statusCode ?? null, body: null, error: e.message }));
        },
      );
      req.setTimeout(timeoutMs, () => {
        req.destroy(new Error(`no answer within ${timeoutMs} ms`));
      });
      req.on('error', (e) => done({ ok: false, status: null, body: null, error: e.message }));
      req.end(body);
    });
}
