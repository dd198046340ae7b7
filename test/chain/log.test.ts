// The verifiable log over HTTP: signed checkpoints, RFC 9162 inclusion and consistency proofs checked with the
// verifier, the export checked offline by verify-log (in-process), and a tampered row, a dropped row and a forked
// checkpoint each detected.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { leafHash, verifyConsistency, verifyInclusion } from '../../src/chain/merkle.js';
import { rowHash, rowText, type AuditRow } from '../../src/chain/service.js';
import { checkpointText, CHECKPOINT_EVENT, type Checkpoint } from '../../src/chain/checkpoints.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { verifyLog } from '../../src/chain/verify-log.js';
import { verifyLogFiles } from '../../src/cli/verify-log.js';
import { padNum } from '../../src/store/db.js';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { MemoryTree } from '../../src/chain/merkle.js';

let t: TestNode;
let owner: { zid: string; key: string; slug: string };
let dir: string;
const hx = (s: string) => Buffer.from(s, 'hex');
const get = (path: string) => call(t.url, 'GET', path, undefined, bearer(owner.key));
const append = async (n: number) => {
  for (let i = 0; i < n; i++) expect((await call(t.url, 'POST', `/api/chain/${owner.slug}/events`, { payload: { i } }, bearer(owner.key))).status).toBe(201);
};

beforeAll(async () => {
  t = await startTestNode();
  owner = await zkIdentity(t.url, 'log-owner');
  dir = await mkdtemp(join(tmpdir(), 'svc-log-'));
  await append(20);
});
afterAll(async () => {
  await t.destroy();
  await rm(dir, { recursive: true, force: true });
});

describe('checkpoints and proofs', () => {
  it('a checkpoint signs the root of every row; it verifies offline with the home peer id', async () => {
    const cp = (await get(`/api/chain/${owner.slug}/checkpoint`)).body;
    expect(cp).toMatchObject({ slug: owner.slug, home: t.node.nodeId, tree_size: 20 });
    expect(verifyText(cp.home, checkpointText(cp), cp.signature)).toBe(true);
    expect(verifyText(cp.home, checkpointText({ ...cp, tree_size: 19 }), cp.signature)).toBe(false);
    const v = (await get(`/api/chain/${owner.slug}/pohc/validate`)).body;
    expect(v.root_hash).toBe(cp.root_hash);
    // Read again with no new rows: the same checkpoint.
    expect((await get(`/api/chain/${owner.slug}/checkpoint`)).body.signature).toBe(cp.signature);
  });

  it('inclusion proofs of rows verify against the signed root, and against an older size', async () => {
    const cp = (await get(`/api/chain/${owner.slug}/checkpoint`)).body;
    const rows: AuditRow[] = (await get(`/api/chain/${owner.slug}/explore?from=1&to=20`)).body.rows;
    for (const seq of [1, 2, 7, 13, 20]) {
      const p = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=${seq}`)).body;
      expect(p).toMatchObject({ leaf_index: seq - 1, tree_size: 20, root_hash: cp.root_hash });
      expect(p.leaf_hash).toBe(leafHash(rowText(rows[seq - 1]!)).toString('hex'));
      expect(verifyInclusion(p.leaf_index, p.tree_size, hx(p.leaf_hash), p.audit_path.map(hx), hx(cp.root_hash))).toBe(true);
      expect(verifyInclusion(p.leaf_index, p.tree_size, leafHash('another row'), p.audit_path.map(hx), hx(cp.root_hash))).toBe(false);
    }
    const old = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=3&size=7`)).body;
    expect(verifyInclusion(2, 7, hx(old.leaf_hash), old.audit_path.map(hx), hx(old.root_hash))).toBe(true);
    expect(expectError((await get(`/api/chain/${owner.slug}/proof/inclusion?seq=21`)) as never, 400, 'SVC_INVALID_INPUT').field).toBe('seq');
    expect(expectError((await get(`/api/chain/${owner.slug}/proof/inclusion?seq=1&size=99`)) as never, 400, 'SVC_INVALID_INPUT').field).toBe('size');
    expectError((await get(`/api/chain/${owner.slug}/proof/inclusion`)) as never, 400, 'SVC_INVALID_INPUT');
  });

  it('a consistency proof links an old signed checkpoint to a new one', async () => {
    const first = (await get(`/api/chain/${owner.slug}/checkpoint`)).body as Checkpoint;
    await append(13);
    const second = (await get(`/api/chain/${owner.slug}/checkpoint`)).body as Checkpoint;
    expect(second.tree_size).toBe(first.tree_size + 13);
    const p = (await get(`/api/chain/${owner.slug}/proof/consistency?from=${first.tree_size}`)).body;
    expect(p).toMatchObject({ tree_size_1: first.tree_size, tree_size_2: second.tree_size, root_hash_1: first.root_hash, root_hash_2: second.root_hash });
    expect(verifyConsistency(first.tree_size, second.tree_size, hx(first.root_hash), hx(second.root_hash), p.consistency_path.map(hx))).toBe(true);
    expect(verifyConsistency(first.tree_size, second.tree_size, leafHash('x'), hx(second.root_hash), p.consistency_path.map(hx))).toBe(false);
    expect(expectError((await get(`/api/chain/${owner.slug}/proof/consistency?from=30&to=40`)) as never, 400, 'SVC_INVALID_INPUT').field).toBe('to');
    expect(expectError((await get(`/api/chain/${owner.slug}/proof/consistency?from=31&to=30`)) as never, 400, 'SVC_INVALID_INPUT').field).toBe('from');
  });

  it('after a restart the tree, checkpoints and proofs carry on', async () => {
    const before = (await get(`/api/chain/${owner.slug}/checkpoint`)).body;
    t = await t.restart();
    await append(3);
    const after = (await get(`/api/chain/${owner.slug}/checkpoint`)).body;
    expect(after.tree_size).toBe(before.tree_size + 3);
    expect(after.root_hash).toBe((await get(`/api/chain/${owner.slug}/pohc/validate`)).body.root_hash);
    const p = (await get(`/api/chain/${owner.slug}/proof/consistency?from=${before.tree_size}`)).body;
    expect(verifyConsistency(before.tree_size, after.tree_size, hx(before.root_hash), hx(after.root_hash), p.consistency_path.map(hx))).toBe(true);
  }, 30_000);
});

