// svc-node backup and restore (cli/backup.ts, store/backup.ts) on a real node. A backup taken while computes and
// transfers run restores to a node with the same node id whose every record is one consistent state: chains that
// verify, credits spent equal to envelopes held, every seal acknowledged before the backup began. With the node
// stopped the CLI reads the data dir itself, and the restored node answers exactly as the original. Refusals: a
// missing data dir (exit 2, nothing created), a non-empty target (exit 2), a damaged or cut file (exit 1, nothing
// created), the backup route without the operator token (401).
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliAsync, tempDirs } from '../helpers/cli.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

// KO42 plus one domain operator: cost 1 (part 8), one envelope each.
const cost1 = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} };
const FREE = 20;
const GRANTED = 300;
/** Computes per identity at most during the load (envelope listings hold 500). */
const MAX_SEALS = 120;

type Who = { zid: string; key: string; slug: string };

const tempDir = tempDirs('svc-backup-');
let t: TestNode;
let a: Who;
let b: Who;
const restored: TestNode[] = [];
/** The backup of the stopped node and the data dir restored from it (the refusals reuse them). */
const stopped = { file: '', restoredDir: '' };

beforeAll(async () => {
  t = await startTestNode({}, { initialCredits: FREE });
  const operator = (await readFile(join(t.dataDir, 'operator-token'), 'utf8')).trim();
  a = await zkIdentity(t.url, 'backup-a');
  b = await zkIdentity(t.url, 'backup-b');
  for (const who of [a, b]) expect((await call(t.url, 'POST', '/api/tally/grants', { zid: who.zid, credits: GRANTED }, bearer(operator))).status).toBe(201);
});
afterAll(async () => {
  for (const r of restored) await r.stop().catch(() => undefined);
  await t?.destroy();
});

async function seal(url: string, who: Who): Promise<string> {
  const r = await call(url, 'POST', '/api/svc/compute', cost1, bearer(who.key));
  expect(r.status, r.text).toBe(200);
  return r.body.envelope.token_id as string;
}

/** What a node answers about an identity: balance, envelopes, record, chain validation. */
async function answers(url: string, who: Who): Promise<{ balance: any; envelopes: any; record: any; chain: any }> {
  const get = async (path: string) => {
    const r = await call(url, 'GET', path, undefined, bearer(who.key));
    expect(r.status, `${path}: ${r.text}`).toBe(200);
    return r.body;
  };
  return {
    balance: await get('/api/tally/balance'),
    envelopes: await get(`/api/tally/envelopes/${who.zid}?limit=500`),
    record: await get(`/api/tally/record?limit=100&owner=${who.zid}`),
    chain: await get(`/api/chain/${who.slug}/pohc/validate`),
  };
}

async function restoreAndStart(file: string): Promise<TestNode> {
  const dir = join(await tempDir(), 'restored');
  stopped.restoredDir = dir;
  const r = runCli(['restore', '--in', file, '--data-dir', dir]);
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ restored: dir, node_id: t.node.nodeId, storage_format: 1 });
  const node = await startTestNode({}, { initialCredits: FREE }, dir);
  restored.push(node);
  return node;
}

