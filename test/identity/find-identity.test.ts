// Identities and keys homed elsewhere that this node has not heard of are asked of the peers (identity/service.ts
// findIdentity, resolveKey): concurrent misses of one zid or digest share one question, and a name no peer knew is not
// asked again for a while (30 s) unless a peer is learnt meanwhile, one a peer did not answer only for 2 s. The peers' answers are composed here (the mesh's own checks are in test/mesh/key-lookup.test.ts).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest } from '../../src/identity/keys.js';
import { KEY_QUESTIONS_PER_MINUTE, PEER_QUESTIONS_MAX } from '../../src/identity/service.js';
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

  it('counts the questions about unknown keys per caller address: past the budget, 429 and nothing asked', async () => {
    const asked: string[] = [];
    const ask = async (name: string) => {
      asked.push(name);
      return null;
    };
    t.node.identity.onRemoteLookup(ask, ask);
    const made = (i: number, who: string) => `sk_${createHash('sha256').update(`${who} ${i}`).digest('hex').slice(0, 48)}`;
    try {
      for (let i = 0; i < KEY_QUESTIONS_PER_MINUTE; i++)
        await expect(t.node.identity.resolveKey(made(i, 'a'), '198.51.100.7')).rejects.toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
      expect(asked).toHaveLength(KEY_QUESTIONS_PER_MINUTE);
      const refused = t.node.identity.resolveKey(made(KEY_QUESTIONS_PER_MINUTE, 'a'), '198.51.100.7');
      await expect(refused).rejects.toMatchObject({ status: 429, code: 'SVC_RATE_LIMIT', extra: { limit: KEY_QUESTIONS_PER_MINUTE, scope: 'address' } });
      expect(asked).toHaveLength(KEY_QUESTIONS_PER_MINUTE);
      // A key asked already is the peers' word for a while: told again without a question, and without a charge.
      await expect(t.node.identity.resolveKey(made(0, 'a'), '198.51.100.7')).rejects.toMatchObject({ status: 401 });
      // Another address has its own budget; a key known here is never asked about.
      await expect(t.node.identity.resolveKey(made(0, 'b'), '203.0.113.9')).rejects.toMatchObject({ status: 401 });
      expect(asked).toHaveLength(KEY_QUESTIONS_PER_MINUTE + 1);
    } finally {
      t.node.identity.onRemoteLookup(ask, ask);
    }
  });

  it('counts questions about unknown identities against the same budget', async () => {
    const asked: string[] = [];
    const ask = async (name: string) => {
      asked.push(name);
      return null;
    };
    t.node.identity.onRemoteLookup(ask, ask);
    const zid = (i: number) => `zid_${createHash('sha256').update(`zid ${i}`).digest('hex').slice(0, 32)}`;
    try {
      for (let i = 0; i < KEY_QUESTIONS_PER_MINUTE; i++) expect(await t.node.identity.findIdentity(zid(i), '198.51.100.99')).toBeUndefined();
      await expect(t.node.identity.findIdentity(zid(KEY_QUESTIONS_PER_MINUTE), '198.51.100.99')).rejects.toMatchObject({
        status: 429,
        extra: { scope: 'address' },
      });
      expect(asked).toHaveLength(KEY_QUESTIONS_PER_MINUTE);
      // A question the node asks for itself (custody, consensus: no caller) is not counted.
      expect(await t.node.identity.findIdentity(zid(KEY_QUESTIONS_PER_MINUTE))).toBeUndefined();
      expect(asked).toHaveLength(KEY_QUESTIONS_PER_MINUTE + 1);
    } finally {
      t.node.identity.onRemoteLookup(ask, ask);
    }
  });

  it('sends at most PEER_QUESTIONS_MAX questions at once, node-wide: one more is 429 and nothing asked', async () => {
    const asked: string[] = [];
    let answerAll!: () => void;
    const answered = new Promise<void>((resolve) => (answerAll = resolve));
    const ask = async (name: string) => {
      asked.push(name);
      await answered;
      return null;
    };
    t.node.identity.onRemoteLookup(ask, ask);
    const made = (i: number) => `sk_${createHash('sha256').update(`in flight ${i}`).digest('hex').slice(0, 48)}`;
    try {
      const waiting = Array.from({ length: PEER_QUESTIONS_MAX }, (_, i) => t.node.identity.resolveKey(made(i), `10.9.${i}.1`).catch((e: unknown) => e));
      await new Promise((r) => setTimeout(r, 20));
      expect(asked).toHaveLength(PEER_QUESTIONS_MAX);
      await expect(t.node.identity.resolveKey(made(PEER_QUESTIONS_MAX), '10.9.200.1')).rejects.toMatchObject({
        status: 429,
        code: 'SVC_RATE_LIMIT',
        extra: { scope: 'node', retry_after_seconds: 1 },
      });
      expect(asked).toHaveLength(PEER_QUESTIONS_MAX);
      answerAll();
      for (const e of await Promise.all(waiting)) expect(e).toMatchObject({ status: 401, code: 'SVC_INVALID_KEY' });
      // Room again.
      await expect(t.node.identity.resolveKey(made(PEER_QUESTIONS_MAX), '10.9.200.1')).rejects.toMatchObject({ status: 401 });
      expect(asked).toHaveLength(PEER_QUESTIONS_MAX + 1);
    } finally {
      t.node.identity.onRemoteLookup(ask, ask);
    }
  });
});
