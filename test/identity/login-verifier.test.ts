// A v3 identity's login verifier travels with its home's assertions (identity/service.ts assertedIdentity,
// applyAssertion, loginV3): a node that learns the identity keeps it, one that knew the identity without it takes it
// from the next assertion of its home, and once a failover makes this node the home it checks logins with it. A
// malformed verifier, or one sent by a node that is not the identity's home, is not taken; a password's hash never
// travels. The assertions are composed here, signed by their sender as the mesh would verify it.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyDigest } from '../../src/identity/keys.js';
import { hashSecret } from '../../src/identity/secret-hash.js';
import { zidOfEquation } from '../../src/identity/service.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const HOME = '12D3KooWVerifierHomeVerifierHomeVerifierHomeVerifie';
const LIAR = '12D3KooWLyingMemberLyingMemberLyingMemberLyingMembe';
let t: TestNode;
beforeAll(async () => {
  t = await startTestNode();
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

const digestOf = (seed: string) => createHash('sha256').update(`equation:${seed}`).digest('hex');

/** A verifier as a home makes one at registration (cost 10, the test run's). */
async function verifierFor(digest: string, cost = 10) {
  const salt = randomBytes(16).toString('hex');
  return { hash: (await hashSecret(digest, salt, cost)).toString('hex'), salt, scrypt_cost: cost };
}

/** The assertion a home gives of zid's key `sk_<keySeed…>`, with the identity (and `verifier` when given). */
function assertion(zid: string, keySeed: string, home: string, verifier?: unknown) {
  return identityAssertBody(`sk_${keySeed.repeat(24).slice(0, 48)}`, zid, home, 1, null, verifier === undefined ? {} : { verifier });
}

/** Make this node the identity's home, as a failover's home change does (custody/home-moves.ts). */
async function takeOver(zid: string): Promise<void> {
  const ident = (await t.node.identity.getIdentity(zid))!;
  await t.node.store.commit([t.node.identity.homeMoveOp(ident, t.node.nodeId)]);
  t.node.identity.identityRecordWritten(zid);
}

const login = (digest: string) => call(t.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: digest });

describe('a v3 identity’s login verifier', () => {
  it('is sent with the identity by its home, and never a password’s hash', async () => {
    const zk = await zkIdentity(t.url, 'verifier-sent');
    const registered = (await t.node.identity.getIdentity(zk.zid))!;
    const asserted = await t.node.identity.identityAssertionFor(zk.zid);
    expect(asserted?.identity).toEqual({
      zid: zk.zid,
      home: t.node.nodeId,
      default_machine: zk.slug,
      verifier: { hash: registered.hash, salt: registered.salt, scrypt_cost: 10 },
    });
    const v1 = await call(t.url, 'POST', '/api/auth/register', { email: 'verifier-v1@example.org', password: 'a long enough password 1' });
    expect(v1.status, v1.text).toBe(201);
    const password = await t.node.identity.getIdentity(v1.body.zid);
    expect(password?.password_hash).toMatch(/^[0-9a-f]{64}$/);
    const minted = await t.node.identity.mintKeyFor(v1.body.zid, 'sk', null);
    const ofPassword = await t.node.identity.assertionFor(keyDigest(minted.key));
    expect(ofPassword?.identity).toEqual({ zid: v1.body.zid, home: t.node.nodeId, default_machine: password!.default_machine });
    expect(JSON.stringify(ofPassword)).not.toContain(password!.password_hash!);
  });

  it('is kept with a remote identity, and checks its logins once a failover makes this node the home', async () => {
    const digest = digestOf('verifier-carried');
    const zid = zidOfEquation(digest);
    const verifier = await verifierFor(digest);
    expect(await t.node.identity.applyAssertion(assertion(zid, 'a1', HOME, verifier), HOME)).toBe(true);
    expect(await t.node.identity.getIdentity(zid)).toMatchObject({ kind: 'remote', home: HOME, ...verifier });
    // Homed elsewhere: not this node's login to answer (the route relays it; the home does not answer here).
    expect((await login(digest)).status).not.toBe(200);

    await takeOver(zid);
    const session = await login(digest);
    expect(session.status, session.text).toBe(200);
    expect(session.body.zid).toBe(zid);
    const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
    const verified = await call(t.url, 'POST', '/api/auth/verify', {}, { cookie });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body).toMatchObject({ valid: true, zid });
    // The other half of the digest is what a login proves: the zid's half alone is refused.
    const sameZid = digest.slice(0, 32) + 'f'.repeat(32);
    expect(zidOfEquation(sameZid)).toBe(zid);
    expectError(await login(sameZid), 401, 'SVC_INVALID_CREDENTIALS');
    // The new home asserts the identity with the verifier it holds: a later failover's home gets it too.
    const onward = await t.node.identity.identityAssertionFor(zid);
    expect(onward?.identity).toMatchObject({ home: t.node.nodeId, verifier });
  });

  it('is taken by an identity known without one from its home’s next assertion, and from no other node', async () => {
    const digest = digestOf('verifier-late');
    const zid = zidOfEquation(digest);
    expect(await t.node.identity.applyAssertion(assertion(zid, 'b1', HOME), HOME)).toBe(true);
    expect((await t.node.identity.getIdentity(zid))?.hash).toBeUndefined();
    // A node that is not the identity's home sends one: not taken.
    const forged = await verifierFor(digestOf('someone else'));
    expect(await t.node.identity.applyAssertion(assertion(zid, 'b1', LIAR, forged), LIAR)).toBe(false);
    expect((await t.node.identity.getIdentity(zid))?.hash).toBeUndefined();
    // The home asserts the same key again, now with the verifier: taken, though the key record is unchanged.
    const verifier = await verifierFor(digest);
    expect(await t.node.identity.applyAssertion(assertion(zid, 'b1', HOME, verifier), HOME)).toBe(true);
    expect(await t.node.identity.getIdentity(zid)).toMatchObject({ kind: 'remote', home: HOME, ...verifier });
    // Heard again: nothing written, and another verifier does not replace the one held.
    expect(await t.node.identity.applyAssertion(assertion(zid, 'b1', HOME, verifier), HOME)).toBe(false);
    expect(await t.node.identity.applyAssertion(assertion(zid, 'b1', HOME, forged), HOME)).toBe(false);
    expect((await t.node.identity.getIdentity(zid))?.hash).toBe(verifier.hash);
  });

  it('malformed, makes the whole assertion refused; without one, a login at a home by failover is 409, not a refused proof', async () => {
    const digest = digestOf('verifier-malformed');
    const zid = zidOfEquation(digest);
    const good = await verifierFor(digest);
    for (const bad of [
      { ...good, scrypt_cost: 30 },
      { ...good, scrypt_cost: 9 },
      { ...good, salt: 'zz'.repeat(16) },
      { ...good, hash: good.hash.slice(2) },
      { hash: good.hash, salt: good.salt },
      'verifier',
    ]) {
      expect(await t.node.identity.applyAssertion(assertion(zid, 'c1', HOME, bad), HOME)).toBe(false);
      expect(await t.node.identity.getIdentity(zid)).toBeUndefined();
    }
    expect(await t.node.identity.applyAssertion(assertion(zid, 'c1', HOME), HOME)).toBe(true);
    await takeOver(zid);
    const refused = expectError(await login(digest), 409, 'SVC_CONFLICT');
    expect(refused).toMatchObject({ zid, home: t.node.nodeId, reason: 'secret not held by the home' });
    const asserted = await t.node.identity.identityAssertionFor(zid);
    expect(asserted?.identity).toEqual({ zid, home: t.node.nodeId, default_machine: null });
    // Its keys work: the identity goes on with them.
    const me = await call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(`sk_${'c1'.repeat(24)}`));
    expect(me.status, me.text).toBe(200);
    expect(me.body.zid).toBe(zid);
  });
});
