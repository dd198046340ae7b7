// Identities and keys homed elsewhere that this node has not heard of are asked of the peers (identity/service.ts
// findIdentity, resolveKey): concurrent misses of one zid or digest share one question, and a name no peer knew is not
// asked again for a while (30 s) unless a peer is learnt meanwhile, one a peer did not answer only for 2 s. The peers' answers are composed here (the mesh's own checks are in test/mesh/key-lookup.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest } from '../../src/identity/keys.js';
import { startTestNode, type TestNode } from '../helpers/node.js';

const HOME = '12D3KooWRemoteHomeRemoteHomeRemoteHomeRemoteHomeRe';
const LIAR = '12D3KooWLyingMemberLyingMemberLyingMemberLyingMembe';
const KEY = `sk_${'5a'.repeat(24)}`;
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

/** The assertion a home gives of one of zid's keys, with the identity. */
function assertion(zid: string, digest: string, home = HOME) {
  const key = {
    key_id: 'sk_remote',
    kind: 'sk',
    zid,
    slug: null,
    plan: 'standard',
    created_unix_ms: 1,
    expires_unix_ms: null,
    revoked_unix_ms: null,
    home,
  };
  return { digest, key, identity: { zid, home, default_machine: null } };
}

type Found = { assertion: unknown; sender: string };

/** Peers that answer after a moment with `answers(name)`, in order until one is accepted, counting the questions. */
function slowPeers(answers: (name: string) => Found | Found[] | null) {
  const asked: string[] = [];
  const ask = async (name: string, accept?: (found: Found) => Promise<boolean>) => {
    asked.push(name);
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const found of [answers(name) ?? []].flat()) if (accept === undefined || (await accept(found))) return found;
    return null;
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

  it("a claim the peers' views refuse does not stand in for the home's answer that follows it", async () => {
    const zid = `zid_${'f1'.repeat(16)}`;
    const digest = 'f2'.repeat(32);
    const peers = slowPeers((name) =>
      name === zid
        ? [
            { assertion: assertion(zid, digest, LIAR), sender: LIAR },
            { assertion: assertion(zid, digest), sender: HOME },
          ]
        : null,
    );
    const weighed: string[] = [];
    t.node.identity.onRemoteLookup(peers.ask, peers.ask);
    t.node.identity.onHomeClaim(async (claimed, home) => {
      weighed.push(`${claimed}@${home}`);
      return home === HOME;
    });
    try {
      expect(await t.node.identity.findIdentity(zid)).toMatchObject({ zid, home: HOME, kind: 'remote' });
      expect(weighed).toEqual([`${zid}@${LIAR}`, `${zid}@${HOME}`]);
      // Known now: the liar's claim, gossiped, is not weighed again (the identity's home as known here answers it).
      expect(await t.node.identity.applyAssertion(assertion(zid, digest, LIAR), LIAR)).toBe(false);
      expect(weighed).toHaveLength(2);
    } finally {
      t.node.identity.onHomeClaim(async () => true);
    }
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

  it('a key asked while a peer did not answer is asked again after 2 s, and found once the home answers', async () => {
    const zid = `zid_${'a7'.repeat(16)}`;
    const key = `sk_${'a8'.repeat(24)}`;
    const digest = keyDigest(key);
    let homeUp = false;
    const asked: string[] = [];
    const ask = async (name: string, accept?: (found: Found) => Promise<boolean>, unanswered?: () => void) => {
      asked.push(name);
      if (!homeUp) {
        unanswered?.();
        return null;
      }
      const found = { assertion: assertion(zid, digest), sender: HOME };
      return accept === undefined || (await accept(found)) ? found : null;
    };
    t.node.identity.onRemoteLookup(ask, ask);
    await expect(t.node.identity.resolveKey(key)).rejects.toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
    homeUp = true;
    // Within the 2 s: not asked again.
    await expect(t.node.identity.resolveKey(key)).rejects.toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
    expect(asked).toEqual([digest]);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect(await t.node.identity.resolveKey(key)).toMatchObject({ zid, home: HOME, key_id: 'sk_remote' });
    expect(asked).toEqual([digest, digest]);
  });

  it('a key no peer knew is asked again at once when a peer is learnt (a late joiner first hearing its home)', async () => {
    const zid = `zid_${'b7'.repeat(16)}`;
    const key = `sk_${'b8'.repeat(24)}`;
    const digest = keyDigest(key);
    let peersLearnt = 1;
    const asked: string[] = [];
    // Every peer asked answers; only the home, learnt later, knows the key.
    const ask = async (name: string, accept?: (found: Found) => Promise<boolean>) => {
      asked.push(name);
      if (peersLearnt < 2) return null;
      const found = { assertion: assertion(zid, digest), sender: HOME };
      return accept === undefined || (await accept(found)) ? found : null;
    };
    t.node.identity.onRemoteLookup(ask, ask, () => peersLearnt);
    try {
      await expect(t.node.identity.resolveKey(key)).rejects.toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
      // Every peer's word, and no peer learnt since: not asked again.
      await expect(t.node.identity.resolveKey(key)).rejects.toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
      expect(asked).toEqual([digest]);
      peersLearnt = 2;
      expect(await t.node.identity.resolveKey(key)).toMatchObject({ zid, home: HOME, key_id: 'sk_remote' });
      expect(asked).toEqual([digest, digest]);
    } finally {
      t.node.identity.onRemoteLookup(ask, ask);
    }
  });
});
