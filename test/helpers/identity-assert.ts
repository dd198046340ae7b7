// The body of an identity.assert event a (fake) home node gossips for a key it minted (revoked at `revokedUnixMs`, else
// live), with its identity (and what `identity` adds to it, a login verifier say): tests that stand in for a remote
// home use it to make the node under test know a key homed elsewhere.
import { keyDigest, keyId } from '../../src/identity/keys.js';

export function identityAssertBody(
  key: string,
  zid: string,
  home: string,
  createdUnixMs: number,
  revokedUnixMs: number | null = null,
  identity: Record<string, unknown> = {},
) {
  return {
    digest: keyDigest(key),
    key: {
      key_id: keyId(key),
      kind: 'sk',
      zid,
      slug: null,
      plan: 'standard',
      created_unix_ms: createdUnixMs,
      expires_unix_ms: null,
      revoked_unix_ms: revokedUnixMs,
      home,
    },
    identity: { zid, home, default_machine: null, ...identity },
  };
}