describe('verify-log', () => {
  it('an export with its proofs verifies offline (the CLI, in-process)', async () => {
    const doc = (await get(`/api/chain/${owner.slug}/export`)).body;
    expect(doc.rows.length).toBe(doc.checkpoints.at(-1).tree_size);
    const inclusion = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=5`)).body;
    const consistency = (await get(`/api/chain/${owner.slug}/proof/consistency?from=20`)).body;
    await writeFile(join(dir, 'log.json'), JSON.stringify(doc));
    await writeFile(join(dir, 'proofs.json'), JSON.stringify([inclusion, consistency]));
    const out = await verifyLogFiles(join(dir, 'log.json'), join(dir, 'proofs.json'));
    expect(out.code).toBe(0);
    expect(out.report).toMatchObject({ valid: true, first_bad: null, forks: [], sound_rows: doc.rows.length });
    expect(out.report!.proofs.every((p) => p.valid && p.anchored)).toBe(true);
    expect((await verifyLogFiles(join(dir, 'missing.json'))).code).toBe(2);
  });

  it('proofs in base64 (RFC 6962 §4’s JSON) on ?encoding=base64, hex by default; verify-log reads both', async () => {
    const b64 = /^[A-Za-z0-9+/]{43}=$/;
    const hexInc = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=5`)).body;
    const inc = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=5&encoding=base64`)).body;
    expect(hexInc).toMatchObject({ encoding: 'hex', root_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(inc).toMatchObject({ encoding: 'base64', leaf_index: 4, root_hash: expect.stringMatching(b64) });
    expect(inc.audit_path.map((h: string) => Buffer.from(h, 'base64').toString('hex'))).toEqual(hexInc.audit_path);
    expect(Buffer.from(inc.leaf_hash, 'base64').toString('hex')).toBe(hexInc.leaf_hash);
    const con = (await get(`/api/chain/${owner.slug}/proof/consistency?from=7&encoding=base64`)).body;
    expect(con.consistency_path.every((h: string) => b64.test(h))).toBe(true);
    const b = (h: string) => Buffer.from(h, 'base64');
    expect(verifyConsistency(con.tree_size_1, con.tree_size_2, b(con.root_hash_1), b(con.root_hash_2), con.consistency_path.map(b))).toBe(true);
    const doc = (await get(`/api/chain/${owner.slug}/export`)).body;
    const report = await verifyLog(doc, [inc, con, hexInc]);
    expect(report.proofs).toEqual([1, 2, 3].map(() => expect.objectContaining({ valid: true, anchored: true })));
    expect(report.valid).toBe(true);
    // A base64 proof tampered in one hash fails as a hex one does.
    const bad = { ...inc, audit_path: [Buffer.alloc(32, 7).toString('base64'), ...inc.audit_path.slice(1)] };
    expect((await verifyLog(doc, [bad])).proofs[0]).toMatchObject({ valid: false });
    expectError((await get(`/api/chain/${owner.slug}/proof/inclusion?seq=5&encoding=base58`)) as never, 400, 'SVC_INVALID_INPUT');
  });

  it('a tampered row, a rewritten chain, a dropped row, a forged proof are each detected', async () => {
    const doc = (await get(`/api/chain/${owner.slug}/export`)).body;
    const tampered = structuredClone(doc);
    tampered.rows[4].payload_sha256 = 'f'.repeat(64);
    expect((await verifyLog(tampered)).first_bad).toEqual({ seq: 5, reason: 'row hash does not match its contents' });
    // Rewritten from row 5 on, every hash made again: the chain holds, the signed roots do not.
    const rewritten = structuredClone(doc);
    for (let i = 4; i < rewritten.rows.length; i++) {
      const r = rewritten.rows[i];
      if (i === 4) r.payload_sha256 = 'f'.repeat(64);
      r.prev_hash = rewritten.rows[i - 1].hash;
      r.hash = rowHash(r);
    }
    const rr = await verifyLog(rewritten);
    expect(rr.first_bad).toBeNull();
    expect(rr.valid).toBe(false);
    expect(rr.checkpoints.some((c) => c.matches_rows === false)).toBe(true);
    const dropped = structuredClone(doc);
    dropped.rows.splice(9, 1);
    expect((await verifyLog(dropped)).first_bad).toEqual({ seq: 10, reason: 'sequence gap: expected 10, found 11' });
    const proof = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=5`)).body;
    const forged = { ...proof, leaf_hash: leafHash('forged').toString('hex') };
    expect((await verifyLog(doc, [forged])).proofs[0]).toMatchObject({ valid: false });
  });

  it('a log rewritten and signed by another key verifies only as that key’s: with the home expected it is invalid', async () => {
    const doc = (await get(`/api/chain/${owner.slug}/export`)).body;
    const home = t.node.nodeId;
    // The genuine export: signed by the home, valid with it expected, invalid with another expected.
    const genuine = await verifyLog(doc, [], undefined, home);
    expect(genuine).toMatchObject({ valid: true, home, expected_home: home });
    expect((await verifyLog(doc, [], undefined, `12D3KooW${'x'.repeat(44)}`)).valid).toBe(false);
    // Row 4 dropped, the rest renumbered and chained again, checkpoints signed by a key of the forger's own.
    const forger = await generateKeyPair('Ed25519');
    const forgerId = peerIdFromPrivateKey(forger as never).toString();
    const forged = structuredClone(doc);
    forged.rows.splice(3, 1);
    forged.rows.forEach((r: AuditRow, i: number) => {
      r.seq = i + 1;
      r.prev_hash = i === 0 ? doc.rows[0].prev_hash : forged.rows[i - 1].hash;
      r.hash = rowHash(r);
    });
    const tree = new MemoryTree();
    for (const r of forged.rows) tree.push(leafHash(rowText(r)));
    const cp = { ...doc.checkpoints.at(-1), home: forgerId, tree_size: tree.size, root_hash: (await tree.root()).toString('hex') };
    cp.signature = signText(forger as never, checkpointText(cp));
    forged.home = forgerId;
    forged.checkpoints = [cp];
    // Alone it holds together (anyone can sign a log of their making); the report names its signer.
    expect(await verifyLog(forged)).toMatchObject({ valid: true, home: forgerId, expected_home: null });
    await writeFile(join(dir, 'forged.json'), JSON.stringify(forged));
    const out = await verifyLogFiles(join(dir, 'forged.json'), undefined, home);
    expect(out.code).toBe(1);
    expect(out.report).toMatchObject({ valid: false, home: forgerId, expected_home: home });
  });

  it('a proof with a negative or fractional leaf index is invalid, not a crash', async () => {
    const doc = (await get(`/api/chain/${owner.slug}/export`)).body;
    const proof = (await get(`/api/chain/${owner.slug}/proof/inclusion?seq=5`)).body;
    for (const leaf_index of [-1, 2.5]) expect((await verifyLog(doc, [{ ...proof, leaf_index }])).proofs[0]).toMatchObject({ valid: false, anchored: false });
  });

  it('rows tampered in the store: validate names the first; the tree stops before a new one; an old one breaks the signed root', async () => {
    const rows = t.node.store.sub('chain_rows');
    const read = async (seq: number) => (await t.node.store.get<AuditRow>(rows, `${owner.slug}!${padNum(seq)}`))!;
    const put = (row: AuditRow) => t.node.store.commit([{ type: 'put', sub: rows, key: `${owner.slug}!${padNum(row.seq)}`, value: row }]);
    const signed = (await get(`/api/chain/${owner.slug}/checkpoint`)).body as Checkpoint;
    await append(2);
    const fresh = await read(signed.tree_size + 1);
    await put({ ...fresh, payload_sha256: '0'.repeat(64) });
    const v = (await get(`/api/chain/${owner.slug}/pohc/validate`)).body;
    expect(v).toMatchObject({ valid: false, first_bad: { seq: fresh.seq, reason: 'row hash does not match its contents' } });
    expect((await get(`/api/chain/${owner.slug}/checkpoint`)).body.tree_size).toBe(signed.tree_size);
    await put(fresh);
    const old = await read(10);
    await put({ ...old, payload_sha256: '0'.repeat(64) });
    expect((await get(`/api/chain/${owner.slug}/pohc/validate`)).body.first_bad.seq).toBe(10);
    const report = await verifyLog((await get(`/api/chain/${owner.slug}/export`)).body);
    expect(report).toMatchObject({ valid: false, first_bad: { seq: 10 } });
    await put(old);
    expect((await verifyLog((await get(`/api/chain/${owner.slug}/export`)).body)).valid).toBe(true);
  });
});