describe('svc-node backup / restore', () => {
  it('a backup of a node under write load restores to a node with the same id, balances, envelopes and chains that verify', async () => {
    const before = [await seal(t.url, a), await seal(t.url, a), await seal(t.url, b)];
    let loading = true;
    let sealed = 0;
    let transferred = 0;
    const computes = async (who: Who) => {
      for (let i = 0; loading && i < MAX_SEALS; i++) {
        await seal(t.url, who);
        sealed++;
      }
    };
    const transfers = async (from: Who, to: Who) => {
      while (loading) {
        const r = await call(t.url, 'POST', '/api/tally/envelopes/transfer-bulk', { to: to.zid, count: 1 }, bearer(from.key));
        // 400 while the sender holds no movable envelope yet (its first FREE are soulbound).
        expect([200, 400], r.text).toContain(r.status);
        if (r.status === 200) transferred++;
        await new Promise((res) => setTimeout(res, r.status === 200 ? 5 : 20));
      }
    };
    const load = Promise.all([computes(a), computes(b), transfers(a, b), transfers(b, a)]);
    let backup: Awaited<ReturnType<typeof runCliAsync>>;
    let sealedAtStart: number;
    let sealedAtEnd: number;
    const file = join(await tempDir(), 'under-load.backup.gz');
    try {
      while (sealed < 2 * FREE + 6) await new Promise((res) => setTimeout(res, 10));
      sealedAtStart = sealed;
      backup = await runCliAsync(['backup', '--data-dir', t.dataDir, '--out', file]);
      sealedAtEnd = sealed;
    } finally {
      loading = false;
      await load;
    }
    expect(backup.status, backup.stderr).toBe(0);
    const manifest = JSON.parse(backup.stdout);
    expect(manifest).toMatchObject({ file, from: 'running node', node_id: t.node.nodeId, storage_format: 1 });
    expect(manifest.files).toEqual(['node-key', 'receipt-secret', 'operator-token', 'credential-secret']);
    expect(manifest.sha256).toMatch(/^[0-9a-f]{64}$/);
    // The load ran while the backup was taken, and the file is 0600 like the data dir's secrets.
    expect(sealedAtEnd).toBeGreaterThan(sealedAtStart);
    expect(transferred).toBeGreaterThan(0);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const r = await restoreAndStart(file);
    expect(r.node.nodeId).toBe(t.node.nodeId);
    const ra = await answers(r.url, a);
    const rb = await answers(r.url, b);
    // One consistent state: chains verify, and every credit spent is an envelope held by one of the two (transfers
    // move envelopes, never credits), so no seal or transfer is there in part.
    for (const x of [ra, rb]) expect(x.chain).toMatchObject({ valid: true, first_bad: null });
    const spent = 2 * (FREE + GRANTED) - ra.balance.total - rb.balance.total;
    expect(ra.envelopes.total + rb.envelopes.total).toBe(spent);
    expect(spent).toBeGreaterThanOrEqual(sealedAtStart + before.length);
    // Every seal acknowledged before the backup began is in it.
    const held = new Set([...ra.envelopes.items, ...rb.envelopes.items].map((e: { token_id: string }) => e.token_id));
    for (const id of before) expect(held.has(id)).toBe(true);
    // The original went on past the snapshot: it holds at least as much.
    const oa = await answers(t.url, a);
    const ob = await answers(t.url, b);
    expect(oa.envelopes.total + ob.envelopes.total).toBeGreaterThanOrEqual(spent);
    expect(ra.chain.rows).toBeLessThanOrEqual(oa.chain.rows);
    await r.stop();
  }, 180_000);

  it('refuses the backup route without the operator token', async () => {
    expectError(await call(t.url, 'POST', '/api/admin/backup'), 401, 'SVC_NO_KEY');
    expectError(await call(t.url, 'POST', '/api/admin/backup', undefined, bearer(`op_${'0'.repeat(64)}`)), 401, 'SVC_INVALID_KEY');
    expectError(await call(t.url, 'POST', '/api/admin/backup', undefined, bearer(a.key)), 401, 'SVC_INVALID_KEY');
  });

  it('with no node on the data dir reads it directly, and the restored node answers exactly as the original', async () => {
    const sealed = await call(t.url, 'POST', '/api/svc/compute', cost1, bearer(a.key));
    expect(sealed.status, sealed.text).toBe(200);
    const original = { a: await answers(t.url, a), b: await answers(t.url, b) };
    await t.stop();
    const file = join(await tempDir(), 'stopped.backup.gz');
    const backup = runCli(['backup', '--data-dir', t.dataDir, '--out', file]);
    expect(backup.status, backup.stderr).toBe(0);
    expect(JSON.parse(backup.stdout)).toMatchObject({ from: 'data dir', node_id: t.node.nodeId });
    stopped.file = file;
    const r = await restoreAndStart(file);
    expect({ a: await answers(r.url, a), b: await answers(r.url, b) }).toEqual(original);
    // A result sealed by the original verifies on the restored node: the same receipt secret and node key.
    const verified = await call(r.url, 'POST', '/api/svc/verify', sealed.body, bearer(a.key));
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.valid).toBe(true);
    await r.stop();
  }, 120_000);

  it('refuses a missing data dir, a non-empty target and a damaged or cut file, creating nothing', async () => {
    const root = await tempDir();
    const missing = runCli(['backup', '--data-dir', join(root, 'nope'), '--out', join(root, 'x.gz')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(`data dir ${join(root, 'nope')} does not exist`);
    expect(await readdir(root)).toEqual([]);
    const noOutDir = runCli(['backup', '--data-dir', stopped.restoredDir, '--out', join(root, 'no-such-dir', 'x.gz')]);
    expect(noOutDir.status).toBe(2);
    expect(noOutDir.stderr).toContain(`--out: directory ${join(root, 'no-such-dir')} does not exist`);
    expect(await readdir(root)).toEqual([]);

    const file = stopped.file;
    const again = runCli(['restore', '--in', file, '--data-dir', stopped.restoredDir]);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('is not empty');

    // One entry's value changed (a valid file otherwise): the digest does not match.
    const lines = gunzipSync(await readFile(file))
      .toString('utf8')
      .split('\n');
    const i = lines.findIndex((l) => l.startsWith('["'));
    const [k, v] = JSON.parse(lines[i]!) as [string, string];
    lines[i] = JSON.stringify([k, Buffer.from(`${Buffer.from(v, 'base64').toString('utf8')} `).toString('base64')]);
    const tampered = join(root, 'tampered.gz');
    await writeFile(tampered, gzipSync(lines.join('\n')));
    const cut = join(root, 'cut.gz');
    await writeFile(cut, gzipSync(lines.slice(0, -2).join('\n')));
    for (const [bad, why] of [
      [tampered, "does not match the manifest's SHA-256"],
      [cut, 'ends before its manifest'],
    ] as const) {
      const target = join(root, `from-${bad.endsWith('cut.gz') ? 'cut' : 'tampered'}`);
      const r = runCli(['restore', '--in', bad, '--data-dir', target]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toContain(why);
      expect(await stat(target).catch(() => null)).toBe(null);
    }
    expect((await readdir(root)).sort()).toEqual(['cut.gz', 'tampered.gz']);
  }, 120_000);
});
