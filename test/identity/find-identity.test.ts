// Identities and keys homed elsewhere that this node has not heard of are asked of the peers (identity/service.ts
// findIdentity, resolveKey): concurrent misses of one zid or digest share one question, and a name no peer knew is not
// asked again for a while. The peers' answers are composed here (the mesh's own checks are in test/mesh/key-lookup.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest } from '../../src/identity/keys.js';
import { startTestNode, type TestNode } from '../helpers/node.js';

const HOME = '12D3KooWRemoteHomeRemoteHomeRemoteHomeRemoteHomeRe';
const KEY = `sk_${'5a'.repeat(24)}`;
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

/** The assertion a home gives of one of zid's keys, with the identity. */
function assertion(zid: string, digest: string) {
  const key = {
    key_id: 'sk_remote',
    kind: 'sk',
    zid,
    slug: null,
    plan: 'standard',
    created_unix_ms: 1,
    expires_unix_ms: null,
    revoked_unix_ms: null,
    home: HOME,
  };
  return { digest, key, identity: { zid, home: HOME, default_machine: null } };
}

/** Peers that answer after a moment with `answer(name)`, counting the questions. */
function slowPeers(answer: (name: string) => { assertion: unknown; sender: string } | null) {
  const asked: string[] = [];
  const ask = async (name: string) => {
    asked.push(name);
    await new Promise((resolve) => setTimeout(resolve, 50));
    return answer(name);
  };
  return { asked, ask };
}

describe('an identity or key homed elsewhere', () => {
  it('is asked of the peers once for concurrent misses, and found by each', async () => {
    const zid = `zid_${'c1'.repeat(16)}`;
    const peers = slowPeers((name) => (name === zid ? { assertion: assertion(zid, 'c2'.repeat(32)), sender: HOME } : null));
    t.node.identity.onRemoteLookup(peers.ask, peers.ask);
    const found = await Promise.all(Array.from({ length: 10 }, () => t.node.identity.findIdentity(zid)));
    expect(peers.asked).toEqual([zid]);
    for (const f of found) expect(f).toMatchObject({ zid, home: HOME, kind: 'remote' });
    // Known now: not asked again.
    expect(await t.node.identity.findIdentity(zid)).toMatchObject({ zid, home: HOME });
    expect(peers.asked).toEqual([zid]);
  });

  it('a key presented at once by many callers is asked once, and each is served', async () => {
    const zid = `zid_${'d1'.repeat(16)}`;
    const digest = keyDigest(KEY);
    const peers = slowPeers((name) => (name === digest ? { assertion: assertion(zid, digest), sender: HOME } : null));
    t.node.identity.onRemoteLookup(peers.ask, peers.ask);
    const records = await Promise.all(Array.from({ length: 10 }, () => t.node.identity.resolveKey(KEY)));
    expect(peers.asked).toEqual([digest]);
    for (const r of records) expect(r).toMatchObject({ zid, home: HOME, key_id: 'sk_remote' });
  });

  it('a zid no peer knows is asked once, for concurrent misses and for the next ones a while after', async () => {
    const zid = `zid_${'e1'.repeat(16)}`;
    const peers = slowPeers(() => null);
    t.node.identity.onRemoteLookup(peers.ask, peers.ask);
    const found = await Promise.all(Array.from({ length: 10 }, () => t.node.identity.findIdentity(zid)));
    expect(found.every((f) => f === undefined)).toBe(true);
    expect(await t.node.identity.findIdentity(zid)).toBeUndefined();
    expect(peers.asked).toEqual([zid]);
  });
});
