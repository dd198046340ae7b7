// The data dir as the CLI treats it: the client commands that read one refuse a missing one (exit 2, nothing created);
// `start` makes it on first run and, whatever the log level, says where it listens on stdout.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, startTestNode } from '../helpers/node.js';
import { CLI, ROOT, exitOf, runCli, tempDirs } from '../helpers/cli.js';

const tempDir = tempDirs('svc-datadir-');

describe('client commands on a missing data dir', () => {
  it('keys, verify and grant exit 2 with the reason, and create nothing', async () => {
    const missing = join(await tempDir(), 'typo');
    const file = join(await tempDir(), 'result.json');
    const runs = {
      keys: runCli(['keys', '--data-dir', missing]),
      verify: runCli(['verify', file, '--data-dir', missing]),
      grant: runCli(['grant', '--url', 'http://127.0.0.1:9', '--zid', `zid_${'0'.repeat(32)}`, '--credits', '1', '--data-dir', missing], {}, [
        'SVC_OPERATOR_TOKEN',
      ]),
    };
    for (const [name, r] of Object.entries(runs)) {
      expect(r.status, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr.trim(), name).toBe(`svc-node: data dir ${missing} does not exist (svc-node start creates one; give the data dir of a node)`);
      expect(r.stdout, name).toBe('');
    }
    expect(existsSync(missing)).toBe(false);
  }, 60_000);

  it('keys on a directory that is no node data dir (no store in it) exits 2 and writes no key or token there', async () => {
    const elsewhere = await tempDir();
    const r = runCli(['keys', '--data-dir', elsewhere]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr.trim()).toBe(`svc-node: ${elsewhere} holds no store (db/): not a node's data dir (svc-node start makes one; give the data dir of a node)`);
    expect(readdirSync(elsewhere)).toEqual([]);
  }, 60_000);
});

describe('svc-node start at log level warn', () => {
  it('creates its data dir and prints the listening line with the port it was given', async () => {
    const dataDir = join(await tempDir(), 'first', 'data');
    const child = spawn(process.execPath, [...CLI, 'start', '--port', '0', '--data-dir', dataDir], {
      cwd: ROOT,
      env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<Record<string, any>>((resolve, reject) => {
        let buf = '';
        const timer = setTimeout(() => reject(new Error(`no listening line: ${buf}`)), 60_000);
        child.stdout!.on('data', (d: Buffer) => {
          buf += d.toString();
          for (const text of buf.split('\n').slice(0, -1)) {
            const rec = JSON.parse(text) as Record<string, any>;
            if (rec.msg !== 'listening') continue;
            clearTimeout(timer);
            resolve(rec);
          }
        });
        child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
      });
      expect(line).toMatchObject({ level: 30, svc: 'svc-node', dataDir, url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
      expect(Number(new URL(line.url).port)).toBeGreaterThan(0);
      const health = await call(line.url, 'GET', '/api/health');
      expect(health.status).toBe(200);
      expect(health.body.node).toBe(line.node);
      expect(existsSync(join(dataDir, 'db'))).toBe(true);
      // Readable by this user only: the store holds secrets' hashes and webhook headers.
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exitOf(child)).toBe(0);
  }, 90_000);

  it('makes a data dir made earlier with the umask (0755) private at start', async () => {
    const dataDir = join(await tempDir(), 'shared');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const t = await startTestNode({ solverThreads: 0, sealWorker: false }, {}, dataDir);
    try {
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    } finally {
      await t.destroy();
    }
  }, 60_000);
});
