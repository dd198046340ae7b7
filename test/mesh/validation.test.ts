// Every refusal of the one validator, on both entrances (libp2p topic validator and acceptHttpEvent), with
// counts, and proof that nothing refused was stored or forwarded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import { stampAt, systemClock } from '../../src/kernel/clock.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { SCORE_THRESHOLDS } from '../../src/mesh/host.js';
import { TOPICS, bodyDigest, encodeEnvelope, eventId, handshakeFor, signEvent, type MeshEvent } from '../../src/mesh/wire.js';
import { SECRET, removeDir, startNode, waitFor, waitForTopicMesh, type TestNode } from './helpers.js';

const now = (): number => stampAt(systemClock.nowNs()).svcond;

interface Forged {
  name: string;
  event: unknown;
  handshake: string | undefined;
  status: number;
  code: string;
  verdict: 'reject' | 'ignore';
}

async function forgeries(key: PrivateKey, sender: string, otherKey: PrivateKey): Promise<Forged[]> {
  const t = now();
  const body = (n: string) => ({ note: n, at: t });
  const good = async (n: string, svcond = t): Promise<{ event: MeshEvent; hs: string }> => {
    const event = await signEvent(key, sender, 'test.note', svcond, body(n));
    return { event, hs: handshakeFor(SECRET, sender, svcond, bodyDigest(event.body)) };
  };
  const out: Forged[] = [];
  {
    const { event } = await good('missing');
    out.push({ name: 'no handshake', event, handshake: undefined, status: 401, code: 'MISSING_HANDSHAKE', verdict: 'reject' });
  }
  {
    const { event } = await good('wrong-secret');
    const hs = handshakeFor('another-secret-of-enough-length', sender, t, bodyDigest(event.body));
    out.push({ name: 'HMAC with another secret', event, handshake: hs, status: 401, code: 'INVALID_HANDSHAKE', verdict: 'reject' });
  }
  {
    const a = await good('original');
    const b = await good('moved-to');
    out.push({ name: 'handshake moved to another body', event: b.event, handshake: a.hs, status: 401, code: 'INVALID_HANDSHAKE', verdict: 'reject' });
  }
  {
    const a = await good('garbage-handshake');
    out.push({ name: 'malformed handshake', event: a.event, handshake: 'v1=zz', status: 401, code: 'INVALID_HANDSHAKE', verdict: 'reject' });
  }
  {
    const { event, hs } = await good('stale', t - 121);
    out.push({ name: 'svcond 121 ticks ago', event, handshake: hs, status: 401, code: 'STALE_HANDSHAKE', verdict: 'ignore' });
  }
  {
    const { event, hs } = await good('future', t + 200);
    out.push({ name: 'svcond 200 ticks ahead', event, handshake: hs, status: 401, code: 'STALE_HANDSHAKE', verdict: 'ignore' });
  }
  {
    // Signed by a different key but claiming this sender; handshake is right (the secret is known).
    const event = await signEvent(otherKey, sender, 'test.note', t, body('other-key'));
    out.push({
      name: 'signature by another key',
      event,
      handshake: handshakeFor(SECRET, sender, t, bodyDigest(event.body)),
      status: 401,
      code: 'INVALID_SIGNATURE',
      verdict: 'reject',
    });
  }
  {
    // Body changed after signing, handshake recomputed for the new body.
    const { event } = await good('tampered');
    const tampered = { ...event, body: { note: 'tampered!', at: t } };
    out.push({
      name: 'body changed after signing',
      event: tampered,
      handshake: handshakeFor(SECRET, sender, t, bodyDigest(tampered.body)),
      status: 401,
      code: 'INVALID_SIGNATURE',
      verdict: 'reject',
    });
  }
  {
    const { event } = await good('bad-sender');
    const bad = { ...event, sender: 'not-a-peer-id' };
    out.push({
      name: 'sender is not an Ed25519 peer id',
      event: bad,
      handshake: handshakeFor(SECRET, 'not-a-peer-id', t, bodyDigest(bad.body)),
      status: 401,
      code: 'INVALID_SIGNATURE',
      verdict: 'reject',
    });
  }
  {
    const { event, hs } = await good('malformed');
    const { signature: _s, ...noSig } = event;
    out.push({ name: 'event without signature', event: { ...noSig, extra: 1 }, handshake: hs, status: 400, code: 'INVALID_EVENT', verdict: 'reject' });
  }
  return out;
}

