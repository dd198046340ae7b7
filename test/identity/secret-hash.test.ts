// Identities' secrets are scrypt hashes at a cost each record keeps (src/identity/secret-hash.ts): a record made at
// one cost logs in after the node's configured cost changes, and a record that names no cost was made at Node's
// default (N = 16384), the cost every node used before the setting existed.
import { createHash, scryptSync } from 'node:crypto';
import { join } from 'node:path';
import { Level } from 'level';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_SCRYPT_COST } from '../../src/config/scrypt-cost.js';
import { SCRYPT_RUNNING, SCRYPT_WAITING, hashSecret, scryptLoad } from '../../src/identity/secret-hash.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { call, startTestNode, type TestNode } from '../helpers/node.js';

const SALT = '00112233445566778899aabbccddeeff';

describe('hashSecret', () => {
  it('at the default cost is scrypt with Node’s defaults (N 16384, r 8, p 1), so records that name no cost still verify', async () => {
    expect(DEFAULT_SCRYPT_COST).toBe(14);
    expect((await hashSecret('correct horse', SALT)).equals(scryptSync('correct horse', Buffer.from(SALT, 'hex'), 32))).toBe(true);
  });

  it('at cost c is scrypt with N = 2^c; costs differ in their output', async () => {
    const low = await hashSecret('correct horse', SALT, 10);
    expect(low.equals(scryptSync('correct horse', Buffer.from(SALT, 'hex'), 32, { N: 1024, r: 8, p: 1 }))).toBe(true);
    expect(low.equals(await hashSecret('correct horse', SALT, 11))).toBe(false);
    // Above Node's 32 MiB default memory cap, still computed.
    expect((await hashSecret('x', SALT, 15)).length).toBe(32);
  });
});

describe('the scrypt gate', () => {
  it('runs at most SCRYPT_RUNNING at once, queues SCRYPT_WAITING in order and refuses more with 429, each answer its own', async () => {
    expect(SCRYPT_RUNNING).toBeGreaterThanOrEqual(1);
    expect(scryptLoad()).toEqual({ running: 0, waiting: 0 });
    const n = SCRYPT_RUNNING + SCRYPT_WAITING + 3;
    const finished: number[] = [];
    const all = Array.from({ length: n }, (_, i) =>
      hashSecret(`secret ${i}`, SALT, 10).then(
        (hash) => {
          finished.push(i);
          return hash;
        },
        (err: unknown) => err,
      ),
    );
    // Taken in one turn: the first SCRYPT_RUNNING run, the next SCRYPT_WAITING wait, the rest were refused.
    expect(scryptLoad()).toEqual({ running: SCRYPT_RUNNING, waiting: SCRYPT_WAITING });
    const out = await Promise.all(all);
    const refused = out.filter((o) => o instanceof ServiceError) as ServiceError[];
    expect(refused).toHaveLength(3);
    for (const e of refused) {
      expect(e.status).toBe(429);
      expect(e.code).toBe('SVC_RATE_LIMIT');
      expect(e.extra).toMatchObject({ retry_after_seconds: 1, scope: 'node' });
    }
    expect(out.slice(n - 3).every((o) => o instanceof ServiceError)).toBe(true);
    // Every accepted one got its own secret's hash, and they were served in the order they came.
    for (let i = 0; i < n - 3; i++) {
      expect((out[i] as Buffer).equals(scryptSync(`secret ${i}`, Buffer.from(SALT, 'hex'), 32, { N: 1024, r: 8, p: 1 })), String(i)).toBe(true);
    }
    if (SCRYPT_RUNNING === 1) expect(finished).toEqual(Array.from({ length: n - 3 }, (_, i) => i));
    expect(scryptLoad()).toEqual({ running: 0, waiting: 0 });
  });

  it('frees its place when a computation fails', async () => {
    await expect(hashSecret('x', SALT, 40)).rejects.toThrow();
    expect(scryptLoad()).toEqual({ running: 0, waiting: 0 });
    expect((await hashSecret('x', SALT, 10)).length).toBe(32);
  });
});

describe('a node whose scrypt cost changes', () => {
  const nodes: TestNode[] = [];
  afterAll(async () => {
    for (const n of nodes) await n.destroy();
  });
  const digestOf = (seed: string) => createHash('sha256').update(seed).digest('hex');

  it('logs in identities made at the old cost, a record without a cost at 14, and hashes new ones at the new cost', async () => {
    let t = await startTestNode({ identity: { scryptCost: 10 } });
    const atTen = digestOf('made at ten');
    expect((await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: atTen })).status).toBe(201);
    expect((await call(t.url, 'POST', '/api/auth/register', { email: 'ten@example.org', password: 'pw at ten' })).status).toBe(201);
    // An identity whose record is rewritten below as a record from before the setting: hashed at 14, no cost named.
    const legacy = digestOf('made before the setting');
    const reg = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: legacy });
    expect(reg.status).toBe(201);
    await t.stop();
    const db = new Level<string, string>(join(t.dataDir, 'db'));
    let legacyKey: string | null = null;
    for await (const k of db.keys()) if (k.endsWith(`identities!${reg.body.zid}`)) legacyKey = k;
    const record = JSON.parse(await db.get(legacyKey!));
    delete record.scrypt_cost;
    record.hash = scryptSync(legacy, Buffer.from(record.salt, 'hex'), 32).toString('hex');
    await db.put(legacyKey!, JSON.stringify(record));
    await db.close();

    t = await startTestNode({ identity: { scryptCost: 12 } }, {}, t.dataDir);
    nodes.push(t);
    expect((await call(t.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: atTen })).status).toBe(200);
    expect((await call(t.url, 'POST', '/api/auth/login', { email: 'ten@example.org', password: 'pw at ten' })).status).toBe(200);
    expect((await call(t.url, 'POST', '/api/auth/login', { email: 'ten@example.org', password: 'pw at twelve' })).status).toBe(401);
    expect((await call(t.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: legacy })).status).toBe(200);
    expect((await call(t.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: digestOf('never registered') })).status).toBe(401);

    const atTwelve = digestOf('made at twelve');
    const made = await call(t.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: atTwelve });
    expect(made.status).toBe(201);
    await t.stop();
    const again = new Level<string, string>(join(t.dataDir, 'db'));
    const costs: Record<string, unknown> = {};
    for await (const [k, v] of again.iterator()) if (k.includes('identities!zid_')) costs[JSON.parse(v).zid] = JSON.parse(v).scrypt_cost;
    await again.close();
    expect(costs[made.body.zid]).toBe(12);
    expect(costs[`zid_${atTen.slice(0, 32)}`]).toBe(10);
    expect(costs[reg.body.zid]).toBeUndefined();
  });
});
