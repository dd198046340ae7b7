// The gossip handler table (type → body schema → handler) on its own, the verdict carried on the error, and the
// table inside a mesh node's HTTP entrance (what is refused is neither stored nor taken for a duplicate later).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { stampAt, systemClock } from '../../src/kernel/clock.js';
import { loadOrCreateNodeKey } from '../../src/mesh/identity.js';
import { GossipError } from '../../src/mesh/gossip-error.js';
import { GossipHandlerTable } from '../../src/mesh/gossip-handlers.js';
import { gossipVerdict, type Validation } from '../../src/mesh/validator.js';
import { TOPICS, bodyDigest, handshakeFor, signEvent, type MeshEvent } from '../../src/mesh/wire.js';
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
