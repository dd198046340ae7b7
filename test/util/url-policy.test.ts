import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/kernel/errors.js';
import { LOOKUPS_RUNNING, LOOKUPS_WAITING, checkOutboundUrl, guardedLookup, isBlockedAddress, lookupLoad } from '../../src/util/url-policy.js';

const strict = { allowLoopback: false, allowHosts: [] };

describe('outbound URL policy (no open proxy)', () => {
  it('refuses non-http schemes, credentials, loopback, private and local names', () => {
    for (const u of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'gopher://example.com',
      'http://user:pw@example.com/',
      'http://127.0.0.1/',
      'http://127.1.2.3:8080/',
      'http://10.1.2.3/',
      'http://172.20.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://localhost:8080/',
      'http://svc.localhost/',
      'http://localhost./',
      'http://LOCALHOST.:8080/',
      'http://localhost.localdomain/',
      'http://ip6-localhost/',
      'http://ip6-loopback:9/',
      'http://printer.localdomain/',
      'not a url',
    ])
      expect(() => checkOutboundUrl(u, strict), u).toThrow(/invalid input url/);
    expect(checkOutboundUrl('https://hooks.example.com/x', strict).hostname).toBe('hooks.example.com');
    expect(checkOutboundUrl('http://8.8.8.8/x', strict).hostname).toBe('8.8.8.8');
    // A public name written fully qualified is still that name.
    expect(checkOutboundUrl('https://hooks.example.com./x', strict).hostname).toBe('hooks.example.com.');
  });

  it('loopback only when allowed; the allow-list decides hosts', () => {
    expect(checkOutboundUrl('http://127.0.0.1:9/x', { allowLoopback: true, allowHosts: [] }).port).toBe('9');
    const listed = { allowLoopback: false, allowHosts: ['hooks.example.com', '*.corp.example'] };
    expect(() => checkOutboundUrl('https://hooks.example.com/', listed)).not.toThrow();
    expect(() => checkOutboundUrl('https://a.corp.example/', listed)).not.toThrow();
    expect(() => checkOutboundUrl('https://corp.example/', listed)).toThrow();
    expect(() => checkOutboundUrl('https://evil.example.com/', listed)).toThrow();
    expect(isBlockedAddress('93.184.216.34')).toBe(false);
    expect(isBlockedAddress('2606:2800:220:1::1')).toBe(false);
    expect(isBlockedAddress('100.64.0.1')).toBe(true);
  });

  it('refuses the IPv6 forms that reach an inside IPv4 or a non-public range, with the error of any private target', () => {
    const refusal = (u: string): ServiceError => {
      try {
        checkOutboundUrl(u, strict);
      } catch (e) {
        return e as ServiceError;
      }
      throw new Error(`${u} was accepted`);
    };
    const loopback = refusal('http://127.0.0.1/');
    for (const u of [
      'http://[::ffff:127.0.0.1]/', // IPv4-mapped, dotted (the URL parser writes it in hex)
      'http://[::ffff:7f00:1]/', // IPv4-mapped, hex
      'http://[::ffff:a9fe:a9fe]/', // IPv4-mapped 169.254.169.254
      'http://[::ffff:0:7f00:1]/', // IPv4-translated
      'http://[::127.0.0.1]/', // IPv4-compatible
      'http://[::7f00:1]/',
      'http://[::8.8.8.8]/', // IPv4-compatible is refused whole
      'http://[64:ff9b::127.0.0.1]/', // NAT64 well-known prefix
      'http://[64:ff9b::a00:1]/',
      'http://[64:ff9b::169.254.169.254]/',
      'http://[64:ff9b:1::a00:1]/', // NAT64 local-use, refused whole
      'http://[2002:7f00:1::1]/', // 6to4 of 127.0.0.1
      'http://[2002:c0a8:101::]/', // 6to4 of 192.168.1.1
      'http://[2002:a9fe:a9fe:1::1]/', // 6to4 of 169.254.169.254
      'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', // Teredo
      'http://[fec0::1]/', // site-local
      'http://[FEC0:1::1]:8080/',
      'http://[100::1]/', // discard-only
      'http://[100::ffff:ffff:ffff:ffff]/',
    ]) {
      const e = refusal(u);
      expect(e, u).toBeInstanceOf(ServiceError);
      expect({ status: e.status, code: e.code, message: e.message, extra: e.extra }, u).toEqual({
        status: loopback.status,
        code: loopback.code,
        message: loopback.message,
        extra: loopback.extra,
      });
    }
    expect(loopback).toMatchObject({ status: 400, code: 'SVC_INVALID_INPUT' });
    // Public addresses, and the embedding forms of a public IPv4, are accepted.
    for (const u of [
      'http://[2606:4700::1111]/',
      'https://[2606:4700:4700::1111]:8443/x',
      'http://[::ffff:8.8.8.8]/',
      'http://[64:ff9b::8.8.8.8]/',
      'http://[2002:808:808::1]/',
      'http://[100:0:0:1::1]/',
    ])
      expect(() => checkOutboundUrl(u, strict), u).not.toThrow();
  });

  it('an address as a lookup gives it: a zone is not part of it; what is not an address is refused', () => {
    expect(isBlockedAddress('fe80::1%eth0')).toBe(true);
    expect(isBlockedAddress('64:ff9b::7f00:1')).toBe(true);
    expect(isBlockedAddress('2002:a00:1::1')).toBe(true);
    expect(isBlockedAddress('2606:4700::1111')).toBe(false);
    expect(isBlockedAddress('example.com')).toBe(true);
  });

  it('the lookup of each send drops an embedded inside IPv4 as it drops the IPv4 itself', async () => {
    const lookup = guardedLookup(strict);
    const resolve = (host: string): Promise<unknown> =>
      new Promise((ok, fail) => lookup(host, {}, (err: unknown, address: unknown) => (err ? fail(err as Error) : ok(address))));
    for (const host of ['127.0.0.1', '::127.0.0.1', '::ffff:7f00:1', '64:ff9b::a00:1', '2002:a00:1::1', 'fec0::1', '100::1'])
      await expect(resolve(host), host).rejects.toThrow(/resolves to a private address/);
    await expect(resolve('2606:4700::1111')).resolves.toBe('2606:4700::1111');
  });

  it('looks names up one at a time, the rest waiting in order, and fails a lookup at once beyond LOOKUPS_WAITING', async () => {
    // A resolver whose answers come only when the test says: a DNS server that keeps each lookup waiting.
    const pending: { host: string; answer: () => void }[] = [];
    const slow = (host: string, _o: unknown, cb: (err: Error | null, a: { address: string; family: number }[]) => void) =>
      pending.push({ host, answer: () => cb(null, [{ address: '93.184.216.34', family: 4 }]) });
    const lookup = guardedLookup(strict, slow);
    const answers: string[] = [];
    const errors: string[] = [];
    const n = LOOKUPS_RUNNING + LOOKUPS_WAITING + 2;
    const asked = Array.from(
      { length: n },
      (_, i) =>
        new Promise<void>((done) =>
          lookup(`host-${i}.example`, {}, (err: unknown, address: unknown) => {
            if (err) errors.push(`${i}: ${(err as Error).message}`);
            else answers.push(`${i}: ${String(address)}`);
            done();
          }),
        ),
    );
    await new Promise((r) => setImmediate(r));
    expect(lookupLoad()).toEqual({ running: LOOKUPS_RUNNING, waiting: LOOKUPS_WAITING });
    expect(pending.map((p) => p.host)).toEqual(Array.from({ length: LOOKUPS_RUNNING }, (_, i) => `host-${i}.example`));
    expect(errors).toEqual([
      `${n - 2}: too many name lookups waiting (64): host-${n - 2}.example not looked up`,
      `${n - 1}: too many name lookups waiting (64): host-${n - 1}.example not looked up`,
    ]);
    // Each answer lets the next waiting lookup start, in the order they came.
    for (let k = 0; k < n - 2; k++) {
      await new Promise((r) => setImmediate(r));
      expect(pending).toHaveLength(k + 1);
      expect(pending[k]!.host).toBe(`host-${k}.example`);
      pending[k]!.answer();
    }
    await Promise.all(asked);
    expect(answers).toEqual(Array.from({ length: n - 2 }, (_, i) => `${i}: 93.184.216.34`));
    expect(lookupLoad()).toEqual({ running: 0, waiting: 0 });
  });
});
