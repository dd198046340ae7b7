import { describe, expect, it } from 'vitest';
import { FORWARDED_FOR_SKEW_MS, forwardedForValue, verifyForwardedFor } from '../../src/http/forwarded-address.js';

const SECRET = 'mesh-secret-0123456789abcdef';
const f = { forwarder: '12D3KooWForwarder', ip: '203.0.113.7', unixMs: 1_795_000_000_000, method: 'POST', path: '/api/tally/claim', body: '{"nonce":"1"}' };

describe('the caller address stated by a forwarding node', () => {
  it('is believed only with the mesh secret, for this forwarder, request and body, within a minute', () => {
    const value = forwardedForValue(SECRET, f);
    const { ip: _ip, unixMs: _t, ...request } = f;
    expect(verifyForwardedFor(SECRET, value, request, f.unixMs + FORWARDED_FOR_SKEW_MS)).toBe('203.0.113.7');
    expect(verifyForwardedFor(SECRET, value, request, f.unixMs + FORWARDED_FOR_SKEW_MS + 1)).toBeNull();
    expect(verifyForwardedFor('another-mesh-secret-0123', value, request, f.unixMs)).toBeNull();
    expect(verifyForwardedFor(SECRET, value, { ...request, forwarder: '12D3KooWOther' }, f.unixMs)).toBeNull();
    expect(verifyForwardedFor(SECRET, value, { ...request, path: '/api/tally/claim?x=1' }, f.unixMs)).toBeNull();
    expect(verifyForwardedFor(SECRET, value, { ...request, body: '{"nonce":"2"}' }, f.unixMs)).toBeNull();
    expect(verifyForwardedFor(SECRET, value.replace('203.0.113.7', '203.0.113.8'), request, f.unixMs)).toBeNull();
    expect(verifyForwardedFor(SECRET, 'garbage', request, f.unixMs)).toBeNull();
  });
});
