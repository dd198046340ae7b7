// The gossip handler table (type → body schema → handler) on its own, the verdict carried on the error, and the
// table inside a mesh node's HTTP entrance (what is refused is neither stored nor taken for a duplicate later); the
// node-wide budget of events of types without a row, at the table and at both entrances of a node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { stampAt, systemClock } from '../../src/kernel/clock.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { GossipError } from '../../src/mesh/gossip-error.js';
import { GossipHandlerTable, UNKNOWN_TYPES_PER_MINUTE } from '../../src/mesh/gossip-handlers.js';
import { gossipVerdict, type Validation } from '../../src/mesh/validator.js';
import { TOPICS, bodyDigest, encodeEnvelope, handshakeFor, signEvent, type MeshEvent, type MeshTopic } from '../../src/mesh/wire.js';
import { SECRET, makeDataDir, removeDir, startNode, type TestNode } from './helpers.js';

const event = (type: string, body: unknown): MeshEvent => ({ type, sender: 'peer-a', svcond: 100, body, signature: 'c2ln' });

async function outcome(p: Promise<void>): Promise<{ verdict: 'accept' } | { verdict: 'ignore' | 'reject'; status: number; code: string; message: string }> {
  try {
    await p;
    return { verdict: 'accept' };
  } catch (err) {
    expect(err).toBeInstanceOf(GossipError);
    const e = err as GossipError;
    return { verdict: e.action, status: e.status, code: e.code, message: e.message };
  }
}

describe('GossipHandlerTable', () => {
  const voteBody = z.object({ digest: z.string().regex(/^[0-9a-f]{64}$/), weight: z.number().int().min(1) });
  const seen: { body: unknown; sender: string }[] = [];
  const table = new GossipHandlerTable();
  table.register({
    type: 'consensus.vote',
    body: voteBody,
    handle: (body, e) => {
      seen.push({ body, sender: e.sender });
      if (body.weight === 7) throw new GossipError('ignore', 409, 'SVC_CONFLICT', 'vote for a closed round');
      if (body.weight === 13) throw new GossipError('reject', 403, 'SVC_FORBIDDEN', 'not a committee member');
      if (body.weight === 99) throw new Error('disk full');
    },
  });
  const digest = 'ab'.repeat(32);

  it('a type without a row is accepted as it is and reaches no handler', async () => {
    const before = seen.length;
    expect(await outcome(table.run(event('economy.transfer', { anything: [1, 2] }), TOPICS.events))).toEqual({ verdict: 'accept' });
    expect(seen.length).toBe(before);
  });

  it('a valid body is accepted and the handler gets the parsed body (unknown fields dropped) and the sender', async () => {
    const before = seen.length;
    expect(await outcome(table.run(event('consensus.vote', { digest, weight: 2, extra: 'x' }), TOPICS.consensus))).toEqual({ verdict: 'accept' });
    expect(seen.slice(before)).toEqual([{ body: { digest, weight: 2 }, sender: 'peer-a' }]);
  });

  it('a body failing its schema is rejected with 400 INVALID_EVENT naming the field, before the handler runs', async () => {
    const before = seen.length;
    const o = await outcome(table.run(event('consensus.vote', { digest: 'nope', weight: 2 }), TOPICS.consensus));
    expect(o).toMatchObject({ verdict: 'reject', status: 400, code: 'INVALID_EVENT' });
    expect((o as { message: string }).message).toContain('body.digest');
    expect(await outcome(table.run(event('consensus.vote', null), TOPICS.consensus))).toMatchObject({ verdict: 'reject', code: 'INVALID_EVENT' });
    expect(seen.length).toBe(before);
  });

  it('a registered type on another topic than its own is rejected', async () => {
    const o = await outcome(table.run(event('consensus.vote', { digest, weight: 2 }), TOPICS.events));
    expect(o).toMatchObject({ verdict: 'reject', status: 400, code: 'INVALID_EVENT' });
    expect((o as { message: string }).message).toContain('svc/consensus/1');
  });

  it('the handler decides by throwing: an ignore-error is ignore, a reject-error is reject, with their own status and code', async () => {
    expect(await outcome(table.run(event('consensus.vote', { digest, weight: 7 }), TOPICS.consensus))).toMatchObject({
      verdict: 'ignore',
      status: 409,
      code: 'SVC_CONFLICT',
    });
    expect(await outcome(table.run(event('consensus.vote', { digest, weight: 13 }), TOPICS.consensus))).toMatchObject({
      verdict: 'reject',
      status: 403,
      code: 'SVC_FORBIDDEN',
    });
  });

  it('any other error of a handler is a local failure: ignore (the peer is not penalised), 500', async () => {
    const o = await outcome(table.run(event('consensus.vote', { digest, weight: 99 }), TOPICS.consensus));
    expect(o).toMatchObject({ verdict: 'ignore', status: 500, code: 'SVC_INTERNAL_ERROR' });
    expect((o as { message: string }).message).toContain('disk full');
  });

  it('a type has one row; the remover takes it out', async () => {
    const t = new GossipHandlerTable();
    const row = { type: 'dns.x', body: z.object({}), handle: () => {} };
    const remove = t.register(row);
    expect(() => t.register(row)).toThrow(/already registered/);
    expect(t.types()).toEqual(['dns.x']);
    remove();
    expect(t.types()).toEqual([]);
    expect(await outcome(t.run(event('dns.x', 'not an object'), TOPICS.dns))).toEqual({ verdict: 'accept' });
  });
});

