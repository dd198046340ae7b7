// Sealing and storage: one atomic batch per result, envelopes, the audit chain, charges, usage, and a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Level } from 'level';
import { join } from 'node:path';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { failNextBatch } from '../helpers/fail-batch.js';
import { rowHash } from '../../src/chain/service.js';
import { readFileSync } from 'node:fs';
import { isCompact } from '../../src/tally/stored-result.js';

let t: TestNode;
let id: { zid: string; key: string; slug: string };

beforeAll(async () => {
  t = await startTestNode();
  id = await zkIdentity(t.url, 'ledger-suite');
});
afterAll(async () => t.destroy());

const chain3 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY', 'THERMO_WIEN_PEAK', 'THERMO_IDEAL_GAS_PRESSURE'], inputs: {} };

describe('sealing', () => {
  it('each sealed result writes result, envelope, chain row, charge and counters together', async () => {
    const before = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body;
    const r = await call(t.url, 'POST', '/api/svc/compute', chain3, bearer(id.key));
    expect(r.status).toBe(200);
    expect(r.body.value).toBe(0.5); // Carnot 1 − 300/600
    // 3 domain operators → 3 credits; ⌊20 % of 3⌋ = 0 to the foundation (the 0.6 is carried), so 3 burned.
    expect(r.body.tally_charge).toMatchObject({ cost: 3, charged: 3, burned: 3, foundation: 0 });
    const after = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body;
    expect(after.total).toBe(before.total - 3);
    // A solver costs 10: ⌊20 % of 13⌋ − 0 = 2 to the foundation, 8 burned; the envelope's face value is what was burned.
    const s = await call(t.url, 'POST', '/api/svc/heat', {}, bearer(id.key));
    expect(s.body.tally_charge).toMatchObject({ cost: 10, burned: 8, foundation: 2 });
    expect(s.body.envelope.face_value).toBe(8);

    const list = await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}?limit=1`, undefined, bearer(id.key));
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(2);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).toMatchObject({
      token_id: s.body.envelope.token_id,
      owner: id.zid,
      face_value: 8,
      folder: 'inbox',
      funding: 'free',
      soulbound: true,
      result_id: s.body.result_id,
      hash: s.body.envelope.hash,
      tick: s.body.envelope.tick,
    });
    const page2 = await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}?limit=1&offset=1`, undefined, bearer(id.key));
    expect(page2.body.items[0].token_id).toBe(r.body.envelope.token_id);
    const byQ = await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}?q=${r.body.envelope.token_id}`, undefined, bearer(id.key));
    expect(byQ.body.items.map((e: { token_id: string }) => e.token_id)).toEqual([r.body.envelope.token_id]);
    const folders = await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}/folders`, undefined, bearer(id.key));
    expect(folders.body.folders).toEqual([{ folder: 'inbox', count: 2 }]);

    const explore = await call(t.url, 'GET', `/api/chain/${id.slug}/explore?from=1`, undefined, bearer(id.key));
    expect(explore.body.rows).toHaveLength(2);
    expect(explore.body.rows[1]).toMatchObject({ seq: 2, transitionType: 'compute_sealed', prev_hash: explore.body.rows[0].hash });
    expect(explore.body.rows[1].payload_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(explore.body.rows[1].hash).toBe(rowHash(explore.body.rows[1]));
    const valid = await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key));
    expect(valid.body).toMatchObject({ slug: id.slug, valid: true, rows: 2, first_bad: null });
  });

  it('another identity cannot list these envelopes or read the private chain', async () => {
    const other = await zkIdentity(t.url, 'ledger-other');
    expectError(await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(other.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(other.key)), 403, 'SVC_FORBIDDEN');
    expectError(await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`), 401, 'SVC_NO_KEY');
    expectError(await call(t.url, 'GET', `/api/chain/nope-nope/pohc/validate`), 404, 'SVC_NOT_FOUND');
  });

  it('a public machine is readable without a key', async () => {
    const made = await call(t.url, 'POST', '/api/chain/state-machines', { slug: 'open-book', is_public: true }, bearer(id.key));
    expect(made.status).toBe(201);
    expect(made.body.admin_key).toMatch(/^zsm_/);
    const r = await call(t.url, 'POST', '/api/svc/compute', chain3, bearer(made.body.admin_key));
    expect(r.body.audit).toMatchObject({ slug: 'open-book', seq: 1 });
    const v = await call(t.url, 'GET', '/api/chain/open-book/pohc/validate');
    expect(v.body).toMatchObject({ valid: true, rows: 1 });
  });

  it('a 422 seals nothing: no envelope, no chain row, no charge, no counter', async () => {
    const before = (await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key))).body.total;
    const bal = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total;
    const usage = (await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key))).body.used;
    const sealed = t.node.counters.get('sealed_total');
    // r = 1/2 on an 11-node rod with a sine start is first-order inaccurate: the Fourier check refuses it.
    const r = await call(t.url, 'POST', '/api/svc/heat', { nx: 11, fourier_number: 0.5 }, bearer(id.key));
    expectError(r, 422, 'SVC_TOLERANCE_GATE');
    expect(r.body.error.details.check.name).toBeTruthy();
    expect(r.body.error.details.check.rel_error).toBeGreaterThan(1e-3);
    expect((await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key))).body.total).toBe(before);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body.total).toBe(bal);
    expect((await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key))).body.used).toBe(usage);
    expect(t.node.counters.get('sealed_total')).toBe(sealed);
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key))).body.rows).toBe(2);
  });

  it('usage reports bundle, remaining, overage and enforced: false', async () => {
    const u = await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key));
    // Two seals on the default machine and one on 'open-book': usage counts per identity.
    expect(u.body).toEqual({ used: 3, bundle: 10, remaining: 7, overage: 0, enforced: false, tier: 'free', daily_allowance: 143, allowance_remaining: 140 });
  });

  it('concurrent seals on one chain serialise: 30 at once give 30 rows that validate', async () => {
    const fresh = await zkIdentity(t.url, 'ledger-concurrent');
    const rs = await Promise.all(
      Array.from({ length: 30 }, () =>
        call(t.url, 'POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }, bearer(fresh.key)),
      ),
    );
    expect(rs.every((r) => r.status === 200)).toBe(true);
    expect(new Set(rs.map((r) => r.body.audit.seq)).size).toBe(30);
    const v = await call(t.url, 'GET', `/api/chain/${fresh.slug}/pohc/validate`, undefined, bearer(fresh.key));
    expect(v.body).toMatchObject({ valid: true, rows: 30 });
    const bal = await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(fresh.key));
    expect(bal.body.total).toBe(128 - 30);
  });
});

describe('restart on the same data dir', () => {
  it('makes ids of the sizes and shape clients see: res_<tick>_<16 hex>, env_<24 hex>, all different', async () => {
    const { randomHex } = await import('../../src/util/random-hex.js');
    const many = Array.from({ length: 200 }, () => randomHex(24));
    for (const id of many) expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(new Set(many).size).toBe(many.length);
    expect(randomHex(16)).toMatch(/^[0-9a-f]{16}$/);
    expect(randomHex(32)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('keeps results, envelopes, chain, usage and day counters; the chain validates; tampering is named', async () => {
    const anonBefore = await call(t.url, 'POST', '/api/svc/compute', chain3);
    expect(anonBefore.status).toBe(200);
    const anonKey = Object.keys(Object.fromEntries(t.node.counters.withPrefix('anon:')))[0]!;
    const anonCount = t.node.counters.get(anonKey);
    const envBefore = (await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key))).body;
    const usageBefore = (await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key))).body;
    const balBefore = (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body;
    const resultId = envBefore.items[0].result_id;
    const headsBefore = t.node.chain.headsDigest();

    t = await t.restart();
    // Every chain head is loaded at start, so the digest the mesh carries is the same as before the restart.
    expect(t.node.chain.headsDigest()).toBe(headsBefore);

    const envAfter = (await call(t.url, 'GET', `/api/tally/envelopes/${id.zid}`, undefined, bearer(id.key))).body;
    expect(envAfter.total).toBe(envBefore.total);
    expect(envAfter.items).toEqual(envBefore.items);
    expect((await call(t.url, 'GET', '/api/compute/usage', undefined, bearer(id.key))).body).toEqual(usageBefore);
    expect((await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(id.key))).body).toEqual(balBefore);
    expect(t.node.counters.get(anonKey)).toBe(anonCount);
    const stored = await t.node.ledger.getResult(resultId);
    expect(stored?.result_id).toBe(resultId);
    // The stored result still verifies after the restart (receipt secret kept in the data dir).
    expect((await call(t.url, 'POST', '/api/svc/verify', stored, bearer(id.key))).body.valid).toBe(true);
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key))).body).toMatchObject({ valid: true, rows: 2 });
    // Appending after the restart continues the chain.
    await call(t.url, 'POST', '/api/svc/compute', chain3, bearer(id.key));
    expect((await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key))).body).toMatchObject({ valid: true, rows: 3 });

    // Tamper with row 2 directly in LevelDB: validation names it.
    await t.stop();
    const db = new Level<string, string>(join(t.dataDir, 'db'));
    await db.open();
    const rows = db.sublevel<string, string>('chain_rows', { valueEncoding: 'utf8' });
    const k = `${id.slug}!${String(2).padStart(16, '0')}`;
    const row = JSON.parse((await rows.get(k)) as string);
    row.payload_sha256 = 'f'.repeat(64);
    await rows.put(k, JSON.stringify(row));
    await db.close();
    t = await t.restart();
    const bad = await call(t.url, 'GET', `/api/chain/${id.slug}/pohc/validate`, undefined, bearer(id.key));
    expect(bad.body).toMatchObject({ valid: false, first_bad: { seq: 2, reason: 'row hash does not match its contents' } });
  });
});

describe('stored results', () => {
  it('a result is stored as the bytes that were sent, and read back byte for byte, after a restart too', async () => {
    let n = await startTestNode();
    try {
      const who = await zkIdentity(n.url, 'stored-results');
      // Kinetic energy with a mass no other test uses, repeated (a kept evaluation) and with a new mass each time.
      const requests = [7.25, 7.25, 7.25, 7.5].map((mass_kg) => ({
        domain: 'mechanics',
        operators: ['KO42', 'MECH_KINETIC_ENERGY'],
        inputs: { mass_kg, velocity_m_s: 2 },
      }));
      const sent: { id: string; text: string }[] = [];
      for (const request of requests) {
        const r = await call(n.url, 'POST', '/api/svc/compute', request, bearer(who.key));
        expect(r.status).toBe(200);
        expect(r.body.value).toBe(0.5 * request.inputs.mass_kg * 4);
        sent.push({ id: r.body.result_id, text: r.text });
      }
      const results = n.node.store.sub('results', 'bytes');
      for (const s of sent) {
        const record = (await n.node.store.get<Buffer>(results, s.id))!;
        expect(isCompact(record)).toBe(false);
        expect(record.toString('utf8')).toBe(s.text);
        expect((await n.node.ledger.getResultBytes(s.id))!.toString('utf8')).toBe(s.text);
      }
      n = await n.restart();
      for (const s of sent) expect((await n.node.ledger.getResultBytes(s.id))!.toString('utf8')).toBe(s.text);
      const stored = await n.node.ledger.getResult(sent[3]!.id);
      expect((await call(n.url, 'POST', '/api/svc/verify', stored, bearer(who.key))).body.valid).toBe(true);
    } finally {
      await n.destroy();
    }
  });

  it('results stored compact by earlier versions (template + own texts) are read back as the bytes that were sent', async () => {
    // Records written by the kept-template path before its removal (see test/tally/stored-result.test.ts).
    const fixture = JSON.parse(readFileSync(new URL('../tally/fixtures/compact-records.json', import.meta.url), 'utf8')) as {
      templateId: string;
      template: string;
      results: { record: string; body: string }[];
    };
    const n = await startTestNode();
    try {
      const store = n.node.store;
      const ids = fixture.results.map((_, i) => `res_1_fixture${i}`);
      await store.commit([
        { type: 'put', sub: store.sub('result_templates', 'utf8'), key: fixture.templateId, value: fixture.template },
        ...fixture.results.map((r, i) => ({ type: 'put' as const, sub: store.sub('results', 'bytes'), key: ids[i]!, value: Buffer.from(r.record, 'base64') })),
      ]);
      // Several results of one template: the template is read from the store once.
      const get = store.get.bind(store);
      let templateReads = 0;
      store.get = (async (sub: Parameters<typeof get>[0], key: string) => {
        if (sub === store.sub('result_templates', 'utf8')) templateReads++;
        return get(sub, key);
      }) as typeof store.get;
      for (const [i, r] of fixture.results.entries()) expect((await n.node.ledger.getResultBytes(ids[i]!))!.equals(Buffer.from(r.body, 'base64'))).toBe(true);
      expect(templateReads).toBe(1);
      store.get = get;
    } finally {
      await n.destroy();
    }
  });
});

describe('a batch that cannot be written', () => {
  it('a registration that fails leaves no identity and no chain head behind (it can be made again)', async () => {
    const n = await startTestNode();
    try {
      const heads = n.node.chain.headsDigest();
      failNextBatch(n, 0);
      const digest = 'ab'.repeat(32);
      const r = await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('SVC_STORAGE_UNAVAILABLE');
      expect(n.node.chain.headsDigest()).toBe(heads);
      // The same registration goes through once the store writes again.
      const again = await call(n.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
      expect(again.status).toBe(201);
      expect(n.node.chain.headsDigest()).not.toBe(heads);
    } finally {
      await n.destroy();
    }
  });

  it('fails its seals and those queued behind it with 503, rolls every one back, and the next seal continues the chain', async () => {
    let n = await startTestNode();
    try {
      const who = await zkIdentity(n.url, 'failing-batch');
      const request = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 3, velocity_m_s: 1 } };
      expect((await call(n.url, 'POST', '/api/svc/compute', request, bearer(who.key))).status).toBe(200);
      const balance = async () => (await call(n.url, 'GET', '/api/tally/balance', undefined, bearer(who.key))).body.total;
      const envelopes = async () => (await call(n.url, 'GET', `/api/tally/envelopes/${who.zid}`, undefined, bearer(who.key))).body.total;
      const before = { balance: await balance(), envelopes: await envelopes(), sealed: n.node.counters.get('sealed_total') };

      // The next batch fails once all four seals are made: the other three queue behind it meanwhile.
      failNextBatch(n, { until: () => n.node.counters.get('sealed_total') >= before.sealed + 4 });
      const replies = await Promise.all(Array.from({ length: 4 }, () => call(n.url, 'POST', '/api/svc/compute', request, bearer(who.key))));
      for (const r of replies) {
        expect(r.status).toBe(503);
        expect(r.body.error).toMatchObject({ code: 'SVC_STORAGE_UNAVAILABLE', retry_after_seconds: 1 });
        expect(r.headers.get('retry-after')).toBe('1');
      }
      // Nothing of the four is left: not in memory, not on disk.
      expect(await balance()).toBe(before.balance);
      expect(await envelopes()).toBe(before.envelopes);
      expect(n.node.counters.get('sealed_total')).toBe(before.sealed);
      const ok = await call(n.url, 'POST', '/api/svc/compute', request, bearer(who.key));
      expect(ok.status).toBe(200);
      expect(ok.body.audit.seq).toBe(2);
      expect((await call(n.url, 'GET', `/api/chain/${who.slug}/pohc/validate`, undefined, bearer(who.key))).body).toMatchObject({ valid: true, rows: 2 });
      expect(await balance()).toBe(before.balance - 1);

      n = await n.restart();
      expect(await balance()).toBe(before.balance - 1);
      expect(await envelopes()).toBe(before.envelopes + 1);
      expect((await call(n.url, 'GET', `/api/chain/${who.slug}/pohc/validate`, undefined, bearer(who.key))).body).toMatchObject({ valid: true, rows: 2 });
    } finally {
      await n.destroy();
    }
  });
});
