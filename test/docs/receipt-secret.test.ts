// One receipt secret, one encoding (hex) on every path: a standalone data dir's receipt-secret file, a cluster's data
// root, SVC_RECEIPT_SECRET and `svc-node verify --secret`. The same text names the same key wherever it is put.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { keyFingerprint, readReceiptSecretFile } from '../../src/config/receipt-secret.js';
import { deriveKey } from '../../src/kernel/receipt.js';
import { call, startTestNode, zkIdentity, bearer } from '../helpers/node.js';
import { CLI, ROOT, exitOf, runCliAsync, tempDirs } from '../helpers/cli.js';

const tempDir = tempDirs('svc-secret-');

/**
 * The CLI with a clean environment for the secret (no SVC_RECEIPT_SECRET / SVC_DATA_DIR from the caller), run without
 * blocking this process: the cases run side by side.
 */
const run = (args: string[], env: Record<string, string> = {}) => runCliAsync(args, env, ['SVC_RECEIPT_SECRET', 'SVC_DATA_DIR']);

/** svcProof recomputed from first principles (docs/protocol.md): key = HMAC(secret bytes, "svc-key:RECEIPT"). */
function proofWith(secret: Buffer, body: Record<string, any>): string {
  const key = createHmac('sha256', secret).update('svc-key:RECEIPT').digest();
  const { svcProof: _p, ...rest } = body;
  const { svcProof: _c, ...cko } = rest.cko;
  return createHmac('sha256', key)
    .update(canonicalize({ ...rest, cko })!, 'utf8')
    .digest('hex');
}

const REQUEST = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

async function computeOn(url: string, seed: string): Promise<{ body: Record<string, any>; text: string }> {
  const id = await zkIdentity(url, seed);
  const r = await call(url, 'POST', '/api/svc/compute', REQUEST, bearer(id.key));
  expect(r.status).toBe(200);
  return { body: r.body, text: r.text };
}