describe('gossipVerdict: the action travels on the error', () => {
  const ok = (duplicate: boolean): Validation => ({ ok: true, duplicate, id: 'i', digest: 'd', event: event('t', {}) });
  it('accept a new event, ignore a duplicate, and a refusal by its action whatever its code', () => {
    expect(gossipVerdict(ok(false))).toBe('accept');
    expect(gossipVerdict(ok(true))).toBe('ignore');
    expect(gossipVerdict({ ok: false, error: new GossipError('ignore', 401, 'INVALID_SIGNATURE', 'x') })).toBe('ignore');
    expect(gossipVerdict({ ok: false, error: new GossipError('reject', 401, 'STALE_HANDSHAKE', 'x') })).toBe('reject');
  });
});

describe('the table at a node: HTTP entrance', () => {
  let node: TestNode;
  let sender: { key: Awaited<ReturnType<typeof loadOrCreateNodeKey>>; dir: string };
  const applied: unknown[] = [];
  let refuse: GossipError | null = null;

  beforeAll(async () => {
    node = await startNode({ clock: systemClock });
    const dir = await makeDataDir();
    sender = { key: await loadOrCreateNodeKey(dir), dir };
    node.mesh.gossip.register({
      type: 'consensus.note',
      body: z.object({ n: z.number().int() }),
      handle: (body) => {
        if (refuse) throw refuse;
        applied.push(body);
      },
    });
  });

  afterAll(async () => {
    await node.stop();
    await removeDir(node.dataDir);
    await removeDir(sender.dir);
  });

  async function send(body: unknown) {
    const t = stampAt(systemClock.nowNs()).svcond;
    const e = await signEvent(sender.key.privateKey, sender.key.nodeId, 'consensus.note', t, body);
    return { event: e, hs: handshakeFor(SECRET, e.sender, t, bodyDigest(e.body)) };
  }

  it('a body failing the schema: 400 INVALID_EVENT, nothing stored, nothing applied', async () => {
    const before = (await node.mesh.status()).storedEvents;
    const { event: e, hs } = await send({ n: 'one' });
    await expect(node.mesh.acceptHttpEvent(e, hs)).rejects.toMatchObject({ status: 400, code: 'INVALID_EVENT', action: 'reject' });
    expect((await node.mesh.status()).storedEvents).toBe(before);
    expect((await node.mesh.status()).rejected.http.INVALID_EVENT).toBe(1);
    expect(applied).toEqual([]);
  });

  it('a handler refusal is the answer, and the same event sent again is judged again (not a duplicate)', async () => {
    const { event: e, hs } = await send({ n: 5 });
    refuse = new GossipError('ignore', 409, 'SVC_CONFLICT', 'not now');
    await expect(node.mesh.acceptHttpEvent(e, hs)).rejects.toMatchObject({ status: 409, code: 'SVC_CONFLICT', action: 'ignore' });
    refuse = null;
    const r = await node.mesh.acceptHttpEvent(e, hs);
    expect(r).toMatchObject({ accepted: true, duplicate: false });
    expect(applied).toEqual([{ n: 5 }]);
    expect((await node.mesh.recentEvents(500)).filter((s) => s.id === r.id)).toHaveLength(1);
    // Now it is a duplicate: acknowledged, not applied again.
    expect(await node.mesh.acceptHttpEvent(e, hs)).toMatchObject({ accepted: true, duplicate: true });
    expect(applied).toEqual([{ n: 5 }]);
  });

  it('a DNS registration with a bad body is refused at the entrance (the DNS row), a good one is applied', async () => {
    const t = stampAt(systemClock.nowNs()).svcond;
    const bad = await signEvent(sender.key.privateKey, sender.key.nodeId, 'dns.register', t, {
      name: 'Bad Name!',
      peerId: sender.key.nodeId,
      url: 'http://127.0.0.1:1',
      svcond: t,
    });
    await expect(node.mesh.acceptHttpEvent(bad, handshakeFor(SECRET, bad.sender, t, bodyDigest(bad.body)))).rejects.toMatchObject({
      status: 400,
      code: 'DNS_INVALID_RECORD',
      action: 'reject',
    });
    expect(node.mesh.dns.resolve('bad name!')).toBeNull();
    const good = await signEvent(sender.key.privateKey, sender.key.nodeId, 'dns.register', t, {
      name: 'table.svc',
      peerId: sender.key.nodeId,
      url: 'http://127.0.0.1:1',
      multiaddrs: [],
      svcond: t,
    });
    await node.mesh.acceptHttpEvent(good, handshakeFor(SECRET, good.sender, t, bodyDigest(good.body)));
    expect(node.mesh.dns.resolve('table.svc')).toMatchObject({ name: 'table.svc', peerId: sender.key.nodeId, registrar: sender.key.nodeId });
  });
});

