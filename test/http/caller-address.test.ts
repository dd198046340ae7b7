// Address-based limits count an IPv6 caller by its /64 (a host picks any address in it), an IPv4 caller by address.
import { describe, expect, it } from 'vitest';
import { addressKey } from '../../src/http/caller-address.js';

describe('addressKey', () => {
  it('IPv4 and IPv4-mapped addresses are themselves', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::FFFF:127.0.0.1')).toBe('127.0.0.1');
  });

  it('every address of one IPv6 /64 is one caller, in any spelling', () => {
    const one = [
      '2001:db8:1:2::1',
      '2001:0db8:0001:0002:ffff:ffff:ffff:fffe',
      '2001:DB8:1:2:aaaa:bbbb:cccc:dddd',
      '2001:db8:1:2:0:0:0:0',
      '2001:db8:1:2::192.0.2.1',
      'fe80::1%eth0'.replace('fe80::1', '2001:db8:1:2::9'),
    ].map(addressKey);
    expect(new Set(one)).toEqual(new Set(['2001:db8:1:2::/64']));
    expect(addressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('2001:db8::')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::')).toBe('0:0:0:0::/64');
  });

  it('anything else is kept as it is', () => {
    expect(addressKey('')).toBe('');
    expect(addressKey('not-an-ip')).toBe('not-an-ip');
  });
});