describe('forked checkpoints', () => {
  it('two checkpoints of one home, machine and size with different roots are kept as evidence and reported on mesh status', async () => {
    const cp = (await get(`/api/chain/${owner.slug}/checkpoint`)).body as Checkpoint & { format?: string };
    delete cp.format;
    const body = { ...cp, root_hash: 'a'.repeat(64) };
    const fork: Checkpoint = { ...body, signature: signText(t.node.nodeIdentity.privateKey, checkpointText(body)) };
    const handler = t.node.chain.checkpoints.handler();
    // Not from its home, or not signed by it: refused.
    await expect(handler.handle(fork, { type: CHECKPOINT_EVENT, sender: 'someone-else', svcond: 1, body: fork, signature: '' })).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      handler.handle({ ...fork, signature: cp.signature }, { type: CHECKPOINT_EVENT, sender: cp.home, svcond: 1, body: fork, signature: '' }),
    ).rejects.toMatchObject({ status: 401 });
    await handler.handle(fork, { type: CHECKPOINT_EVENT, sender: cp.home, svcond: 1, body: fork, signature: '' });
    const status = (await call(t.url, 'GET', '/api/mesh/status')).body;
    expect(status.chainCheckpointForks).toMatchObject({ count: 1, recent: [{ slug: owner.slug, tree_size: cp.tree_size }] });
    const forks = (await call(t.url, 'GET', '/api/chain/forks')).body;
    expect(forks.evidence[0].checkpoints.map((c: Checkpoint) => c.root_hash).sort()).toEqual([cp.root_hash, fork.root_hash].sort());
    // Offline: an export carrying both is reported as a fork.
    const doc = (await get(`/api/chain/${owner.slug}/export`)).body;
    const report = await verifyLog({ ...doc, checkpoints: [...doc.checkpoints, fork] });
    expect(report.valid).toBe(false);
    expect(report.forks).toEqual([{ home: cp.home, tree_size: cp.tree_size, root_hashes: [cp.root_hash, fork.root_hash].sort() }]);
  });
});
