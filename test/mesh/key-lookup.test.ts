// Looking up an identity on the peers (mesh/key-lookup.ts) against real HTTP servers on 127.0.0.1: the home's signed
// answer is taken; a peer that signs for another home, relays another's answer, answers for another zid, answers
// late or alters a signed body is refused, whatever order the answers come in. A null says whether it is every peer's
// word (each answered, none with it) or not (one failed, or answered 5xx).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { remoteIdentityLookup, remoteKeyLookup } from '../../src/mesh/key-lookup.js';
import { IDENTITY_ASSERT } from '../../src/mesh/identity-assert.js';
import { MAX_SKEW_TICKS } from '../../src/mesh/validator.js';
import { signEvent, type MeshEvent } from '../../src/mesh/wire.js';
import { keyedNodes, type Signer } from '../helpers/promise-signers.js';

const NOW = 10_000;
const ZID = `zid_${'ab'.repeat(16)}`;
const DIGEST = 'cd'.repeat(32);

/** The assertion of ZID's key DIGEST, homed at `home`. */
function assertion(home: string, zid = ZID) {
  const key = { key_id: 'sk_lookup', kind: 'sk', zid, slug: null, plan: 'standard', created_unix_ms: 1, expires_unix_ms: null, revoked_unix_ms: null, home };
  return { digest: DIGEST, key, identity: { zid, home, default_machine: null } };
}

const servers: Server[] = [];

/** A peer at a real URL that answers every GET with `answer` (status 200), or 404 when it is null. */
async function peerAnswering(peerId: string, answer: unknown): Promise<{ peerId: string; url: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(answer === null ? 404 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer ?? { error: { code: 'SVC_NOT_FOUND' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { peerId, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let home: Signer;
let liar: Signer;
let honest: MeshEvent;

beforeAll(async () => {
  [home, liar] = (await keyedNodes(2)) as [Signer, Signer];
  honest = await signEvent(home.key, home.id, IDENTITY_ASSERT, NOW, assertion(home.id));
});

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

const lookupAmong = (peers: { peerId: string; url: string }[]) => remoteIdentityLookup({ peers: () => peers, nowSvcond: () => NOW });

describe('an identity looked up on the peers', () => {
  it("the home's signed answer is taken, with the home as its signer", async () => {
    const found = await lookupAmong([await peerAnswering(home.id, honest)])(ZID);
    expect(found).toEqual({ assertion: honest.body, sender: home.id });
  });

  it('every lie is refused, and the honest answer among them is the one taken', async () => {
    const lies = [
      // Signed by the liar, claiming the home's keys.
      await peerAnswering(liar.id, await signEvent(liar.key, liar.id, IDENTITY_ASSERT, NOW, assertion(home.id))),
      // Signed by the liar, about another identity.
      await peerAnswering(liar.id, await signEvent(liar.key, liar.id, IDENTITY_ASSERT, NOW, assertion(liar.id, `zid_${'ef'.repeat(16)}`))),
      // The home's genuine answer, relayed: the signer is not the peer asked.
      await peerAnswering(liar.id, honest),
      // Signed long ago (a replayed answer).
      await peerAnswering(liar.id, await signEvent(liar.key, liar.id, IDENTITY_ASSERT, NOW - MAX_SKEW_TICKS - 1, assertion(liar.id))),
      // The home's signature over an altered body.
      await peerAnswering(home.id, { ...honest, body: { ...assertion(home.id), key: { ...assertion(home.id).key, plan: 'unlimited' } } }),
      // Not an assertion at all, and no answer.
      await peerAnswering(liar.id, { type: 'tick', sender: liar.id, svcond: NOW, body: {}, signature: '' }),
      await peerAnswering(liar.id, null),
    ];
    expect(await lookupAmong(lies)(ZID)).toBeNull();
    const found = await lookupAmong([...lies, await peerAnswering(home.id, honest)])(ZID);
    expect(found).toEqual({ assertion: honest.body, sender: home.id });
  });

  it('a key lookup takes the same answer only for its digest', async () => {
    const peer = await peerAnswering(home.id, honest);
    expect(await remoteKeyLookup({ peers: () => [peer], nowSvcond: () => NOW })(DIGEST)).toEqual({ assertion: honest.body, sender: home.id });
    expect(await remoteKeyLookup({ peers: () => [peer], nowSvcond: () => NOW })('ee'.repeat(32))).toBeNull();
  });

  it('a null is every peer’s word only when each answered: a peer down or answering 5xx is told', async () => {
    const outcome = async (peers: { peerId: string; url: string }[]) => {
      let unanswered = 0;
      const found = await remoteKeyLookup({ peers: () => peers, nowSvcond: () => NOW })(DIGEST, undefined, () => unanswered++);
      return { found, unanswered };
    };
    const notHere = await peerAnswering(liar.id, null);
    const lying = await peerAnswering(liar.id, honest);
    expect(await outcome([notHere, lying])).toEqual({ found: null, unanswered: 0 });
    // A port nobody listens on (a server closed), and one answering 503.
    const gone = await peerAnswering(liar.id, null);
    await new Promise((resolve) => servers.pop()!.close(resolve));
    const failing = createServer((_req, res) => res.writeHead(503).end('{}'));
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    servers.push(failing);
    const busy = { peerId: liar.id, url: `http://127.0.0.1:${(failing.address() as AddressInfo).port}` };
    expect(await outcome([notHere, gone])).toEqual({ found: null, unanswered: 1 });
    expect(await outcome([notHere, busy])).toEqual({ found: null, unanswered: 1 });
    expect(await outcome([])).toEqual({ found: null, unanswered: 1 });
    // Found: nothing is told, whoever else failed.
    expect(await outcome([gone, await peerAnswering(home.id, honest)])).toEqual({ found: { assertion: honest.body, sender: home.id }, unanswered: 0 });
  });
});
