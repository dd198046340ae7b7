// `svc-node start` on what an operator can get wrong before the node listens: each refusal is one line that says what
// is wrong and what to do, with exit 2 — never a stack trace, and never a listener blamed for the data dir.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, runCliAsync, tempDirs } from '../helpers/cli.js';
import { busyPort } from '../helpers/free-port.js';
import { startTestNode } from '../helpers/node.js';

const tempDir = tempDirs('svc-start-failure-');
let held: Awaited<ReturnType<typeof busyPort>>;

beforeAll(async () => {
  held = await busyPort();
});
afterAll(() => held.release());

/** One line on stderr, prefixed as the CLI's refusals are, and no stack frame. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^svc-node: /);
  return lines[0]!;
}

describe.concurrent('svc-node start refuses a data dir it cannot use', () => {
  it('a file where the data dir should be: exit 2 naming it and what to give instead', async () => {
    const file = join(await tempDir(), 'data');
    writeFileSync(file, 'not a directory');
    const r = await runCliAsync(['start', '--port', '0', '--data-dir', file], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    const line = oneLine(r.stderr);
    expect(line).toContain(`data dir ${file} cannot be used`);
    expect(line).toContain('EEXIST');
    expect(line).toContain('give --data-dir or SVC_DATA_DIR a directory');
  }, 60_000);

  it('a data dir below a file: exit 2 with ENOTDIR', async () => {
    const file = join(await tempDir(), 'afile');
    writeFileSync(file, '');
    const dir = join(file, 'data');
    const r = await runCliAsync(['start', '--port', '0', '--data-dir', dir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    const line = oneLine(r.stderr);
    expect(line).toContain(`data dir ${dir} cannot be used`);
    expect(line).toContain('ENOTDIR');
  }, 60_000);

  it('a data dir this user may not create is a data dir problem, not "cannot listen"', async () => {
    const parent = await tempDir();
    const dir = join(parent, 'data');
    // The parent is closed to the user the node runs as: another user when the tests run as root (root writes anywhere).
    const asRoot = process.getuid?.() === 0;
    if (!asRoot) chmodSync(parent, 0o500);
    const r = spawnSync(process.execPath, [...CLI, 'start', '--port', '0', '--data-dir', dir], {
      cwd: ROOT,
      env: { ...process.env, SVC_LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 60_000,
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    if (!asRoot) chmodSync(parent, 0o700);
    expect(r.status, r.stderr).toBe(2);
    const line = oneLine(r.stderr);
    expect(line).not.toContain('cannot listen');
    expect(line).toContain(`data dir ${dir} cannot be used`);
    expect(line).toContain('EACCES');
    expect(line).toContain('this user may not write there');
    expect(existsSync(dir)).toBe(false);
  }, 60_000);

  // procfs answers mkdir with ENOENT though /proc stands; Node's recursive mkdir retries that forever (no output, a core spinning).
  it.skipIf(!existsSync('/proc'))(
    'a data dir under /proc: exit 2 at once, naming mkdir and what to give instead',
    async () => {
      const started = Date.now();
      const r = await runCliAsync(['start', '--port', '0', '--data-dir', '/proc/svc-node-data/x'], { SVC_LOG_LEVEL: 'silent' });
      expect(r.status, r.stderr).toBe(2);
      expect(oneLine(r.stderr)).toBe(
        'svc-node: data dir /proc/svc-node-data/x cannot be used: mkdir /proc/svc-node-data: ENOENT (no directory can be made there, e.g. under /proc: give --data-dir or SVC_DATA_DIR a directory on a disk)',
      );
      expect(Date.now() - started).toBeLessThan(30_000);
    },
    60_000,
  );
});

describe.concurrent('svc-node start refuses a listen address it cannot use', () => {
  it('a port in use: exit 2 naming the address, the flag to change and that 0 takes any free port', async () => {
    const r = await runCliAsync(['start', '--port', String(held.port), '--data-dir', await tempDir()], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      `svc-node: cannot listen on 127.0.0.1:${held.port}: EADDRINUSE (another process listens there: stop it, or choose another port with --port or SVC_PORT; 0 = any free port)`,
    );
  }, 60_000);

  it('a host name that does not resolve: exit 2 naming it and --host, no stack trace', async () => {
    const r = await runCliAsync(['start', '--port', '0', '--host', 'no-such-host.invalid', '--data-dir', await tempDir()], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    const line = oneLine(r.stderr);
    expect(line).toMatch(/^svc-node: cannot listen on no-such-host\.invalid: the name does not resolve \((ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME)\)/);
    expect(line).toContain('give --host or SVC_HOST an address of this machine');
  }, 60_000);
});

/** The entries of a directory, sorted. */
const entries = (dir: string) => readdirSync(dir).sort();

