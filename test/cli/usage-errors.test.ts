// How `svc-node` refuses what it cannot run: a usage error (an unknown flag, a flag's bad value) exits 2 like a bad
// configuration, naming the flag; a listener that cannot open names its own address; help exits 0.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { ROOT, runCliAsync, tempDirs } from '../helpers/cli.js';
import { busyPort } from '../helpers/free-port.js';

const tempDir = tempDirs('svc-usage-');
let held: Awaited<ReturnType<typeof busyPort>>;

beforeAll(async () => {
  held = await busyPort();
});
afterAll(() => held.release());

// The cases share nothing but the held port: each is a few CLI processes, run side by side.
describe.concurrent('svc-node usage errors', () => {
  it('an unknown flag, a bad integer or a value outside a flag’s choices exits 2 naming the flag; --help exits 0', async ({ expect }) => {
    const dataDir = await tempDir();
    const [unknown, port, choice, help] = await Promise.all([
      runCliAsync(['start', '--bogus', '--data-dir', dataDir]),
      runCliAsync(['start', '--port', 'abc', '--data-dir', dataDir]),
      runCliAsync(['start', '--relay-reserve', 'sometimes', '--data-dir', dataDir]),
      runCliAsync(['start', '--help']),
    ]);
    expect([unknown.status, unknown.stderr.trim()]).toEqual([2, "error: unknown option '--bogus'"]);
    expect(port.status).toBe(2);
    expect(port.stderr).toContain("option '--port <port>' argument 'abc' is invalid. expected a non-negative integer");
    expect(choice.status).toBe(2);
    expect(choice.stderr).toContain("'--relay-reserve <when>' argument 'sometimes' is invalid");
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--metrics-port <port>');
  }, 60_000);

  it('the help of every command names only documents the repository has', async ({ expect }) => {
    const top = (await runCliAsync(['--help'])).stdout;
    const commands = [...top.matchAll(/^ {2}([a-z-]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    expect(commands).toContain('contribute');
    // Each command's help and its subcommands', asked side by side (each is a process of its own).
    const helpOf = async (c: string): Promise<string[]> => {
      const own = (await runCliAsync([c, '--help'])).stdout;
      const subs = [...own.matchAll(/^Commands:\n((?: {2}.*\n)+)/gm)].flatMap((m) => [...m[1]!.matchAll(/^ {2}([a-z-]+) /gm)].map((s) => s[1]!));
      const subHelps = await Promise.all(subs.filter((sub) => sub !== 'help').map(async (sub) => (await runCliAsync([c, sub, '--help'])).stdout));
      return [own, ...subHelps];
    };
    const helps = [top, ...(await Promise.all(commands.map(helpOf))).flat()];
    const named = [...new Set(helps.flatMap((h) => [...h.matchAll(/[\w./-]+\.md\b/g)].map((m) => m[0])))];
    for (const doc of named) expect(existsSync(join(ROOT, doc)) || existsSync(join(ROOT, 'docs', doc)), doc).toBe(true);
  }, 120_000);

  it('a metrics port in use exits 2 naming the metrics listener’s address, not the API’s', async ({ expect }) => {
    const r = await runCliAsync(['start', '--port', '0', '--metrics-port', String(held.port), '--data-dir', await tempDir()], { SVC_LOG_LEVEL: 'silent' });
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toBe(
      `svc-node: cannot listen on 127.0.0.1:${held.port}: EADDRINUSE (another process listens there: stop it, or choose another port with --metrics-port; 0 = any free port)`,
    );
  }, 60_000);
});
