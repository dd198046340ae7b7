// The keys minted elsewhere that gossip may add to a node's store (identity/service.ts applyAssertion,
// limits.remoteKeysMax): a member can sign assertions of keys of identities it invents, homed on itself, so past the
// bound an assertion of a key not held here is ignored at the entrance (507 MESH_KEYS_FULL: not stored, not
// relayed, the sender not penalised). A key held here is still updated (a revocation), the answer to this node's own
// question (a key presented here) is still stored, the count survives a restart and falls when the node forgets
// the keys of other homes. The home is a key pair composed here, its events sent to the node's HTTP entrance.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, stampAt } from '../../src/kernel/clock.js';
import { keyDigest, mintKey } from '../../src/identity/keys.js';
import { REVOCATION_REANNOUNCE_MS } from '../../src/identity/service.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { IDENTITY_ASSERT } from '../../src/mesh/identity-assert.js';
import { bodyDigest, handshakeFor, signEvent } from '../../src/mesh/wire.js';
import type { KeyRecord } from '../../src/records/types.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { call, startTestNode, type TestNode } from '../helpers/node.js';

const SECRET = 'remote-keys-bound-secret-0123456789';
const MS = 1_000_000n;
const clock = new ManualClock(BigInt(Date.UTC(2026, 5, 1)) * MS);
const advance = (ms: number) => clock.set(clock.nowNs() + BigInt(ms) * MS);
const config = { mesh: { secret: SECRET, p2pPort: 0, bootstrap: [] }, limits: { remoteKeysMax: 2 } };

let t: TestNode;
let homeDir: string;
let home: Awaited<ReturnType<typeof loadOrCreateNodeKey>>;
beforeAll(async () => {
  homeDir = await mkdtemp(join(tmpdir(), 'svc-home-'));
  home = await loadOrCreateNodeKey(homeDir);
  t = await startTestNode(config, { clock });
}, 60_000);
afterAll(async () => {
  await t?.destroy();
  await rm(homeDir, { recursive: true, force: true });
});

const zid = (n: number) => `zid_${n.toString(16).padStart(2, '0').repeat(16)}`;
/** The home's assertion of `key` of identity `id`, sent to the node's HTTP entrance as gossip would carry it. */
async function gossip(key: string, id: string, revoked: number | null = null) {
  const svcond = stampAt(clock.nowNs()).svcond;
  const event = await signEvent(home.privateKey, home.nodeId, IDENTITY_ASSERT, svcond, identityAssertBody(key, id, home.nodeId, 1, revoked));
  return t.node.mesh.acceptHttpEvent(event, handshakeFor(SECRET, home.nodeId, svcond, bodyDigest(event.body)));
}
const held = (key: string) => t.node.store.get<KeyRecord>(t.node.store.sub('keys'), keyDigest(key));

describe('keys minted elsewhere that gossip may add', () => {
  it('are refused past the bound, while held keys, looked-up keys and a restart keep their counts', async () => {
    const [first, second, third, fourth] = [mintKey('sk'), mintKey('sk'), mintKey('sk'), mintKey('sk')];
    expect(await gossip(first, zid(1))).toMatchObject({ accepted: true });
    expect(await gossip(second, zid(2))).toMatchObject({ accepted: true });
    expect(t.node.identity.remoteKeyCount()).toEqual({ held: 2, max: 2 });

    // The bound reached: a new key is ignored, and neither it nor its invented identity is written.
    await expect(gossip(third, zid(3))).rejects.toMatchObject({ status: 507, code: 'MESH_KEYS_FULL', action: 'ignore' });
    expect(await held(third)).toBeUndefined();
    expect(await t.node.identity.getIdentity(zid(3))).toBeUndefined();
    expect((await t.node.mesh.recentEvents(50)).filter((e) => e.event.type === IDENTITY_ASSERT)).toHaveLength(2);
    expect((await t.node.mesh.status()).rejected.http).toMatchObject({ MESH_KEYS_FULL: 1 });
    // /api/health tells the operator, with the figures.
    await t.node.health.monitor.check();
    const warnings = (await call(t.url, 'GET', '/api/health')).body.warnings as { code: string; message: string }[];
    expect(warnings.find((w) => w.code === 'MESH_KEYS_FULL')?.message).toContain('holds 2 keys minted elsewhere');

    // A key held here is still updated: its revocation is applied.
    expect(await gossip(first, zid(1), 5)).toMatchObject({ accepted: true });
    expect((await held(first))?.revoked_unix_ms).toBe(5);
    expect(t.node.identity.remoteKeyCount().held).toBe(2);

    // The answer to this node's own question (a key presented here, asked of its home) is stored past the bound.
    expect(await t.node.identity.applyAssertion(identityAssertBody(third, zid(3), home.nodeId, 1), home.nodeId)).toBe(true);
    expect((await held(third))?.zid).toBe(zid(3));
    expect(t.node.identity.remoteKeyCount().held).toBe(3);

    // Counted again from the store at start.
    t = await t.restart();
    expect(t.node.identity.remoteKeyCount()).toEqual({ held: 3, max: 2 });
    await expect(gossip(fourth, zid(4))).rejects.toMatchObject({ status: 507, code: 'MESH_KEYS_FULL' });

    // Away from the mesh past a day, the node forgets the live keys of other homes (the revoked one stays): room again.
    expect(await t.node.identity.noteMeshHeard(true)).toBe(0);
    advance(REVOCATION_REANNOUNCE_MS + 120_000);
    expect(await t.node.identity.noteMeshHeard(true)).toBe(2);
    expect(t.node.identity.remoteKeyCount().held).toBe(1);
    expect(await gossip(fourth, zid(4))).toMatchObject({ accepted: true });
    expect((await held(fourth))?.zid).toBe(zid(4));
    expect(t.node.identity.remoteKeyCount().held).toBe(2);
  });
});