describe('mesh validation on both entrances', () => {
  let victim: TestNode;
  let attacker: TestNode;
  let watcher: TestNode;
  let attackerKey: PrivateKey;
  let otherKey: PrivateKey;

  beforeAll(async () => {
    victim = await startNode({ clock: systemClock });
    // The watcher is connected to the victim only: whatever reaches it was accepted and forwarded by the victim. (No
    // peer exchange, so neither the attacker nor the watcher learns of the other from the victim and dials it.)
    attacker = await startNode({ clock: systemClock, bootstrap: victim.mesh.multiaddrs(), extra: { peerExchange: false } });
    watcher = await startNode({ clock: systemClock, bootstrap: victim.mesh.multiaddrs(), extra: { peerExchange: false } });
    attackerKey = (await loadOrCreateNodeKey(attacker.dataDir)).privateKey;
    otherKey = (await generateKeyPair('Ed25519')) as unknown as PrivateKey;
    await waitFor(() => (victim.mesh.p2p?.topicPeers(TOPICS.events).length ?? 0) >= 2, 8_000, 'victim sees both subscribers');
    await waitForTopicMesh([attacker], TOPICS.events, 8_000).catch(() => undefined);
    await waitFor(() => (attacker.mesh.p2p?.topicPeers(TOPICS.events).length ?? 0) >= 1, 8_000, 'attacker sees victim');
    await waitFor(() => (watcher.mesh.p2p?.topicPeers(TOPICS.events).length ?? 0) >= 1, 8_000, 'watcher sees victim');
  });

  afterAll(async () => {
    for (const n of [watcher, attacker, victim]) {
      await n.stop();
      await removeDir(n.dataDir);
    }
  });

  it('HTTP entrance: every forged or moved event is refused with its code, and nothing is stored', async () => {
    const cases = await forgeries(attackerKey, attacker.mesh.nodeId, otherKey);
    const before = (await victim.mesh.status()).storedEvents;
    const expected: Record<string, number> = {};
    for (const c of cases) {
      const err = await victim.mesh.acceptHttpEvent(c.event, c.handshake).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, c.name).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).status, c.name).toBe(c.status);
      expect((err as ServiceError).code, c.name).toBe(c.code);
      expected[c.code] = (expected[c.code] ?? 0) + 1;
    }
    const s = await victim.mesh.status();
    expect(s.rejected.http).toEqual(expected);
    expect(Object.values(s.rejected.http).reduce((a, b) => a + b, 0)).toBe(cases.length);
    expect(s.storedEvents).toBe(before);
    expect(await victim.mesh.recentEvents(500)).toHaveLength(before);
  });

  it('HTTP entrance: a valid event is stored once, relayed into the mesh, and a replay is a duplicate', async () => {
    const t = now();
    const event = await signEvent(attackerKey, attacker.mesh.nodeId, 'test.note', t, { note: 'valid over http' });
    const hs = handshakeFor(SECRET, event.sender, t, bodyDigest(event.body));
    const first = await victim.mesh.acceptHttpEvent(event, hs);
    expect(first).toEqual({ accepted: true, duplicate: false, id: eventId(event.sender, t, bodyDigest(event.body)) });
    const again = await victim.mesh.acceptHttpEvent(event, hs);
    expect(again).toEqual({ accepted: true, duplicate: true, id: first.id });
    // Same event with its signature re-encoded is the same (sender, svcond, body digest): still a duplicate.
    const third = await victim.mesh.acceptHttpEvent({ ...event }, [hs]);
    expect(third.duplicate).toBe(true);
    const stored = (await victim.mesh.recentEvents(500)).filter((e) => e.id === first.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.via).toBe('http');
    // Relayed into the mesh: the watcher (connected to the victim only) stores it once, via gossip.
    await waitFor(async () => (await watcher.mesh.recentEvents(500)).some((e) => e.id === first.id), 8_000, 'relay to watcher');
    expect((await watcher.mesh.recentEvents(500)).filter((e) => e.id === first.id)).toHaveLength(1);
    expect((await victim.mesh.status()).duplicates.http).toBe(2);
  });

  it('libp2p entrance: the topic validator refuses the same cases (Reject or Ignore), stores and forwards nothing', async () => {
    const cases = await forgeries(attackerKey, attacker.mesh.nodeId, otherKey);
    const before = await victim.mesh.status();
    const watcherBefore = (await watcher.mesh.status()).storedEvents;
    const host = attacker.mesh.p2p!;
    for (const c of cases) {
      const data = encodeEnvelope({ event: c.event as MeshEvent, handshake: c.handshake });
      await host.publish(TOPICS.events, data);
    }
    // Plus one message that is not an envelope at all.
    await host.publish(TOPICS.events, new TextEncoder().encode('not json'));
    const total = cases.length + 1;
    await waitFor(
      async () => {
        const s = await victim.mesh.status();
        return s.gossipVerdicts.reject + s.gossipVerdicts.ignore - before.gossipVerdicts.reject - before.gossipVerdicts.ignore >= total;
      },
      8_000,
      'victim to judge every forged message',
    );
    const s = await victim.mesh.status();
    const expected: Record<string, number> = { ...before.rejected.gossip };
    for (const c of cases) expected[c.code] = (expected[c.code] ?? 0) + 1;
    expected.INVALID_EVENT = (expected.INVALID_EVENT ?? 0) + 1;
    expect(s.rejected.gossip).toEqual(expected);
    const rejects = cases.filter((c) => c.verdict === 'reject').length + 1;
    const ignores = cases.filter((c) => c.verdict === 'ignore').length;
    expect(s.gossipVerdicts.reject - before.gossipVerdicts.reject).toBe(rejects);
    expect(s.gossipVerdicts.ignore - before.gossipVerdicts.ignore).toBe(ignores);
    expect(s.gossipVerdicts.accept - before.gossipVerdicts.accept).toBe(0);
    expect(s.storedEvents).toBe(before.storedEvents);
    // Rejected messages cost the attacker gossipsub score on the victim.
    // (gossipsub refreshes its cached scores on its heartbeat, about once a second)
    await waitFor(() => victim.mesh.p2p!.peerScore(attacker.mesh.nodeId) < 0, 5_000, 'attacker penalised');
    // The penalty decays (halving each second): once the score is back above the gossip threshold the victim takes
    // the attacker's messages and its gossip again. Published while the attacker is graylisted, a message would be
    // dropped, and its gossip too while the score stays under the threshold for longer than the message cache holds
    // it (a loaded machine's late heartbeats).
    await waitFor(() => victim.mesh.p2p!.peerScore(attacker.mesh.nodeId) > SCORE_THRESHOLDS.gossipThreshold, 15_000, 'the penalty decayed');
    // A valid message sent afterwards still arrives, and still is the only new thing at the watcher.
    const t = now();
    const okEvent = await signEvent(attackerKey, attacker.mesh.nodeId, 'test.note', t, { note: 'valid over libp2p' });
    const okHs = handshakeFor(SECRET, okEvent.sender, t, bodyDigest(okEvent.body));
    await host.publish(TOPICS.events, encodeEnvelope({ event: okEvent, handshake: okHs }));
    const okId = eventId(okEvent.sender, t, bodyDigest(okEvent.body));
    await waitFor(async () => (await watcher.mesh.recentEvents(500)).some((e) => e.id === okId), 8_000, 'valid event at watcher');
    expect((await watcher.mesh.status()).storedEvents).toBe(watcherBefore + 1);
    expect((await watcher.mesh.status()).rejected.gossip).toEqual({});
    // The same event published again (a new gossipsub message) is ignored as a duplicate and not stored again.
    await host.publish(TOPICS.events, encodeEnvelope({ event: okEvent, handshake: okHs }));
    await waitFor(async () => (await victim.mesh.status()).duplicates.gossip >= 1, 8_000, 'duplicate on gossip');
    expect((await victim.mesh.recentEvents(500)).filter((e) => e.id === okId)).toHaveLength(1);
  });
});

describe('a node without a mesh secret', () => {
  let lone: TestNode;
  beforeAll(async () => {
    lone = await startNode({ clock: systemClock, secret: null });
  });
  afterAll(async () => {
    await lone.stop();
    await removeDir(lone.dataDir);
  });

  it('answers 503 MESH_DISABLED on the HTTP entrance, even for a well-formed event, and runs alone', async () => {
    const key = (await loadOrCreateNodeKey(lone.dataDir)).privateKey;
    const t = now();
    const event = await signEvent(key, lone.mesh.nodeId, 'test.note', t, { x: 1 });
    for (const hs of [undefined, handshakeFor(SECRET, event.sender, t, bodyDigest(event.body))]) {
      const err = await lone.mesh.acceptHttpEvent(event, hs).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).status).toBe(503);
      expect((err as ServiceError).code).toBe('MESH_DISABLED');
    }
    const s = await lone.mesh.status();
    expect(s.enabled).toBe(false);
    expect(s.multiaddrs).toEqual([]);
    expect(s.meshSize).toBe(1);
    expect(s.coherenceScore).toBeNull();
    expect(s.storedEvents).toBe(0);
    expect(lone.mesh.p2p).toBeNull();
  });
});
