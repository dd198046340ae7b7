// Bonds across three real nodes (HTTP + libp2p on 127.0.0.1): a bond made at its home reaches every node's
// registry as an attested consensus.bond event; a bond asked for at another node is forwarded to the home; forged
// attestations (composed here, signed by another key) are rejected at the gossip entrance; the release reaches
// every registry too; the operator's mode, bond id and free slots travel in tick events (old ticks still accepted).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import type { PrivateKey } from '@libp2p/interface';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitFor } from '../mesh/helpers.js';
import { BOND_EVENT, RELEASE_EVENT, bondAttestationText, releaseAttestationText, type BondRecord } from '../../src/consensus/bonds.js';
import { buildEnvelope, signText } from '../../src/mesh/wire.js';
import { stampAt } from '../../src/kernel/clock.js';
import { identityAssertBody } from '../helpers/identity-assert.js';
import { mintKey } from '../../src/identity/keys.js';

const MESH_SECRET = 'bonds-cluster-secret-0123456789abcdef';
const RECEIPT_SECRET = 'ab'.repeat(32);
const BOND = 3;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
/** The identity bonding below, named as every node's operator (consensus/bond-slot.ts): its bond is asked for at B and made at its home A. */
const OPERATOR_SEED = 'cluster-bond';
const contribution = {
  bondEnvelopes: BOND,
  committeeSize: 3,
  settleTicks: 4,
  deadlineTicks: 12,
  challengeStake: 20,
  bondTermDays: 30,
  offload: 'never',
  operator: `zid_${createHash('sha256').update(`equation:${OPERATOR_SEED}`).digest('hex').slice(0, 32)}`,
};
const config = (bootstrap: string[]) => ({
  solverThreads: 0,
  sealWorker: false,
  receiptSecret: RECEIPT_SECRET,
  contribution,
  mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
});
const opts = { initialCredits: 10_000, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

let a: TestNode;
let b: TestNode;
let c: TestNode;

async function stranger(): Promise<{ priv: PrivateKey; id: string }> {
  const priv = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
  return { priv, id: peerIdFromPrivateKey(priv as never).toString() };
}

const nowTick = () => stampAt(BigInt(Date.now()) * 1_000_000n).svcond;

/** Post an event signed by `from` to a node's gossip entrance, with a good handshake. */
async function gossip(to: TestNode, from: { priv: PrivateKey; id: string }, type: string, body: unknown) {
  const env = await buildEnvelope(from.priv, from.id, MESH_SECRET, type, nowTick(), body);
  return call(to.url, 'POST', '/api/mesh/gossip', env.event, { 'x-node-handshake': env.handshake! });
}

beforeAll(async () => {
  a = await startTestNode(config([]), opts);
  b = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), opts);
  c = await startTestNode(config([a.node.mesh.multiaddrs()[0]!, b.node.mesh.multiaddrs()[0]!]), opts);
  await waitFor(() => [a, b, c].every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 2), 60_000, 'tick events from every peer');
}, 120_000);

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.destroy()));
});