describe('events of types without a row: one node-wide budget', () => {
  let nowMs = 1_000_000;
  const table = new GossipHandlerTable({ nowMs: () => nowMs, unknownTypesPerMinute: 3 });
  table.register({ type: 'known.note', body: z.object({ n: z.number() }), handle: () => {} });
  // Another sender and another invented type each time: neither helps past the budget.
  const unknown = (i: number): MeshEvent => ({ ...event(`invented.t${i}`, { i }), sender: `peer-${i}` });

  it('by default a node takes UNKNOWN_TYPES_PER_MINUTE of them a minute', () => {
    expect(UNKNOWN_TYPES_PER_MINUTE).toBe(120);
  });

  it('past the budget they are ignored with 429 SVC_RATE_LIMIT (scope node, Retry-After), whatever the type or sender', async () => {
    for (let i = 0; i < 3; i++) expect(await outcome(table.run(unknown(i), TOPICS.events))).toEqual({ verdict: 'accept' });
    nowMs += 10_000;
    let refusal: unknown;
    await table.run(unknown(3), TOPICS.events).catch((err: unknown) => (refusal = err));
    expect(refusal).toBeInstanceOf(GossipError);
    expect(refusal).toMatchObject({ action: 'ignore', status: 429, code: 'SVC_RATE_LIMIT', extra: { scope: 'node', limit: 3, window_seconds: 60 } });
    // The first of the three leaves the window 50 s from now.
    expect((refusal as GossipError).extra.retry_after_seconds).toBe(50);
    expect((refusal as GossipError).message).toContain('invented.t3');
    expect(await outcome(table.run(unknown(4), TOPICS.dns))).toMatchObject({ verdict: 'ignore', code: 'SVC_RATE_LIMIT' });
  });

  it('a type with a row is not counted nor held by it', async () => {
    for (let i = 0; i < 10; i++) expect(await outcome(table.run(event('known.note', { n: i }), TOPICS.events))).toEqual({ verdict: 'accept' });
  });

  it('the budget refills as accepted events leave the minute', async () => {
    nowMs += 50_001;
    for (let i = 5; i < 8; i++) expect(await outcome(table.run(unknown(i), TOPICS.events))).toEqual({ verdict: 'accept' });
    expect(await outcome(table.run(unknown(8), TOPICS.events))).toMatchObject({ verdict: 'ignore', status: 429 });
  });
});

