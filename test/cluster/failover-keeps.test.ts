// What a failover keeps (docs/decisions.md "Custody"): five node processes on 127.0.0.1, every operator bonded so an
// identity's custody set is three. An identity homed on node 0 seals a private and a published result, then
// transfers envelopes to an identity whose home is down; the transfer is acknowledged (pending at node 0), node 0 is
// SIGKILLed and a custodian takes the identity over. The new home serves both results, the published record and the
// envelope counts as acknowledged, and delivers the transfer once the receiver's home is back: the receiver holds
// each envelope once, and the envelopes' face value is conserved.
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { identityKey } from '../../scripts/bench/lib.js';
import type { FaultCluster } from '../helpers/fault/cluster.js';
import { custodyAt, startBondedCluster } from '../helpers/failover.js';
import { SPEND_BODY } from '../helpers/fault/workload.js';
import { grant } from '../helpers/custody.js';
import { bearer, call } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

let cluster: FaultCluster | null = null;
afterAll(async () => {
  await cluster?.destroy();
});

interface Envelope {
  token_id: string;
  owner: string;
  face_value: number;
  transfer_id?: string;
}

const envelopesAt = async (url: string, zid: string, key: string): Promise<{ total: number; items: Envelope[] }> => {
  const r = await call(url, 'GET', `/api/tally/envelopes/${zid}?limit=100`, undefined, bearer(key));
  expect(r.status, r.text).toBe(200);
  return r.body as { total: number; items: Envelope[] };
};

const faceValue = (items: readonly Envelope[]) => items.reduce((s, e) => s + e.face_value, 0);

async function register(url: string, seed: string): Promise<{ zid: string; key: string }> {
  const equation = createHash('sha256').update(seed).digest('hex');
  const reg = await call(url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation });
  expect(reg.status, reg.text).toBe(201);
  return { zid: reg.body.zid as string, key: await identityKey(url, equation) };
}

