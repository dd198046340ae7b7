// A node that went longer than a revocation is asserted again (a day) without hearing the mesh — stopped, or cut off —
// may hold live records of keys revoked meanwhile: it forgets the live records of keys of identities homed elsewhere
// (identity/service.ts noteMeshHeard), at start and when a ticker's run finds the day passed, and asks their homes
// again when they are next presented. Its own keys, the revocations it holds, the keys of an identity it took over
// and the identities it knows are kept. The home's answers are composed here (test/mesh/key-lookup.test.ts checks the
// mesh's side of a lookup).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { keyDigest, keyId, mintKey } from '../../src/identity/keys.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { REVOCATION_REANNOUNCE_MS } from '../../src/identity/service.js';
import type { KeyRecord } from '../../src/records/types.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const HOME = '12D3KooWRemoteHomeRemoteHomeRemoteHomeRemoteHomeRe';
const MS = 1_000_000n;
const clock = new ManualClock(BigInt(Date.UTC(2026, 5, 1)) * MS);
const advance = (ms: number) => clock.set(clock.nowNs() + BigInt(ms) * MS);

const config = { mesh: { secret: 'away-from-mesh-secret-0123456789abc', p2pPort: 0, bootstrap: [] } };

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode(config, { clock });
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

/** The assertion HOME gives of `key`, a key of identity `zid` homed at HOME (revoked at `revoked`, else live). */
const assertion = (key: string, zid: string, revoked: number | null = null) => identityAssertBody(key, zid, HOME, 1, revoked);

const whoami = (key: string) => call(t.url, 'GET', '/api/auth/whoami', undefined, bearer(key));
const held = (key: string) => t.node.store.get<KeyRecord>(t.node.store.sub('keys'), keyDigest(key));

describe('a node away from the mesh for longer than a day', () => {
  it('forgets the live keys of identities homed elsewhere at start, and asks their homes again', async () => {
    const r = `zid_${'a1'.repeat(16)}`;
    const y = `zid_${'b1'.repeat(16)}`;
    const [live, revoked, takenOver] = [mintKey('sk'), mintKey('sk'), mintKey('sk')];
    const own = await zkIdentity(t.url, 'away-from-mesh');
    expect(await t.node.identity.applyAssertion(assertion(live, r), HOME)).toBe(true);
    expect(await t.node.identity.applyAssertion(assertion(revoked, r, 5), HOME)).toBe(true);
    expect(await t.node.identity.applyAssertion(assertion(takenOver, y), HOME)).toBe(true);
    // y was taken over by this node (a failover): it speaks for y's keys now.
    const yRecord = (await t.node.identity.getIdentity(y))!;
    await t.node.store.commit([t.node.identity.homeMoveOp(yRecord, t.node.nodeId)]);
    t.node.identity.identityRecordWritten(y);
    expect((await whoami(live)).status).toBe(200);

    expect(await t.node.identity.noteMeshHeard(true)).toBe(0);
    advance(REVOCATION_REANNOUNCE_MS - 60_000);
    expect(await t.node.identity.noteMeshHeard(false)).toBe(0);
    expect(await held(live)).toBeDefined();

    // Stopped past the day: at start, the live key of r is forgotten; the rest is kept.
    await t.stop();
    advance(120_000);
    t = await startTestNode(config, { clock }, t.dataDir);
    expect(await held(live)).toBeUndefined();
    expect(await t.node.store.get(t.node.store.sub('identity_keys'), `${r}!${keyId(live)}`)).toBeUndefined();
    expect(await held(revoked)).toMatchObject({ revoked_unix_ms: 5 });
    expect(await held(takenOver)).toMatchObject({ zid: y, revoked_unix_ms: null });
    expect(await t.node.identity.getIdentity(r)).toMatchObject({ zid: r, home: HOME });
    expect((await whoami(own.key)).status).toBe(200);

    // Presented again, the key is asked of its home, which revoked it meanwhile.
    const asked: string[] = [];
    const home = async (name: string, accept?: (found: { assertion: unknown; sender: string }) => Promise<boolean>) => {
      asked.push(name);
      const found = name === keyDigest(live) ? { assertion: assertion(live, r, 7), sender: HOME } : null;
      return found !== null && (accept === undefined || (await accept(found))) ? found : null;
    };
    t.node.identity.onRemoteLookup(home, home);
    expect(expectError(await whoami(live), 401, 'SVC_INVALID_KEY')).toMatchObject({ reason: 'revoked' });
    expect(asked).toEqual([keyDigest(live)]);
  }, 60_000);

  it('forgets them when a run finds the day passed without hearing the mesh (cut off), and counts from then', async () => {
    const r = `zid_${'c1'.repeat(16)}`;
    const key = mintKey('sk');
    expect(await t.node.identity.applyAssertion(assertion(key, r), HOME)).toBe(true);
    expect(await t.node.identity.noteMeshHeard(true)).toBe(0);
    advance(REVOCATION_REANNOUNCE_MS + 1);
    expect(await t.node.identity.noteMeshHeard(false)).toBe(1);
    expect(await held(key)).toBeUndefined();
    // Counted from the forgetting: a record learnt since is kept for a day.
    expect(await t.node.identity.applyAssertion(assertion(key, r), HOME)).toBe(true);
    advance(60_000);
    expect(await t.node.identity.noteMeshHeard(false)).toBe(0);
    expect(await held(key)).toBeDefined();
  }, 60_000);
});