describe.concurrent('a start that fails removes what it made in the data dir, and only that', () => {
  const portInUse = () =>
    `svc-node: cannot listen on 127.0.0.1:${held.port}: EADDRINUSE (another process listens there: stop it, or choose another port with --port or SVC_PORT; 0 = any free port)`;

  it('a new data dir (and the parents it made) is removed; the parent that stood before stays', async () => {
    const parent = await tempDir();
    const dataDir = join(parent, 'new', 'data');
    const r = await runCliAsync(['start', '--port', String(held.port), '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(portInUse());
    expect(entries(parent)).toEqual([]);
  }, 60_000);

  it('an empty data dir that stood before stays, empty and with its mode', async () => {
    const dataDir = join(await tempDir(), 'data');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const r = await runCliAsync(['start', '--port', String(held.port), '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(portInUse());
    expect(entries(dataDir)).toEqual([]);
    expect(statSync(dataDir).mode & 0o777).toBe(0o755);
  }, 60_000);

  it('files that stood in the data dir before stay as they were; the key, secrets and store it made go', async () => {
    const dataDir = await tempDir();
    writeFileSync(join(dataDir, 'notes.txt'), 'the operator’s own');
    mkdirSync(join(dataDir, 'keep'));
    const r = await runCliAsync(['start', '--port', String(held.port), '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(portInUse());
    expect(entries(dataDir)).toEqual(['keep', 'notes.txt']);
    expect(readFileSync(join(dataDir, 'notes.txt'), 'utf8')).toBe('the operator’s own');
  }, 60_000);

  it('a failure after the store and the HTTP port opened (the libp2p port taken) removes them too', async () => {
    const parent = await tempDir();
    const dataDir = join(parent, 'data');
    const r = await runCliAsync(
      ['start', '--port', '0', '--p2p-port', String(held.port), '--mesh-secret', 'a-mesh-secret-of-the-test', '--data-dir', dataDir],
      { SVC_LOG_LEVEL: 'silent' },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(
      `svc-node: cannot listen for libp2p on 127.0.0.1:${held.port}: EADDRINUSE (another process listens there: stop it, or choose another port with --p2p-port or SVC_P2P_PORT; 0 = any free port)`,
    );
    expect(entries(parent)).toEqual([]);
  }, 60_000);

  it('the data dir of a node that started before keeps everything, byte for byte', async () => {
    const dataDir = join(await tempDir(), 'data');
    const t = await startTestNode({}, {}, dataDir);
    await t.stop();
    const before = entries(dataDir);
    expect(before).toEqual(expect.arrayContaining(['db', 'node-key', 'operator-token', 'receipt-secret', 'credential-secret']));
    const key = readFileSync(join(dataDir, 'node-key'));
    const r = await runCliAsync(['start', '--port', String(held.port), '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(portInUse());
    expect(entries(dataDir)).toEqual(before);
    expect(readFileSync(join(dataDir, 'node-key')).equals(key)).toBe(true);
  }, 60_000);
});

describe.concurrent('a data dir others use is not made private, and the node does not start there', () => {
  const refused = (dataDir: string, why: string) =>
    `svc-node: data dir ${dataDir} ${why} and is readable by others; a node makes its data dir private (0700): give --data-dir or SVC_DATA_DIR a directory of its own, e.g. ${join(dataDir, 'svc-node')}`;

  it('a shared directory with the sticky bit (as /tmp) keeps its mode and gets nothing', async () => {
    const dataDir = join(await tempDir(), 'shared');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o1777);
    const r = await runCliAsync(['start', '--port', '0', '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(refused(dataDir, 'is shared with other users (mode 1777, like /tmp)'));
    expect(statSync(dataDir).mode & 0o7777).toBe(0o1777);
    expect(entries(dataDir)).toEqual([]);
  }, 60_000);

  // Another user's directory: only root can make one here (chown); as root the start would otherwise chmod it.
  it.skipIf(process.getuid?.() !== 0)(
    "another user's directory keeps its mode and owner",
    async () => {
      const dataDir = join(await tempDir(), 'theirs');
      mkdirSync(dataDir);
      chmodSync(dataDir, 0o755);
      chownSync(dataDir, 65534, 65534);
      const r = await runCliAsync(['start', '--port', '0', '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
      expect(r.status, r.stderr).toBe(2);
      expect(oneLine(r.stderr)).toBe(refused(dataDir, 'belongs to another user'));
      expect(statSync(dataDir)).toMatchObject({ uid: 65534, mode: expect.any(Number) });
      expect(statSync(dataDir).mode & 0o777).toBe(0o755);
      expect(entries(dataDir)).toEqual([]);
    },
    60_000,
  );

  it("a directory readable by others that holds files not a node's keeps its mode and its files", async () => {
    const dataDir = join(await tempDir(), 'project');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    writeFileSync(join(dataDir, 'README'), 'a project of the operator');
    const r = await runCliAsync(['start', '--port', '0', '--data-dir', dataDir], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status, r.stderr).toBe(2);
    expect(oneLine(r.stderr)).toBe(refused(dataDir, "holds files that are not a node's"));
    expect(statSync(dataDir).mode & 0o777).toBe(0o755);
    expect(entries(dataDir)).toEqual(['README']);
  }, 60_000);
});
