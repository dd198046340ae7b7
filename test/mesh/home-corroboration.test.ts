// A claim to be the home of an identity not known here, weighed against the homes the peers that know it name
// (mesh/home-corroboration.ts), with the peers as real HTTP servers on 127.0.0.1: the claim stands when more name the
// claimant than any other home; the claimant is not asked; a view counts only as the peer asked gives it; a refusal is
// remembered for a while, and concurrent checks of one claim share one round of questions.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { claimStands, homeCorroboration } from '../../src/mesh/home-corroboration.js';

const ZID = `zid_${'ab'.repeat(16)}`;
const HOME = '12D3KooWTrueHome';
const LIAR = '12D3KooWLyingMember';

const servers: Server[] = [];

interface Peer {
  peerId: string;
  url: string;
  /** Paths this peer was asked. */
  asked: string[];
}

/** A peer that answers `GET /api/mesh/identity/:zid` as a node whose directory names `home` (null: it does not know the zid). */
async function peerViewing(peerId: string, home: string | null, opts: { answerAs?: string; zid?: string } = {}): Promise<Peer> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ nodeId: opts.answerAs ?? peerId, zid: opts.zid ?? ZID, verified: home !== null, home, svcond: 1 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { peerId, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked };
}

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('a claim weighed against the views of the peers', () => {
  it('stands when more name the claimant, its own claim counted, than any other home', () => {
    expect(claimStands(HOME, [])).toBe(true);
    expect(claimStands(HOME, [HOME, HOME])).toBe(true);
    expect(claimStands(HOME, [HOME, LIAR])).toBe(true);
    // Tied or outvoted: refused.
    expect(claimStands(LIAR, [HOME])).toBe(false);
    expect(claimStands(LIAR, [HOME, HOME])).toBe(false);
    expect(claimStands(HOME, [LIAR, LIAR])).toBe(false);
    // The votes against are counted per home, not summed; a tie with any one home refuses.
    expect(claimStands(HOME, [HOME, '12D3KooWOther1', '12D3KooWOther2'])).toBe(true);
    expect(claimStands(HOME, ['12D3KooWOther1', '12D3KooWOther2'])).toBe(false);
  });
});

describe('the check of a claim on the peers', () => {
  it("takes the true home's claim and refuses a liar's, never asking the claimant", async () => {
    const a = await peerViewing('12D3KooWPeerA', HOME);
    const b = await peerViewing('12D3KooWPeerB', HOME);
    const home = await peerViewing(HOME, HOME);
    const liar = await peerViewing(LIAR, LIAR);
    const check = homeCorroboration({ peers: () => [a, b, home, liar], nowMs: () => 0 });
    expect(await check(ZID, HOME)).toBe(true);
    expect(home.asked).toEqual([]);
    expect(await check(ZID, LIAR)).toBe(false);
    expect(liar.asked).toEqual([`/api/mesh/identity/${ZID}`]);
    expect(a.asked).toEqual([`/api/mesh/identity/${ZID}`, `/api/mesh/identity/${ZID}`]);
  });

  it('takes a new identity no peer knows at once', async () => {
    const a = await peerViewing('12D3KooWPeerA', null);
    const check = homeCorroboration({ peers: () => [a], nowMs: () => 0 });
    expect(await check(ZID, HOME)).toBe(true);
    expect(await homeCorroboration({ peers: () => [], nowMs: () => 0 })(ZID, HOME)).toBe(true);
  });

  it('counts no view a peer gives as another, nor of another zid', async () => {
    // Two peers relay the liar's view as their own, one gives its view of another zid: none counts, so one honest
    // view outvotes the liar.
    const relayed = [await peerViewing('12D3KooWPeerC', LIAR, { answerAs: LIAR }), await peerViewing('12D3KooWPeerD', LIAR, { answerAs: LIAR })];
    const otherZid = await peerViewing('12D3KooWPeerE', LIAR, { zid: `zid_${'cd'.repeat(16)}` });
    const honest = await peerViewing('12D3KooWPeerA', HOME);
    const check = homeCorroboration({ peers: () => [...relayed, otherZid, honest], nowMs: () => 0 });
    expect(await check(ZID, HOME)).toBe(true);
    expect(await check(ZID, LIAR)).toBe(false);
  });

  it('remembers a refusal for a while, and concurrent checks of one claim ask once', async () => {
    const a = await peerViewing('12D3KooWPeerA', HOME);
    let now = 0;
    const check = homeCorroboration({ peers: () => [a], nowMs: () => now });
    expect(await Promise.all([check(ZID, LIAR), check(ZID, LIAR), check(ZID, LIAR)])).toEqual([false, false, false]);
    expect(a.asked).toHaveLength(1);
    now += 29_000;
    expect(await check(ZID, LIAR)).toBe(false);
    expect(a.asked).toHaveLength(1);
    now += 2_000;
    expect(await check(ZID, LIAR)).toBe(false);
    expect(a.asked).toHaveLength(2);
    // A claim that stood is not remembered: an identity learnt is known, so its claims are not weighed again.
    expect(await check(ZID, HOME)).toBe(true);
    expect(await check(ZID, HOME)).toBe(true);
    expect(a.asked).toHaveLength(4);
  });
});
