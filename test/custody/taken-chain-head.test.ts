// The head of a machine's audit chain after a custody failover wrote its rows (custody/home-moves.ts adopt): the node
// that takes an identity over writes the rows its chain carries without appending them, and may hold the head of that
// chain in memory from an earlier write (it was the identity's home before). Its next write must chain on the last row
// taken, not on the head it remembered (which would overwrite an acknowledged row with another at its seq).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowHash, rowText, type AuditRow } from '../../src/chain/service.js';
import type { HomeChange } from '../../src/custody/home-change.js';
import { padNum, JsonText, type Op } from '../../src/store/db.js';
import { COMPUTE } from '../helpers/custody.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

let t: TestNode;
beforeAll(async () => {
  t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 50 });
}, 60_000);
afterAll(async () => {
  await t?.destroy();
});

describe('a chain taken over', () => {
  it('is continued from its last row, not from the head this node held before', async () => {
    const x = await zkIdentity(t.url, 'taken-chain-head');
    const first = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key));
    expect(first.status, first.text).toBe(200);
    const acked = first.body.audit as { seq: number; hash: string };
    expect((await t.node.chain.headOf(x.slug)).seq).toBe(acked.seq);

    // The rows another home wrote meanwhile, as the chain the takeover replays carries them.
    const rowsSub = t.node.store.sub('chain_rows');
    const taken: AuditRow[] = [];
    let prev = acked.hash;
    for (let seq = acked.seq + 1; seq <= acked.seq + 3; seq++) {
      const base = { seq, svcond: 1, transitionType: 'compute_sealed', payload_sha256: 'ab'.repeat(32), prev_hash: prev };
      taken.push({ ...base, hash: rowHash(base) });
      prev = taken.at(-1)!.hash;
    }
    const ops: Op[] = taken.map((r) => ({ type: 'put', sub: rowsSub, key: `${x.slug}!${padNum(r.seq)}`, value: new JsonText(JSON.stringify(r)) }));
    const change: HomeChange = { zid: x.zid, epoch: 2, home: t.node.nodeId, promises: [] };
    await t.node.custody.homeMoves.adopt(change, [], ops);

    const next = await call(t.url, 'POST', '/api/svc/compute', COMPUTE, bearer(x.key));
    expect(next.status, next.text).toBe(200);
    const last = taken.at(-1)!;
    expect(next.body.audit.seq).toBe(last.seq + 1);
    const rows = (await call(t.url, 'GET', `/api/chain/${x.slug}/explore?from=1&to=50`, undefined, bearer(x.key))).body.rows as AuditRow[];
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: last.seq + 1 }, (_, i) => i + 1));
    for (const r of taken) expect(rows.find((s) => s.seq === r.seq)?.hash).toBe(r.hash);
    const written = rows.at(-1)!;
    expect(written).toMatchObject({ seq: last.seq + 1, prev_hash: last.hash, hash: next.body.audit.hash });
    expect(rowHash(written)).toBe(written.hash);
    expect(rowText(written)).toContain(last.hash);
    expect(await t.node.chain.headOf(x.slug)).toEqual({ seq: last.seq + 1, hash: written.hash });
  }, 60_000);
});