// The cases share nothing (each its own data dirs, nodes and processes): they run side by side.
describe.concurrent('the receipt secret is hex on every path', () => {
  it('a standalone data dir written before keeps its key; its file copied into SVC_RECEIPT_SECRET names the same key', async ({ expect }) => {
    // A data dir as a node of any earlier version left it: 32 bytes as 64 hex digits.
    const dir = await tempDir();
    const hex = '00112233445566778899aabbccddeeff0123456789abcdeffedcba9876543210';
    await writeFile(join(dir, 'receipt-secret'), hex, { mode: 0o600 });
    const standalone = await startTestNode({}, {}, dir);
    let first: { body: Record<string, any>; text: string };
    try {
      first = await computeOn(standalone.url, 'standalone');
    } finally {
      await standalone.stop();
    }
    expect(first.body.svcProof).toBe(proofWith(Buffer.from(hex, 'hex'), first.body));

    // The file's text as the env var, on another data dir: the same key (before, its UTF-8 was the key).
    const text = (await readFile(join(dir, 'receipt-secret'), 'utf8')).trim();
    const other = await startTestNode({ receiptSecret: text });
    let second: { body: Record<string, any>; text: string };
    const sealer = other.node.nodeId;
    try {
      second = await computeOn(other.url, 'env');
      // The env-keyed node's verifier holds the standalone node's proof and tick receipt (the same key); only the
      // sealer, a node it never heard, is unknown to it.
      const v = await call(other.url, 'POST', '/api/svc/verify', first.body, bearer((await zkIdentity(other.url, 'env-verify')).key));
      expect(v.body).toMatchObject({ valid: false, proof_valid: true, receipt_valid: true, seal_signature_valid: true, reason: 'sealer_unknown' });
    } finally {
      await other.destroy();
    }
    expect(second.body.svcProof).toBe(proofWith(Buffer.from(hex, 'hex'), second.body));
    // Offline (each CLI run is a process: a few, under load they take seconds each).
    const file = join(dir, 'result.json');
    await writeFile(file, second.text);
    expect(JSON.parse((await run(['verify', file, '--data-dir', dir, '--node', sealer])).stdout).valid).toBe(true);
    expect(JSON.parse((await run(['verify', file, '--secret', text, '--node', sealer])).stdout).valid).toBe(true);
    // SVC_RECEIPT_SECRET: upper-case hex and a trailing newline are the same bytes.
    expect(JSON.parse((await run(['verify', file, '--node', sealer], { SVC_RECEIPT_SECRET: `${text.toUpperCase()}\n` })).stdout).valid).toBe(true);
  }, 180_000);

  it('keys and verify read a config file as start does: its dataDir and receiptSecret', async ({ expect }) => {
    const dir = await tempDir();
    const hex = 'fedcba98765432100123456789abcdef00112233445566778899aabbccddeeff';
    const node = await startTestNode({ receiptSecret: hex }, {}, dir);
    let result: { body: Record<string, any>; text: string };
    try {
      result = await computeOn(node.url, 'config-file');
    } finally {
      await node.stop();
    }
    const config = join(await tempDir(), 'node.json');
    await writeFile(config, JSON.stringify({ dataDir: dir, receiptSecret: hex }));
    const keys = await run(['keys', '--config', config]);
    expect(keys.status, keys.stderr).toBe(0);
    expect(JSON.parse(keys.stdout)).toMatchObject({
      nodeId: result.body.node,
      dataDir: dir,
      receiptKeyFingerprint: keyFingerprint(deriveKey(Buffer.from(hex, 'hex'), 'RECEIPT')),
    });
    // Without the file, the data dir alone holds no secret (the node took it from its configuration).
    expect(JSON.parse((await run(['keys', '--data-dir', dir])).stdout).receiptKeyFingerprint).toBeNull();
    const file = join(dir, 'result.json');
    await writeFile(file, result.text);
    const v = await run(['verify', file, '--config', config]);
    expect(v.status, v.stderr).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ valid: true, result_id: result.body.result_id });
    // A config file that is not JSON: exit 2 naming it.
    await writeFile(config, 'dataDir=/tmp');
    const bad = await run(['keys', '--config', config]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('is not valid JSON');
  }, 180_000);

  it('text that is not hex is refused with a reason (exit 2), never taken as another key', async ({ expect }) => {
    for (const bad of ['a passphrase that is not hex', 'abcdef0123456789' /* 8 bytes: too short */, '0'.repeat(63)]) {
      expect(() => loadConfig({ env: { SVC_RECEIPT_SECRET: bad } }), bad).toThrow(/receiptSecret: must be hex of at least 16 bytes/);
    }
    expect(loadConfig({ env: { SVC_RECEIPT_SECRET: ` ${'AB'.repeat(16)}\n` } }).receiptSecret).toBe('AB'.repeat(16));
    const dir = await tempDir();
    await writeFile(join(dir, 'receipt-secret'), 'a passphrase in the file\n');
    await expect(readReceiptSecretFile(dir)).rejects.toThrow(/receipt-secret must be hex/);
    // As a user meets it: one line and exit 2.
    const start = await run(['start', '--port', '0', '--data-dir', await tempDir()], { SVC_RECEIPT_SECRET: 'a passphrase that is not hex' });
    expect(start.status).toBe(2);
    expect(start.stderr.trim().split('\n')).toHaveLength(1);
    expect(start.stderr).toMatch(/receiptSecret: must be hex of at least 16 bytes/);
    await writeFile(join(dir, 'r.json'), '{"svcProof":"00"}');
    const verify = await run(['verify', join(dir, 'r.json'), '--secret', 'not hex at all, sorry']);
    expect(verify.status).toBe(2);
    expect(verify.stderr).toMatch(/--secret must be hex/);
  }, 180_000);

  it('svc-node cluster keys its nodes with the data root file: verify --data-dir <data root> says valid', async ({ expect }) => {
    const root = await tempDir();
    const child = spawn(
      process.execPath,
      [...CLI, 'cluster', '--nodes', '1', '--base-port', '0', '--data-root', root, '--mesh-secret', 'secret-test-mesh-0123456789'],
      {
        cwd: ROOT,
        env: { ...process.env, SVC_RECEIPT_SECRET: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let result: { body: Record<string, any>; text: string };
    try {
      const line = await new Promise<Record<string, any>>((resolve, reject) => {
        let buf = '';
        const timer = setTimeout(() => reject(new Error('the cluster did not start')), 120_000);
        child.stdout!.on('data', (d: Buffer) => {
          buf += d.toString();
          const nl = buf.indexOf('\n');
          if (nl >= 0) {
            clearTimeout(timer);
            resolve(JSON.parse(buf.slice(0, nl)));
          }
        });
        child.once('exit', (code) => reject(new Error(`cluster exited with ${code}`)));
      });
      result = await computeOn(line.url, 'cluster');
    } finally {
      child.kill('SIGINT');
      await exitOf(child);
    }
    const text = (await readFile(join(root, 'receipt-secret'), 'utf8')).trim();
    expect(text).toMatch(/^[0-9a-f]{64}$/);
    expect(result.body.svcProof).toBe(proofWith(Buffer.from(text, 'hex'), result.body));
    const file = join(root, 'result.json');
    await writeFile(file, result.text);
    const v = await run(['verify', file, '--data-dir', root]);
    expect(v.status).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ valid: true, result_id: result.body.result_id });
  }, 180_000);
});