describe('a failover keeps what the old home acknowledged', () => {
  it('serves its sealed results and record, and delivers its transfer in flight once', async () => {
    cluster = await startBondedCluster('keeps');
    const c = cluster;
    const nodes = c.specs.map((s) => ({ url: c.url(s.index), dataDir: s.dataDir }));

    // The sender, homed on node 0, once its custody set is three; the receiver homed on a node outside that set, with
    // no write before the transfer's credit (its custodians hold nothing of it, so none takes it over while its home
    // is down).
    const sender = await register(c.url(0), 'keeps sender');
    await waitUntil(async () => (await custodyAt(c.url(0), sender.zid))?.custodians.length === 3, 'a custody set of three', 60_000, 250);
    const set = (await custodyAt(c.url(0), sender.zid))!;
    const custodians = set.custodians.slice(1).map((id) => c.nodeIds.indexOf(id));
    const away = [1, 2, 3, 4].find((i) => !custodians.includes(i))!;
    const receiver = await register(c.url(away), 'keeps receiver');
    await grant(nodes[0]!, sender.zid, 40);

    // A private result, then published ones (envelopes enough to transfer): each write acknowledged.
    const spend = async () => {
      const r = await call(c.url(0), 'POST', '/api/svc/compute', SPEND_BODY, bearer(sender.key));
      expect(r.status, r.text).toBe(200);
      return r.body as { result_id: string; envelope: { token_id: string } };
    };
    const privateRun = await spend();
    const publishing = await call(c.url(0), 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(sender.key));
    expect(publishing.status, publishing.text).toBe(200);
    const published = [await spend()];
    for (let i = 0; i < 3; i++) published.push(await spend());
    const publishedRun = published[0]!;
    const sealedBody = await call(c.url(0), 'GET', `/api/mesh/results/${publishedRun.result_id}`);
    expect(sealedBody.status, sealedBody.text).toBe(200);
    expect(sealedBody.body.body).toMatchObject({ status: 'found', home: c.nodeIds[0] });
    await waitUntil(
      async () =>
        (
          await Promise.all(
            [0, 1, 2, 3, 4].map((i) => custodyAt(c.url(i), receiver.zid).then(async (r) => r !== null && (await custodyAt(c.url(i), sender.zid)) !== null)),
          )
        ).every(Boolean),
      'both identities known everywhere',
      30_000,
      250,
    );

    // The receiver's home goes down; the transfer is acknowledged and left pending at node 0.
    await c.kill(away);
    const before = await envelopesAt(c.url(0), sender.zid, sender.key);
    const sent = await call(c.url(0), 'POST', '/api/tally/envelopes/transfer-bulk', { to: receiver.zid, count: 2 }, bearer(sender.key));
    expect(sent.status, sent.text).toBe(202);
    expect(sent.body).toMatchObject({ state: 'pending', from: sender.zid, to: receiver.zid, count: 2, to_home: c.nodeIds[away] });
    const transferId = sent.body.transfer_id as string;
    const tokens: string[] = sent.body.token_ids;
    const balance = await call(c.url(0), 'GET', '/api/tally/balance', undefined, bearer(sender.key));
    const after = await envelopesAt(c.url(0), sender.zid, sender.key);
    expect(after.total).toBe(before.total - 2);

    await c.kill(0);
    const moved = await waitUntil(
      async () => {
        for (const i of custodians) if ((await custodyAt(c.url(i), sender.zid))?.home === c.nodeIds[i]) return i;
        return null;
      },
      'a custodian serving the sender as its home',
      // What this test asks is what the takeover keeps (failover.test.ts holds the time bound): a loaded machine's
      // takeover is given longer.
      45_000,
      200,
    );
    const home = c.url(moved);

    // The new home serves the ledger, its counts and both results as acknowledged.
    const balanceThere = await call(home, 'GET', '/api/tally/balance', undefined, bearer(sender.key));
    expect(balanceThere.body).toEqual(balance.body);
    const envelopesThere = await envelopesAt(home, sender.zid, sender.key);
    expect(envelopesThere.total).toBe(after.total);
    expect(envelopesThere.items.map((e) => e.token_id).sort()).toEqual(after.items.map((e) => e.token_id).sort());
    const privateThere = await call(home, 'GET', `/api/mesh/results/${privateRun.result_id}`);
    expect(privateThere.status, privateThere.text).toBe(200);
    expect(privateThere.body.body).toEqual({ status: 'unpublished', result_id: privateRun.result_id, home: c.nodeIds[moved] });
    const publishedThere = await call(home, 'GET', `/api/mesh/results/${publishedRun.result_id}`);
    expect(publishedThere.status, publishedThere.text).toBe(200);
    expect(publishedThere.body.body).toEqual({ ...sealedBody.body.body, home: c.nodeIds[moved] });
    // Through another node: the record of the sender is forwarded to its new home and counts the published results.
    const other = [1, 2, 3, 4].find((i) => i !== moved && i !== away)!;
    await waitUntil(async () => (await custodyAt(c.url(other), sender.zid))?.home === c.nodeIds[moved], 'the home change heard', 15_000, 200);
    const record = await call(c.url(other), 'GET', `/api/tally/record?owner=${sender.zid}`, undefined, bearer(sender.key));
    expect(record.status, record.text).toBe(200);
    expect(record.body).toMatchObject({ node: c.nodeIds[moved], owner: sender.zid, total: published.length });
    expect(record.body.results.map((r: { result_id: string }) => r.result_id)).toEqual(published.map((r) => r.result_id).reverse());

    // The receiver's home comes back: the new home delivers the transfer, credited once.
    await c.startNode(away);
    await waitUntil(
      async () => {
        const t = await call(home, 'GET', `/api/tally/transfers/${transferId}`, undefined, bearer(sender.key));
        return t.status === 200 && t.body.state === 'delivered';
      },
      'the transfer delivered by the new home',
      30_000,
      250,
    );
    const received = await envelopesAt(c.url(away), receiver.zid, receiver.key);
    expect(received.total).toBe(2);
    expect(received.items.map((e) => e.token_id).sort()).toEqual([...tokens].sort());
    expect(received.items.every((e) => e.owner === receiver.zid && e.transfer_id === transferId)).toBe(true);
    const atReceiver = await call(c.url(away), 'GET', `/api/tally/transfers/${transferId}`, undefined, bearer(receiver.key));
    expect(atReceiver.body).toMatchObject({ state: 'delivered', from: sender.zid, to: receiver.zid, token_ids: tokens, from_home: c.nodeIds[moved] });
    // Conserved: what the sender held before the transfer is what it holds now and what the receiver got.
    const senderNow = await envelopesAt(home, sender.zid, sender.key);
    expect(faceValue(senderNow.items) + faceValue(received.items)).toBe(faceValue(before.items));
  }, 180_000);
});
