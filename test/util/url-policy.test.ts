import { describe, expect, it } from 'vitest';
import { checkOutboundUrl, isBlockedAddress } from '../../src/util/url-policy.js';

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
});