describe('a bond across the mesh', () => {
  let id: { zid: string; key: string };
  let bondId = '';

  it('a bond asked for at B is made at the home A, and its attestation reaches every registry', async () => {
    id = await zkIdentity(a.url, OPERATOR_SEED);
    for (let i = 0; i < BOND; i++) expect((await call(a.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
    const r = await call(b.url, 'POST', '/api/contribute/bond', {}, bearer(id.key));
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    bondId = r.body.bond_id;
    expect(r.body.node).toBe(a.node.nodeId);
    // The home wrote it; B and C learn it from the gossip and verified it.
    for (const n of [b, c]) {
      const got = await waitFor(() => n.node.bonds.get(bondId), 20_000, 'the bond at a peer');
      expect(got.bond?.bond).toEqual(r.body.record);
      expect(got.bond?.attestation).toBe(r.body.attestation);
      expect(got.release).toBeNull();
      expect(n.node.bonds.ofNode(a.node.nodeId)?.bond.bond_id).toBe(bondId);
      expect(n.node.bonds.ofZid(id.zid)?.bond.bond_id).toBe(bondId);
    }
    // The envelopes were marked at the home only: a peer holds no envelope of this identity.
    await b.node.ledger.loadCounts(id.zid); // an identity's counters are read on demand
    expect(b.node.ledger.heldCount(id.zid)).toBe(0);
    const status = await call(c.url, 'GET', '/api/contribute/status', undefined, bearer(id.key));
    expect(status.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    expect(status.body.bond.bond_id).toBe(bondId);
  }, 60_000);

  it("the operator's mode, bond id and free slots travel in A's tick events and show in the peers' mesh status", async () => {
    const m = await call(b.url, 'POST', '/api/contribute/mode', { mode: 'contributing' }, bearer(id.key));
    expect(m.status, m.text).toBe(200);
    expect(m.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    for (const n of [b, c]) {
      const peer = await waitFor(
        async () => {
          const s = await call(n.url, 'GET', '/api/mesh/status');
          const p = s.body.peers.find((x: { peerId: string }) => x.peerId === a.node.nodeId);
          return p?.mode === 'contributing' ? p : null;
        },
        20_000,
        "A contributing in a peer's status",
      );
      // solverThreads 0: the inline executor has one slot, free between requests.
      expect(peer).toMatchObject({ mode: 'contributing', bondId, freeSlots: 1 });
      // B holds no bond: it advertises idle, no bond.
      const s = await call(n.url, 'GET', '/api/mesh/status');
      if (n === c) expect(s.body.peers.find((x: { peerId: string }) => x.peerId === b.node.nodeId)).toMatchObject({ mode: 'idle', bondId: null, freeSlots: 1 });
    }
  }, 60_000);

  it("a node that joins after the bond learns it from the bond node's re-announcement", async () => {
    const d = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), opts);
    try {
      // D starts from an empty data dir, so whatever it holds it heard; the re-announcement can beat this line.
      const got = await waitFor(() => d.node.bonds.get(bondId), 30_000, 'the bond at the late joiner');
      expect(got.bond?.bond.node).toBe(a.node.nodeId);
      expect(d.node.bonds.ofZid(id.zid)?.bond.bond_id).toBe(bondId);
    } finally {
      await d.destroy();
    }
  }, 60_000);

  it('a tick event from an older node, without the contribution fields, is still accepted', async () => {
    const s = await stranger();
    const old = await gossip(c, s, 'tick', {
      svcond: nowTick(),
      sealedCount: 0,
      chainHeadsDigest: 'ab'.repeat(32),
      kernelVersion: '1.287.6',
      url: 'http://127.0.0.1:9',
    });
    expect(old.status, old.text).toBe(200);
    const peer = c.node.mesh.peers().find((p) => p.peerId === s.id);
    expect(peer).toMatchObject({ mode: null, bondId: null, freeSlots: null, url: 'http://127.0.0.1:9' });
    // The new fields are checked when present.
    expectError(await gossip(c, s, 'tick', { svcond: nowTick(), freeSlots: -1 }), 400, 'INVALID_EVENT');
  });

  it('forged attestations are rejected at the gossip entrance and never reach the registry', async () => {
    const s = await stranger();
    const other = await stranger();
    const bond: BondRecord = {
      bond_id: 'bond_' + 'f'.repeat(24),
      zid: 'zid_' + '1'.repeat(32),
      node: s.id,
      token_ids: ['env_x', 'env_y', 'env_z'],
      svcond: nowTick(),
    };
    // Signed by another key than the bond's node.
    const byOther = await gossip(c, s, BOND_EVENT, { bond, attestation: signText(other.priv, bondAttestationText(bond)) });
    expect(expectError(byOther, 400, 'INVALID_ATTESTATION').message).toContain("not signed by the bond's node");
    // Naming node A as the bond's node, gossiped (and attested) by someone else.
    const asA = { ...bond, bond_id: 'bond_' + 'e'.repeat(24), node: a.node.nodeId };
    const claimA = await gossip(c, s, BOND_EVENT, { bond: asA, attestation: signText(s.priv, bondAttestationText(asA)) });
    expect(expectError(claimA, 400, 'INVALID_ATTESTATION').message).toContain("gossiped by the bond's node");
    // A release attestation does not pass for a bond attestation.
    const asRelease = signText(s.priv, releaseAttestationText({ bond_id: bond.bond_id, zid: bond.zid, node: s.id, svcond: bond.svcond }));
    expectError(await gossip(c, s, BOND_EVENT, { bond, attestation: asRelease }), 400, 'INVALID_ATTESTATION');
    // A body that is not a bond: the row's schema.
    expectError(await gossip(c, s, BOND_EVENT, { bond: { ...bond, token_ids: 'all' }, attestation: 'x' }), 400, 'INVALID_EVENT');
    expect(c.node.bonds.get(bond.bond_id)).toBeNull();
    expect(c.node.bonds.get(asA.bond_id)).toBeNull();
    expect(c.node.bonds.ofNode(a.node.nodeId)?.bond.bond_id).toBe(bondId);
    // A bond of an identity homed elsewhere, attested by the node that gossips it: A's bonded identity, and one no
    // node knows. Taking the first would hand the stranger its registry place (its release, cooldown and seat).
    const theirs = { ...bond, bond_id: 'bond_' + 'd'.repeat(24), zid: id.zid };
    const stolen = await gossip(c, s, BOND_EVENT, { bond: theirs, attestation: signText(s.priv, bondAttestationText(theirs)) });
    expect(expectError(stolen, 403, 'INVALID_ATTESTATION').message).toContain(`${id.zid} is homed at ${a.node.nodeId}, not at the bond's node ${s.id}`);
    const unknown = await gossip(c, s, BOND_EVENT, { bond, attestation: signText(s.priv, bondAttestationText(bond)) });
    expect(expectError(unknown, 403, 'INVALID_ATTESTATION').message).toContain(`${bond.zid} is not an identity known here`);
    expect(c.node.bonds.get(theirs.bond_id)).toBeNull();
    expect(c.node.bonds.get(bond.bond_id)).toBeNull();
    expect(c.node.bonds.ofZid(id.zid)?.bond.bond_id).toBe(bondId);
    // The stranger's own identity, asserted by it, then its bond attested by its own node: accepted.
    const asserted = await gossip(c, s, 'identity.assert', identityAssertBody(mintKey('sk'), bond.zid, s.id, Date.now()));
    expect(asserted.status, asserted.text).toBe(200);
    const good = await gossip(c, s, BOND_EVENT, { bond, attestation: signText(s.priv, bondAttestationText(bond)) });
    expect(good.status, good.text).toBe(200);
    expect(c.node.bonds.ofNode(s.id)?.bond.bond_id).toBe(bond.bond_id);
    // A forged release of A's bond (by the stranger) is refused too.
    const rel = { bond_id: bondId, zid: id.zid, node: a.node.nodeId, svcond: nowTick() };
    expectError(await gossip(c, s, RELEASE_EVENT, { release: rel, attestation: signText(s.priv, releaseAttestationText(rel)) }), 400, 'INVALID_ATTESTATION');
    const relAsS = { ...rel, node: s.id };
    expectError(
      await gossip(c, s, RELEASE_EVENT, { release: relAsS, attestation: signText(s.priv, releaseAttestationText(relAsS)) }),
      400,
      'INVALID_ATTESTATION',
    );
    expect(c.node.bonds.ofZid(id.zid)?.bond.bond_id).toBe(bondId);
  }, 60_000);

  it('the release, asked for at C, is made at A and reaches every registry', async () => {
    const r = await call(c.url, 'POST', '/api/contribute/release', {}, bearer(id.key));
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-svc-served-by')).toBe(a.node.nodeId);
    for (const n of [a, b, c]) {
      await waitFor(() => n.node.bonds.get(bondId)?.release?.attestation === r.body.attestation, 20_000, 'the release at a peer');
      expect(n.node.bonds.ofZid(id.zid)).toBeNull();
      expect(n.node.bonds.ofNode(a.node.nodeId)).toBeNull();
    }
    expect(r.body.mode).toBe('idle');
    // A's ticks now say idle and no bond.
    await waitFor(
      async () => {
        const s = await call(b.url, 'GET', '/api/mesh/status');
        const p = s.body.peers.find((x: { peerId: string }) => x.peerId === a.node.nodeId);
        return p?.mode === 'idle' && p.bondId === null;
      },
      20_000,
      "A idle in B's status",
    );
  }, 60_000);
});