describe('the unknown-type budget at a node: not stored, not relayed, counted', () => {
  let node: TestNode;
  let sender: { key: Awaited<ReturnType<typeof loadOrCreateNodeKey>>; dir: string };
  const relayed: string[] = [];

  beforeAll(async () => {
    node = await startNode({ clock: systemClock, extra: { limits: { unknownEventsPerMinute: 2 } } });
    const dir = await makeDataDir();
    sender = { key: await loadOrCreateNodeKey(dir), dir };
    node.mesh.gossip.register({ type: 'known.note', body: z.object({ n: z.number() }), handle: () => {} });
    // What the node relays: its host's publish (patched on the instance).
    const host = node.mesh.p2p!;
    const publish = host.publish.bind(host);
    host.publish = (topic: string, data: Uint8Array) => {
      relayed.push((JSON.parse(new TextDecoder().decode(data)) as { event: MeshEvent }).event.type);
      return publish(topic, data);
    };
  });

  afterAll(async () => {
    await node.stop();
    await removeDir(node.dataDir);
    await removeDir(sender.dir);
  });

  async function signed(type: string, body: unknown) {
    const t = stampAt(systemClock.nowNs()).svcond;
    const e = await signEvent(sender.key.privateKey, sender.key.nodeId, type, t, body);
    return { event: e, hs: handshakeFor(SECRET, e.sender, t, bodyDigest(e.body)) };
  }

  /** The gossipsub verdict the node gives a message (its topic validator), as libp2p would ask for it. */
  function gossipVerdictOf(topic: MeshTopic, env: { event: MeshEvent; hs: string }): Promise<string> {
    const m = node.mesh as unknown as { validateGossip(topic: string, data: Uint8Array, from: string): Promise<string> };
    return m.validateGossip(topic, encodeEnvelope({ event: env.event, handshake: env.hs }), 'peer-x');
  }

  it('HTTP: within the budget an unknown type is stored and relayed; past it 429, neither stored nor relayed; a known type goes on', async () => {
    const stored0 = (await node.mesh.status()).storedEvents;
    for (let i = 0; i < 2; i++) {
      const { event: e, hs } = await signed(`invented.http${i}`, { i });
      expect(await node.mesh.acceptHttpEvent(e, hs)).toMatchObject({ accepted: true, duplicate: false });
    }
    expect(relayed).toEqual(['invented.http0', 'invented.http1']);
    const over = await signed('invented.http2', { i: 2 });
    await expect(node.mesh.acceptHttpEvent(over.event, over.hs)).rejects.toMatchObject({
      status: 429,
      code: 'SVC_RATE_LIMIT',
      action: 'ignore',
      extra: { scope: 'node' },
    });
    const known = await signed('known.note', { n: 1 });
    expect(await node.mesh.acceptHttpEvent(known.event, known.hs)).toMatchObject({ accepted: true, duplicate: false });
    expect(relayed).toEqual(['invented.http0', 'invented.http1', 'known.note']);
    const status = await node.mesh.status();
    expect(status.storedEvents).toBe(stored0 + 3);
    expect(status.rejected.http.SVC_RATE_LIMIT).toBe(1);
    expect((await node.mesh.recentEvents(500)).map((s) => s.event.type)).not.toContain('invented.http2');
  });

  it('gossip: past the budget the verdict is ignore (gossipsub neither keeps nor forwards it, no penalty), counted by reason', async () => {
    const before = await node.mesh.status();
    expect(await gossipVerdictOf(TOPICS.events, await signed('invented.gossip', { g: 1 }))).toBe('ignore');
    expect(await gossipVerdictOf(TOPICS.events, await signed('known.note', { n: 2 }))).toBe('accept');
    const after = await node.mesh.status();
    expect(after.gossipVerdicts.ignore).toBe(before.gossipVerdicts.ignore + 1);
    expect(after.rejected.gossip.SVC_RATE_LIMIT).toBe(1);
    expect(after.gossipVerdicts.reject).toBe(before.gossipVerdicts.reject);
  });
});
