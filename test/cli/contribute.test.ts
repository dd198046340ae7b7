// `svc-node contribute status|bond|release|mode` as a user runs it, against a node started with `svc-node start` in
// its own process (runCli waits synchronously, so the node cannot live in this one): human lines, --json, and the
// part-7 code and message with a non-zero exit when the node refuses.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, zkIdentity } from '../helpers/node.js';
import { CLI, ROOT, exitOf, runCli, tempDirs } from '../helpers/cli.js';

const tempDir = tempDirs('svc-contribute-cli-');
const BOND = 2;
let child: ChildProcess;
let url: string;
let key: string;
let tokens: string[];
/** The node's operator token: the bond slot is its operator's (consensus/bond-slot.ts). */
let operatorToken: string;

/** Start `svc-node start` on port 0 and read its URL from the 'listening' log line. */
async function startNode(dataDir: string, configFile: string): Promise<{ child: ChildProcess; url: string }> {
  const c = spawn(process.execPath, [...CLI, 'start', '--port', '0', '--data-dir', dataDir, '--config', configFile, '--log-level', 'info'], {
    cwd: ROOT,
    env: { ...process.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('the node did not start')), 90_000);
    c.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const j = JSON.parse(line) as { msg?: string; url?: string };
          if (j.msg === 'listening' && j.url) {
            clearTimeout(timer);
            resolve({ child: c, url: j.url });
          }
        } catch {
          /* not a log line */
        }
      }
    });
    c.once('exit', (code) => reject(new Error(`the node exited with ${code}`)));
  });
}

beforeAll(async () => {
  const dir = await tempDir();
  const configFile = join(dir, 'config.json');
  await writeFile(configFile, JSON.stringify({ syncWrites: false, solverThreads: 0, sealWorker: false, contribution: { bondEnvelopes: BOND } }));
  ({ child, url } = await startNode(join(dir, 'data'), configFile));
  operatorToken = (await readFile(join(dir, 'data', 'operator-token'), 'utf8')).trim();
  const id = await zkIdentity(url, 'contribute-cli');
  key = id.key;
  tokens = [];
  for (let i = 0; i < BOND + 1; i++) {
    const r = await call(
      url,
      'POST',
      '/api/svc/compute',
      { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} },
      bearer(key),
    );
    expect(r.status, r.text).toBe(200);
    tokens.push(r.body.envelope.token_id as string);
  }
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await exitOf(child);
  }
});

const cli = (...args: string[]) => runCli(['contribute', ...args, '--url', url, '--key', key]);
const bond = (...args: string[]) => cli('bond', ...args, '--operator-token', operatorToken);

describe('svc-node contribute', () => {
  it('status: an idle identity without a bond, in lines and as JSON', () => {
    const r = cli('status');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^mode\s+idle \(since tick \d+\)$/m);
    expect(r.stdout).toMatch(/^bond\s+none$/m);
    expect(r.stdout).toContain(`a bond holds ${BOND} envelopes; committees of 3, quorum 2`);
    const j = cli('status', '--json');
    expect(j.status).toBe(0);
    expect(JSON.parse(j.stdout)).toMatchObject({ bonded: false, bond: null, mode: 'idle', open_challenges: [] });
  }, 120_000);

  it('refusals exit 1 with the part-7 code and message: contributing without a bond, a token id not held', () => {
    const r = cli('mode', 'contributing');
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^svc-node: SVC_NO_BOND \(403\): .+/);
    expect(r.stderr).toMatch(/trace_id: \S+/);
    const j = cli('mode', 'contributing', '--json');
    expect(j.status).toBe(1);
    expect(JSON.parse(j.stdout).error).toMatchObject({ code: 'SVC_NO_BOND' });
    const squat = cli('bond');
    expect(squat.status).toBe(1);
    expect(squat.stderr).toMatch(/^svc-node: SVC_FORBIDDEN \(403\): the bond slot of this node belongs to its operator/);
    const bad = bond('--token-ids', `${tokens[0]!},env_000000000000000000000000`);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/svc-node: SVC_\w+ \(4\d\d\): .*env_000000000000000000000000/);
  }, 120_000);

  it('bond (named ids), mode contributing, status, release: each prints what the node did', () => {
    const b = bond('--token-ids', tokens.slice(0, BOND).join(','));
    expect(b.status, b.stderr).toBe(0);
    expect(b.stdout).toMatch(new RegExp(`^bonded\\s+bond_\\S+ on node \\S+: ${BOND} envelopes since tick \\d+, 30 of 30 days remaining$`, 'm'));
    const bondId = /bonded\s+(\S+)/.exec(b.stdout)![1]!;

    const m = cli('mode', 'contributing');
    expect(m.status, m.stderr).toBe(0);
    expect(m.stdout).toMatch(new RegExp(`^mode\\s+contributing \\(was idle, since tick \\d+\\)\\nbond\\s+${bondId}$`, 'm'));

    const s = JSON.parse(cli('status', '--json').stdout);
    expect(s).toMatchObject({ bonded: true, mode: 'contributing', bond: { bond_id: bondId, token_ids_count: BOND } });
    expect(cli('status').stdout).toContain(`bond       ${bondId} on node`);

    // A second bond is refused (the node holds one).
    const again = bond();
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/SVC_CONFLICT \(409\)/);

    const r = cli('release', '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ bond_id: bondId, mode: 'idle' });
    expect(JSON.parse(cli('status', '--json').stdout)).toMatchObject({ bonded: false, mode: 'idle' });

    // The oldest held envelopes when none are named.
    const oldest = bond('--json');
    expect(oldest.status, oldest.stderr).toBe(0);
    expect(JSON.parse(oldest.stdout).token_ids).toEqual(tokens.slice(0, BOND));
    const rel = cli('release');
    expect(rel.status).toBe(0);
    expect(rel.stdout).toMatch(/^released\s+bond_\S+ at tick \d+\nmode\s+idle$/m);
  }, 120_000);

  it('usage errors: an unknown mode, no key, an unreachable node', () => {
    const m = cli('mode', 'sleeping');
    expect(m.status).not.toBe(0);
    expect(m.stderr).toContain('idle, contributing, experimenting');
    const nokey = runCli(['contribute', 'status', '--url', url], {}, ['SVC_KEY']);
    expect(nokey.status).toBe(2);
    expect(nokey.stderr).toContain('no key');
    const viaEnv = runCli(['contribute', 'status', '--url', url, '--json'], { SVC_KEY: key });
    expect(viaEnv.status).toBe(0);
    expect(JSON.parse(viaEnv.stdout).mode).toBe('idle');
    const gone = runCli(['contribute', 'status', '--url', 'http://127.0.0.1:9', '--key', key]);
    expect(gone.status).toBe(2);
    expect(gone.stderr).toContain('cannot reach http://127.0.0.1:9/api/contribute/status');
  }, 120_000);
});
