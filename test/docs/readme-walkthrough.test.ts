// README's walk-throughs ("Walk-through with curl" and the state-machine one) are run as written (bash, curl, jq,
// node -p, the built CLI) against a real node, from a directory laid out as the README assumes (./data is the node's
// data dir, ./dist the build): a step that drifts from the API (a renamed route, field or flag) fails here.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityKeyOf, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

/** The first block fenced with `fence` (e.g. ```sh) after `heading` in a document. */
async function docBlock(file: string, heading: string, fence = '```sh'): Promise<string> {
  const text = await readFile(join(ROOT, file), 'utf8');
  const from = text.indexOf(`\n${heading}\n`);
  const open = text.indexOf(`${fence}\n`, from);
  if (from < 0 || open < 0) throw new Error(`${file}: no ${fence} block after "${heading}"`);
  return text.slice(open + fence.length + 1, text.indexOf('\n```', open));
}

describe('README walk-through with curl', () => {
  let t: TestNode;
  let dir: string;
  beforeAll(async () => {
    t = await startTestNode({ webhooks: { allowLoopback: true } });
    dir = await mkdtemp(join(tmpdir(), 'svc-readme-'));
    await symlink(t.dataDir, join(dir, 'data'));
    await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  });
  afterAll(async () => {
    await t.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs as written, every step answered without an error', { timeout: 120_000 }, async () => {
    const script = (await docBlock('README.md', '## Walk-through with curl')).replace(/^URL=http:\/\/127\.0\.0\.1:8787$/m, `URL=${t.url}`);
    expect(script).toContain(`URL=${t.url}`);
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 110_000 });

    expect(stdout).not.toContain('"error":');
    const reg = JSON.parse(await readFile(join(dir, 'reg.json'), 'utf8'));
    expect(reg.admin_key).toMatch(/^zsm_/);
    // 2. ½·2·3² = 9 J, with its tick and proof.
    expect(stdout).toMatch(/\[\s*9,\s*'J',\s*\d+,\s*'[0-9a-f]{64}'\s*\]/);
    // 3. heat checked against its Fourier series; 4. valid online and offline.
    expect(stdout).toContain('"name":"fourier_series_centre","passed":true');
    expect(stdout).toContain('"valid":true,"proof_valid":true,"receipt_valid":true');
    // Offline: the data dir names the node that sealed it, so the sealer is known and the answer is the API's.
    expect(stdout).toMatch(/\{"valid":true,[^\n]*"sealer_known":true,[^\n]*"result_id":"res_[^"]+"[^\n]*"value":9,"unit":"J"\}/);
    // 5. envelopes, the audit chain, a folder move.
    expect(stdout).toContain(`"zid":"${reg.zid}","total":2`);
    expect(stdout).toMatch(/"slug":"m-[0-9a-f]+","valid":true,"rows":2/);
    expect(stdout).toContain('"folder":"vault","moved":1');
    // 6. not claimable yet (128 free credits, threshold 10), asked over HTTP and by the CLI.
    expect(stdout.match(/"claimable":false,"reason":"balance_not_low"/g)).toHaveLength(2);
    // 7. two grants of 500 (curl, then the CLI), the cost and tier tables.
    expect(stdout).toContain('"credits":500,"tier":"standard","balance":{"free":117,"paid":500,"total":617}');
    expect(stdout).toContain('"credits":500,"tier":"standard","balance":{"free":117,"paid":1000,"total":1117}');
    expect(stdout).toContain('{"costs":[');
    expect(stdout).toContain('{"tiers":[');
    // 8. after the free credits are spent, two paid envelopes delivered, then read back.
    const xfer = JSON.parse(await readFile(join(dir, 'xfer.json'), 'utf8'));
    expect(xfer).toMatchObject({ state: 'delivered', count: 2 });
    expect(xfer.token_ids).toHaveLength(2);
    expect(stdout.split(`"transfer_id":"${xfer.transfer_id}","state":"delivered"`)).toHaveLength(3);
    // 9. the machine key refused on an identity-wide route; the keys listed (no secret), one revoked by the CLI.
    expect(stdout).toContain('zsm_ key on an identity-wide route: 403');
    expect(stdout).toMatch(new RegExp(`"zid":"${reg.zid}","total":3,"keys":\\[`));
    expect(stdout).toMatch(/\{"key_id":"sk_test_[0-9a-f]{8}","kind":"sk_test","scope":"identity","slug":null,"plan":"test",[^}]*"revoked_at":"[^"]+"\}/);
    expect(stdout).toMatch(/^sk_test_[0-9a-f]{8} {2}sk_test {2}identity {2}created \S+ {2}last used \S+ {2}revoked \S+$/m);
    expect(stdout).toMatch(/^zsm_[0-9a-f]{8} {2}zsm {2}machine m-[0-9a-f]+ {2}created \S+ {2}last used \S+ {2}active$/m);
    // Step 1 shows the admin key once (register-v3's answer); the listing after it never does.
    expect(stdout.slice(stdout.indexOf('"total":3,"keys"'))).not.toContain(reg.admin_key);
  });

  it('the state-machine walk-through (escrow of docs/chain.md) runs as written', { timeout: 120_000 }, async () => {
    await writeFile(join(dir, 'escrow.json'), await docBlock('docs/chain.md', '### Example: an escrow', '```json contract:escrow'));
    const host = t.url.replace(/^http:\/\//, '');
    const script = (await docBlock('README.md', '## State machines: a contract walk-through')).replaceAll('localhost:8787', host);
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 110_000 });
    const lines = stdout.replace(/\s+/g, ' ');
    expect(lines).toContain('"slug": "escrow-book"');
    expect(lines).toContain('"illegal transition: event deposit in state awaiting_deposit: guard failed"');
    // The buyer's deposit: the contract holds the buyer's zid, the caller the answer names.
    const funded = /"state": "funded", "vars": \{([^}]*)\}, "caller": "(zid_[0-9a-f]{32})", "tally_charge": 5 \}/.exec(lines);
    expect(funded, lines).not.toBeNull();
    expect(funded![1]).toContain(`"buyer": "${funded![2]}"`);
    // The seller's confirm in the buyer's name is refused; the buyer's releases.
    expect(lines).toContain('"shipped" "illegal transition: event confirm in state shipped: guard failed" "released"');
    expect(lines).toContain('"zid_0123456789abcdef0123456789abcdef": "viewer"');
    expect(lines).toMatch(/"tree_size": \d+, "root_hash": "[0-9a-f]{64}", "signature": "[^"]+"/);
    // seq 2 is leaf 1 of the 5 rows (deploy, offer, deposit, ship, confirm)
    expect(lines).toMatch(/"leaf_index": 1, "tree_size": 5, "audit_path": \[ "[0-9a-f]{64}", "[0-9a-f]{64}", "[0-9a-f]{64}" \]/);
    expect(stdout).toMatch(
      /\{"valid":true,"slug":"escrow-book","home":"12D3KooW\w+","expected_home":"12D3KooW\w+","rows":5,"sound_rows":5,"first_bad":null,.*"proofs":\[\{"kind":"inclusion","valid":true/,
    );
  });

  it('the MCP block runs as written (U and KEY of the walk-through above): svc_auto routes its query and seals', { timeout: 60_000 }, async () => {
    const script = `U=${t.url}\nKEY=$(node -p 'require("./reg.json").admin_key')\n` + (await docBlock('README.md', '## Use from an AI agent (MCP)'));
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 50_000 });
    const answer = JSON.parse(stdout);
    expect(answer.result.isError, stdout).toBeFalsy();
    expect(answer.result.structuredContent.solver).toBe('fea');
    expect(answer.result.structuredContent.result.svcProof).toMatch(/^[0-9a-f]{64}$/);
  });

  it("the chat block's question is answered by the offline assistant with a sealed result", { timeout: 60_000 }, async () => {
    const block = await docBlock('README.md', '## Chat');
    const question = /"content":"([^"]+)"/.exec(block)![1]!;
    // Chat is an identity-wide action: the walk-through's identity key (the same equation, logged in again).
    const key = await identityKeyOf(t.url, createHash('sha256').update('my private equation: x^2 + 7').digest('hex'));
    const r = await fetch(`${t.url}/api/llm/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: question }], tools: true }),
    });
    const text = await r.text();
    expect(r.status, text).toBe(200);
    const answer = JSON.parse(text);
    expect(answer.result?.svcProof, text).toMatch(/^[0-9a-f]{64}$/);
    // The tube's length in the question is the run's (README: "a tube of 60 cm" → length_m = 0.6).
    expect(answer.reply.content).toContain('length_m = 0.6 m (from "60 cm")');
  });

  it('the webhooks block runs as written (URL and an identity KEY)', { timeout: 60_000 }, async () => {
    const { key } = await zkIdentity(t.url, 'readme-webhooks');
    // The block's receiver is a local one (the test stays on 127.0.0.1): the node allows loopback webhooks here.
    const receiver = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/svc`;
    const block = await docBlock('README.md', '## Webhooks');
    expect(block).toContain('https://hooks.example.com/svc');
    const script = `URL=${t.url}\nKEY=${key}\n` + block.replaceAll('https://hooks.example.com/svc', hookUrl);
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 50_000 }).finally(() => receiver.close());
    expect(stdout).not.toContain('"error":');
    const hook = JSON.parse(await readFile(join(dir, 'webhook.json'), 'utf8'));
    expect(hook).toMatchObject({ url: hookUrl, events: ['computation.complete', 'batch.complete'], status: 'enabled' });
    expect(hook.secret).toMatch(/^whsec_/);
    // Listed, enabled again, a test delivery owed, its deliveries read, then deleted: every step named the webhook.
    expect(stdout).toContain(`{"webhooks":[{"id":"${hook.id}"`);
    expect(stdout).toMatch(/"delivery_id":"[^"]+","test_id":"test_[0-9a-f]+"/);
    expect(stdout).toContain('{"deliveries":[');
    expect(stdout).toContain(`{"id":"${hook.id}","deleted":true}`);
  });

  it('the streams block runs as written (with URL and KEY of the walk-through above)', { timeout: 60_000 }, async () => {
    const script = `URL=${t.url}\nKEY=$(node -p 'require("./reg.json").admin_key')\n` + (await docBlock('README.md', '## Streams'));
    const { stdout } = await run('bash', ['-c', script], { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 50_000 });
    expect(stdout).not.toContain('"error":');
    const channel = JSON.parse(await readFile(join(dir, 'channel.json'), 'utf8'));
    expect(channel.key).toMatch(/^stk_/);
    // The tick's headers, the channel after one tick, the rendered template, the close.
    for (const h of ['x-svc-sealed', 'x-svc-proof', 'x-svc-token', 'x-svc-svcond', 'x-svc-verify']) expect(stdout.toLowerCase()).toContain(`${h}:`);
    expect(stdout).toMatch(new RegExp(`"id":"${channel.id}"[^\\n]*"tick_count":1`));
    expect(stdout).toMatch(/z=-?\d+(\.\d+)?(e[-+]\d+)? at tick 1/);
    expect(stdout).toMatch(/"status":"closed"/);
  });
});
