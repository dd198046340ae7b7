// Every fenced block of README.md runs or is checked: each is matched to a runner by the heading it sits under (RUNNERS
// below, in the order of the blocks), and the first test fails on a block nobody runs. The blocks of the walk-throughs
// (curl, state machines), Streams, Webhooks and the MCP call run in readme-walkthrough.test.ts; the others run here as
// written, in bash, from directories laid out as the README assumes (./dist the build, ./data the node's data dir),
// against the node Quick start's `npm start` starts and the five-node cluster the bond-to-verdict recipe starts. The
// test fills what the README leaves to the reader: URLs and ports (chosen free on 127.0.0.1), keys, ids. `npm start`
// and `npm run cluster` run as the command their package.json script runs after its build (test/global-setup.ts has
// built dist/). Checked, not run: `npm ci` and `npm test` (this suite), the CLI reference (its commands and flags
// against the built CLI's) and the benchmarks (minutes of both cores; bench:guard builds a release in a git
// worktree). Streaming commands (`curl -N`) are bounded. No block starts Docker (there is no engine where tests run).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPeers } from '../../src/cli/peers.js';
import { loadConfig } from '../../src/config/load.js';
import { toolTable } from '../../src/http/tool-table.js';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { exitOf, ROOT, tempDirs } from '../helpers/cli.js';
import { anthropicAnswer, startFakeProvider, type FakeProvider } from '../helpers/fake-llm.js';
import { bearer, call, zkIdentity } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';
import { freePort } from '../helpers/free-port.js';

const run = promisify(execFile);
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const WALKTHROUGH_TEST = 'test/docs/readme-walkthrough.test.ts';

interface Block {
  heading: string;
  lang: string;
  text: string;
}

/** README's fenced blocks, each with the heading it sits under (an indented fence is dedented). */
function readmeBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let heading = '';
  let open: { indent: number; lang: string; lines: string[] } | null = null;
  for (const line of text.split('\n')) {
    if (open) {
      if (/^\s*```\s*$/.test(line)) {
        blocks.push({ heading, lang: open.lang, text: open.lines.join('\n') });
        open = null;
      } else open.lines.push(line.slice(open.indent));
      continue;
    }
    const fence = /^(\s*)```(\S*)/.exec(line);
    if (fence) open = { indent: fence[1]!.length, lang: fence[2] || 'text', lines: [] };
    else if (/^#{1,6} /.test(line)) heading = line.trim();
  }
  return blocks;
}

type Runner =
  | typeof WALKTHROUGH_TEST
  | 'quick start'
  | 'cluster commands'
  | 'join a mesh'
  | 'claim across nodes'
  | 'contributing node'
  | 'bond to verdict'
  | 'outlives its home'
  | 'autotick'
  | 'mcp config'
  | 'chat credentials'
  | 'reactor, agents, genesis'
  | 'prometheus'
  | 'cli'
  | 'benchmarks';

/** Who runs each block: by heading, one runner per block in the README's order. */
const RUNNERS: Record<string, Runner[]> = {
  '## Quick start': ['quick start'],
  '## Walk-through with curl': [WALKTHROUGH_TEST],
  '## Run a local cluster': ['cluster commands'],
  '### Join a public mesh': ['join a mesh'],
  '### The daily claim across nodes': ['claim across nodes'],
  '## Run a contributing node': ['contributing node'],
  '### From a bond to a verdict, on a local cluster': ['bond to verdict', 'bond to verdict', 'bond to verdict', 'bond to verdict'],
  '### An identity outlives its home': ['outlives its home'],
  '## State machines: a contract walk-through': [WALKTHROUGH_TEST],
  '## Streams': [WALKTHROUGH_TEST],
  '### At any node, and across restarts': ['autotick'],
  '## Webhooks': [WALKTHROUGH_TEST],
  '## Use from an AI agent (MCP)': [WALKTHROUGH_TEST, 'mcp config'],
  '## Chat': ['chat credentials'],
  '## Reactor, agents, genesis and MMIO': ['reactor, agents, genesis', 'reactor, agents, genesis', 'reactor, agents, genesis'],
  '### Genesis with a contract; agents on contracts and the agent rail': ['reactor, agents, genesis', 'reactor, agents, genesis'],
  '## Operating a node: dashboard, metrics, API description': ['prometheus'],
  '## CLI': ['cli'],
  '## Benchmarks': ['benchmarks'],
};

const BLOCKS = readmeBlocks(README);

/** The blocks a runner runs, in the README's order, joined into one script. */
function script(runner: Runner): string {
  const mine = BLOCKS.filter((b) => {
    const runners = RUNNERS[b.heading] ?? [];
    return runners[BLOCKS.filter((o) => o.heading === b.heading).indexOf(b)] === runner;
  });
  if (mine.length === 0) throw new Error(`README.md has no block for ${runner}`);
  return mine.map((b) => b.text).join('\n');
}

/** One command per line, continuation lines joined, comments and blank lines dropped. */
function commands(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l && !l.startsWith('#'));
}

/** What an npm script runs after its build step (test/global-setup.ts has built dist/ already). */
function npmScript(name: string): string {
  const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
  const [build, command] = scripts[name]!.split(' && ');
  expect(build).toBe('npm run build --silent');
  return command!;
}

/** `npm start` / `npm run cluster -- …` as the command their scripts run. */
function withoutNpm(line: string): string {
  return line.replace(/npm run (--silent )?cluster --/, npmScript('cluster')).replace(/npm start/, npmScript('start'));
}

/** Whether nothing listens on a port of 127.0.0.1 now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A base port p for a cluster of `nodes` nodes: p … p + nodes - 1 (HTTP) and p + 100 … (libp2p) all free. Drawn below
 * the ephemeral range (32768 and up on Linux), so an outgoing connection cannot take one of them before a node listens.
 */
let baseDraws = 0;
async function freeBasePort(nodes: number): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const p = 20_000 + ((process.pid * 7919 + baseDraws++ * 257) % 12_000);
    const ports = Array.from({ length: nodes }, (_, i) => [p + i, p + 100 + i]).flat();
    if ((await Promise.all(ports.map(isFree))).every(Boolean)) return p;
  }
  throw new Error(`no free base port for ${nodes} nodes`);
}

/** A script run to its end: its output and exit code (a block's last command may exit non-zero on purpose). */
async function bash(text: string, cwd: string, env: Record<string, string> = {}, timeout = 110_000): Promise<{ stdout: string; code: number }> {
  try {
    const { stdout } = await run('bash', ['-c', text], { cwd, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024, timeout });
    return { stdout, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; code?: unknown; killed?: boolean };
    if (e.killed || typeof e.code !== 'number') throw err;
    return { stdout: e.stdout ?? '', code: e.code };
  }
}

interface CliCommand {
  name: string;
  options: string[];
  commands: CliCommand[];
}

/**
 * The built CLI's commands and their long options, read in one process: commander's parseAsync is replaced by a
 * dump of the program the CLI has just put together, so no command runs.
 */
async function cliCommands(): Promise<CliCommand> {
  const code = `
    import { Command } from 'commander';
    const dump = (c) => ({ name: c.name(), options: c.options.map((o) => o.long).filter(Boolean), commands: c.commands.map(dump) });
    Command.prototype.parseAsync = async function () { process.stdout.write(JSON.stringify(dump(this))); return this; };
    await import(${JSON.stringify(join(ROOT, 'dist/cli/index.js'))});`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT });
  return JSON.parse(stdout) as CliCommand;
}

/** A long-running command of a block, in a process group of its own (stopped by its id in `stopGroup`). */
interface Background {
  child: ChildProcess;
  lines: string[];
  /** What it said on stderr (the last 4 KiB), for a failure's message. */
  stderr(): string;
  /** Resolves with the first stdout line that matches. */
  line(match: (l: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
}

function background(command: string, cwd: string, env: Record<string, string> = {}): Background {
  const child = spawn('bash', ['-c', command], { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4096)));
  return {
    child,
    lines,
    stderr: () => err,
    line: (match, what, timeoutMs = 90_000) =>
      waitUntil(
        () => {
          if (child.exitCode !== null) throw new Error(`${what}: the command exited with ${child.exitCode}: ${command}\n${err}`);
          return lines.find(match);
        },
        what,
        timeoutMs,
        100,
      ),
  };
}

/** Ctrl-C to a background command (its process group, as a terminal sends it): its exit code. */
async function stopGroup(b: Background): Promise<number | null> {
  if (b.child.exitCode === null) process.kill(-b.child.pid!, 'SIGINT');
  return exitOf(b.child);
}

const json = (line: string) => JSON.parse(line) as Record<string, any>;

const tempDir = tempDirs('svc-readme-blocks-');

/** A directory as the README assumes it: ./dist the build, ./data a node's data dir (when given). */
async function workDir(dataDir?: string): Promise<string> {
  const dir = await tempDir();
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  if (dataDir) await symlink(dataDir, join(dir, 'data'));
  return dir;
}

describe('README: every block is run or checked', () => {
  it('each block has a runner, and the blocks run elsewhere are read there by their heading', () => {
    const byHeading = new Map<string, string[]>();
    for (const b of BLOCKS) byHeading.set(b.heading, [...(byHeading.get(b.heading) ?? []), b.lang]);
    const counts = Object.fromEntries([...byHeading].map(([h, langs]) => [h, langs.length]));
    expect(counts, 'a README block without a runner: add it to RUNNERS and run it').toEqual(
      Object.fromEntries(Object.entries(RUNNERS).map(([h, r]) => [h, r.length])),
    );
    const walkthrough = readFileSync(join(ROOT, WALKTHROUGH_TEST), 'utf8');
    for (const [heading, runners] of Object.entries(RUNNERS)) {
      if (runners.includes(WALKTHROUGH_TEST)) expect(walkthrough, heading).toContain(`docBlock('README.md', '${heading}')`);
    }
  });
});

describe('README blocks, run', () => {
  /** The node `npm start` starts (Quick start), which the single-node blocks share: in `dir`, its data in ./data. */
  let start: Background;
  let t: { url: string; metricsUrl: string };
  let dir: string;
  let key: string;
  let zid: string;
  /** The bond-to-verdict recipe's cluster, started by its first line while the single-node blocks run. */
  let cluster: Background;
  let clusterDir: string;
  let clusterReady: Promise<Record<string, any>[]>;

  beforeAll(async () => {
    clusterDir = await workDir();
    const [clusterStart, ...rest] = script('bond to verdict').split('\n');
    expect(clusterStart).toMatch(/ > nodes\.jsonl &$/);
    expect(rest.join('\n')).toContain('until [ "$(wc -l < nodes.jsonl)" -ge 5 ]');
    cluster = background(withoutNpm(clusterStart!.replace(/ &$/, '')), clusterDir);
    clusterReady = waitUntil(
      async () => {
        if (cluster.child.exitCode !== null) throw new Error(`the cluster exited with ${cluster.child.exitCode}: ${cluster.stderr()}`);
        const text = await readFile(join(clusterDir, 'nodes.jsonl'), 'utf8').catch(() => '');
        const lines = text.split('\n').filter(Boolean);
        return lines.length >= 5 && lines.map(json);
      },
      'the five nodes of the bond-to-verdict cluster',
      150_000,
      250,
    );
    clusterReady.catch(() => undefined);

    dir = await workDir();
    // SVC_PORT: the README's 8787 may be taken where tests run. Besides the defaults: bonds of 2 envelopes (as the
    // README suggests for a local try), a provider credential on 127.0.0.1 allowed (Chat), metrics on (Prometheus).
    start = background(withoutNpm('npm start'), dir, {
      SVC_PORT: String(await freePort()),
      SVC_CONTRIBUTION_BOND_ENVELOPES: '2',
      SVC_LLM_ALLOW_LOOPBACK: 'true',
      SVC_METRICS_PORT: '0',
    });
    const listening = json(await start.line((l) => l.includes('"msg":"listening"'), 'the listening line of npm start'));
    t = { url: listening.url, metricsUrl: listening.metrics };
    // The walk-through's identity after its step 7: an identity key and a paid grant.
    const id = await zkIdentity(t.url, 'readme-blocks');
    ({ key, zid } = id);
    const grant = await call(
      t.url,
      'POST',
      '/api/tally/grants',
      { zid, credits: 1000, tier: 'standard' },
      bearer(readFileSync(join(dir, 'data/operator-token'), 'utf8').trim()),
    );
    expect(grant.status, grant.text).toBe(201);
    for (let i = 0; i < 2; i++) {
      const r = await call(t.url, 'POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }, bearer(key));
      expect(r.status, r.text).toBe(200);
    }
  }, 120_000);

  afterAll(async () => {
    if (cluster) await stopGroup(cluster);
    if (start) await stopGroup(start);
  }, 120_000);

  it('Quick start: `npm start` serves on 127.0.0.1 with ./data and says `listening` with its URL', async () => {
    const block = script('quick start');
    expect(block).toMatch(/^npm ci && npm start\s/m);
    // `npm test` is this suite: its script is checked, not run from inside it.
    expect(block).toMatch(/^npm ci && npm test\s/m);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.test).toBe('vitest run');
    expect(t.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await call(t.url, 'GET', '/api/health');
    expect(health.status, health.text).toBe(200);
    expect(readFileSync(join(dir, 'data/operator-token'), 'utf8')).toMatch(/\S/);
  });

  // The blocks on the node `npm start` started run one after another (they share its identity), beside the cluster's
  // (which mostly wait on ticks, and need none of this node).
  describe.concurrent('on the node `npm start` started', () => {
    it.sequential('Reactor, agents, genesis (and a contract an agent drives) run as written with the identity key', { timeout: 90_000 }, async ({ expect }) => {
      const text = script('reactor, agents, genesis');
      expect(text).toMatch(/^KEY=sk_….*$/m);
      const body = text
        .replace(/^KEY=sk_….*$/m, `KEY=${key}`)
        .replaceAll('127.0.0.1:8787', t.url.replace('http://', ''))
        // The agents' SSE stream never ends by itself: two seconds of it.
        .replaceAll('curl -N ', 'curl -sN --max-time 2 ');
      const { stdout } = await bash(body, dir);
      expect(stdout).not.toContain('"error":');
      expect(stdout).toMatch(/"step": 1,\s+"value": -?\d/); // the reactor's first step
      expect(stdout).toContain('"committed":false'); // the preview
      expect(stdout).toContain('"kind":"chain"');
      expect(stdout).toMatch(/^retry:/m); // the SSE stream opened
      const agent = JSON.parse(await readFile(join(dir, 'agent.json'), 'utf8'));
      expect(stdout).toContain(`{"id":"${agent.id}"`);
      expect(stdout).toMatch(/"status":"killed"/);
      expect(stdout).toContain('"slug":"my-lab"');
      const gate = JSON.parse(await readFile(join(dir, 'gate-7.json'), 'utf8'));
      expect(gate.contract_id).toMatch(/^ctr_[0-9a-f]{24}$/);
      expect(stdout).toMatch(/"slug":"gate-7"[^\n]*"status":"running"/);
    });

    it.sequential('Run a contributing node: bond, contributing, status, release, from curl and the CLI', { timeout: 60_000 }, async ({ expect }) => {
      const { stdout } = await bash(`URL=${t.url}\nKEY=${key}\n${script('contributing node')}`, dir);
      expect(stdout).not.toContain('"error":');
      expect(stdout).toMatch(/"committee_size":3/);
      expect(stdout).toMatch(/"bond_id":"bond_[0-9a-f]+"/);
      expect(stdout).toContain('"mode":"contributing"');
      expect(stdout).toMatch(/"released_svcond":\d+,"mode":"idle"/);
      expect(stdout).toMatch(/identity\s+zid_\w+\n/); // the CLI's status screen
    });

    it.sequential('the autotick block turns a channel’s autotick on (URL, KEY and a channel ID)', { timeout: 30_000 }, async ({ expect }) => {
      const channel = await call(t.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.5 }, autotick: false }, bearer(key));
      expect(channel.status, channel.text).toBe(201);
      try {
        const { stdout } = await bash(`URL=${t.url}\nKEY=${key}\nID=${channel.body.id}\n${script('autotick')}`, dir);
        expect(JSON.parse(stdout)).toMatchObject({ id: channel.body.id, autotick: true });
      } finally {
        await call(t.url, 'POST', `/api/svc/streams/${channel.body.id}/close`, undefined, bearer(key));
      }
    });

    it.sequential('the MCP JSON config starts `svc-node mcp` over stdio, which lists every tool', { timeout: 30_000 }, async ({ expect }) => {
      const config = JSON.parse(script('mcp config'));
      const server = config.mcpServers['svc-node'];
      expect(server.command).toBe('node');
      const args = (server.args as string[]).map((a) => a.replace('/path/to/svc-node', ROOT).replace('http://127.0.0.1:8787', t.url).replace('sk_…', key));
      const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
      try {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        const send = (m: unknown) => child.stdin!.write(`${JSON.stringify(m)}\n`);
        send({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'readme', version: '1' } },
        });
        await waitUntil(() => out.includes('"id":1'), 'the initialize answer', 20_000);
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
        const answer = await waitUntil(() => out.split('\n').find((l) => l.includes('"id":2')), 'the tools/list answer', 20_000);
        const names = (JSON.parse(answer).result.tools as { name: string }[]).map((x) => x.name).sort();
        expect(names).toEqual(
          toolTable(defaultRegistry())
            .map((x) => x.name)
            .sort(),
        );
      } finally {
        child.kill('SIGTERM');
        await exitOf(child);
      }
    });

    it.sequential(
      'Chat: a provider credential is stored, listed, tested, deleted; the question is answered offline',
      { timeout: 60_000 },
      async ({ expect }) => {
        // The credential's provider is one on 127.0.0.1 (the node allows loopback base URLs here), not api.anthropic.com.
        const fake: FakeProvider = await startFakeProvider(() => ({ body: anthropicAnswer('pong') }));
        try {
          const text = script('chat credentials');
          expect(text).toContain('"api_key":"sk-ant-…"');
          const body = text.replace('"api_key":"sk-ant-…"', `"api_key":"sk-ant-readme-test","base_url":"${fake.url}"`);
          const { stdout } = await bash(`U=${t.url}\nKEY=${key}\n${body}`, dir);
          const credential = JSON.parse(await readFile(join(dir, 'credential.json'), 'utf8'));
          expect(credential).toMatchObject({ kind: 'anthropic', prefix: 'sk-ant…' });
          expect(stdout).not.toContain('sk-ant-readme-test');
          expect(stdout).toMatch(/"ok":true,"provider":"anthropic","model":"claude-sonnet-4-5","reply":"pong"/);
          expect(fake.requests.length).toBe(1);
          expect(stdout).toContain(`{"id":"${credential.id}","deleted":true}`);
          expect(stdout).toMatch(/"svcProof":"[0-9a-f]{64}"/);
        } finally {
          await fake.close();
        }
      },
    );

    it.sequential('the Prometheus YAML scrapes the metrics listener the README turns on (--metrics-port 9464, /metrics)', async ({ expect }) => {
      const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): any };
      const doc = yaml.load(script('prometheus'));
      const job = doc.scrape_configs[0];
      expect(job.job_name).toBe('svc-node');
      expect(job.metrics_path ?? '/metrics').toBe('/metrics');
      const config = loadConfig({ env: { SVC_METRICS_PORT: '9464' } });
      expect(job.static_configs[0].targets).toEqual([`${config.metrics.host}:${config.metrics.port}`]);
      // The path on the listener of a node with metrics on (this one on a free port).
      const target = new URL(t.metricsUrl);
      const res = await fetch(`http://${target.host}${job.metrics_path ?? '/metrics'}`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('svc_http_requests_total');
    });

    it.sequential('CLI: every command, subcommand and flag of the block is one the built CLI has', { timeout: 60_000 }, async ({ expect }) => {
      const lines = commands(script('cli'));
      expect(lines.length).toBeGreaterThan(5);
      const program = await cliCommands();
      for (const line of lines) {
        const m = /^node dist\/cli\/index\.js ([a-z-]+)(?: ([a-z|]+)(?= |$))?/.exec(line);
        expect(m, line).not.toBeNull();
        const command = program.commands.find((c) => c.name === m![1]);
        expect(command, line).toBeDefined();
        // `contribute status|bond|release …`: each subcommand takes the line's flags; `mode idle|contributing` is an argument.
        const subs = m![2] && command!.commands.length > 0 ? m![2].split('|') : [null];
        for (const sub of subs) {
          const target = sub === null ? command! : command!.commands.find((c) => c.name === sub);
          expect(target, `${line}: ${sub}`).toBeDefined();
          for (const flag of line.match(/--[a-z][a-z-]*/g) ?? []) expect(target!.options, `${line}: ${flag}`).toContain(flag);
        }
      }
    });
  });

  describe.concurrent('on the cluster the bond-to-verdict recipe starts', () => {
    let nodes: Record<string, any>[];
    beforeAll(async () => {
      nodes = await clusterReady;
    }, 160_000);

    // The recipe, the join and the local clusters run side by side: the local clusters are their own (own data dirs,
    // free base ports), and the joining node, unbonded, sits on no committee and in no custody set of the recipe's.
    // The claim (it needs the recipe's keys) and then the outlives block (it kills node5) run after them, in turn.
    it(
      'Run a local cluster: each command starts its first node (the fixed ports on a free base), --restart brings a killed node back',
      { timeout: 150_000 },
      async ({ expect }) => {
        const lines = commands(script('cluster commands'));
        expect(lines).toHaveLength(4);
        // The five-node line is the recipe's cluster command (started in beforeAll, with the recipe's settings in front).
        const recipe = script('bond to verdict').split('\n')[0]!;
        const isRecipes = (line: string) => recipe.includes(line.replace('npm run cluster', 'npm run --silent cluster'));
        expect(lines.filter(isRecipes)).toHaveLength(1);
        // The lines run side by side, each on its own base port (drawn one after another, so no two overlap).
        const runs: { line: string; cwd: string; base: number | null }[] = [];
        for (const line of lines.filter((l) => !isRecipes(l)))
          runs.push({ line, cwd: await workDir(), base: line.includes('--base-port') ? null : await freeBasePort(Number(/--nodes (\d+)/.exec(line)![1])) });
        await Promise.all(
          runs.map(async ({ line, cwd, base }) => {
            // The README's 8787 … 8789 may be taken where tests run: a free base port instead.
            const command = withoutNpm(line) + (base === null ? '' : ` --base-port ${base}`);
            const c = background(command, cwd);
            try {
              const first = json(await c.line((l) => l.startsWith('{"name":"node1"'), `node1 of ${line}`));
              if (base !== null) expect(first.url).toBe(`http://127.0.0.1:${base}`);
              expect(first.dataDir).toBe(join(cwd, 'data/cluster/node1'));
              expect((await call(first.url, 'GET', '/api/health')).status).toBe(200);
              if (line.includes('--restart')) {
                process.kill(first.pid, 'SIGKILL');
                const again = json(await c.line((l) => l.includes('"restarted":true'), 'node1 restarted'));
                expect(again).toMatchObject({ name: 'node1', url: first.url, peerId: first.peerId, restarted: true });
              }
            } finally {
              expect(await stopGroup(c), `${line}: ${c.stderr()}`).toBe(0);
            }
          }),
        );
      },
    );

    it('From a bond to a verdict: five bonds, a published result, a challenge rejected, its verdict checked', { timeout: 150_000 }, async ({ expect }) => {
      const [, ...rest] = script('bond to verdict').split('\n');
      const { stdout } = await bash(rest.join('\n'), clusterDir, {}, 140_000);
      expect(stdout.match(/\{"bond_id":"bond_[0-9a-f]+","token_ids_count":2\}/g)).toHaveLength(5);
      const zeta = JSON.parse(await readFile(join(clusterDir, 'zeta.json'), 'utf8'));
      expect(zeta.executed_by.node).toBe(nodes[0]!.peerId);
      const [opened, decided] = (await readFile(join(clusterDir, 'challenge.jsonl'), 'utf8')).trim().split('\n').map(json);
      expect(opened).toMatchObject({ state: 'opened', result_id: zeta.result_id, quorum: 2 });
      // The stake is settled at the challenger's home right after the verdict: --wait may print it still held.
      expect(decided).toMatchObject({
        challenge_id: opened!.challenge_id,
        state: 'rejected',
        stake: { amount: 50, effect: expect.stringMatching(/^(burned|held)$/) },
      });
      expect(stdout).toMatch(/\{"valid":true,"folded_outcome":"rejected","counted_votes":[23],"bad_signatures":0\}/);
      expect(stdout).toContain('{"valid":false,"reasons":["the votes fold to rejected, not upheld"]}');
      expect(stdout).toContain(`"open_challenges":[],"verdicts":[{"challenge_id":"${opened!.challenge_id}"`);
    });

    it('Join a public mesh: a node started with the mesh secret and one bootstrap address connects to the mesh', { timeout: 90_000 }, async ({ expect }) => {
      const [joinCommand, peers] = commands(script('join a mesh'));
      expect(joinCommand).toContain('--host 0.0.0.0');
      expect(joinCommand).toMatch(/^SVC_PUBLIC_URL=http:\/\/\S+ /);
      // The cluster's secret (random, as the cluster command draws it when not given) is in its nodes' environment.
      const environ = readFileSync(`/proc/${nodes[0]!.pid}/environ`, 'utf8').split('\0');
      const secret = environ.find((e) => e.startsWith('SVC_MESH_SECRET='))!.slice('SVC_MESH_SECRET='.length);
      const [port, p2p] = [await freePort(), await freePort()];
      const cwd = await workDir();
      const env = { SECRET: secret, SVC_PORT: String(port), SVC_URL: `http://127.0.0.1:${port}` };
      // Tests stay on 127.0.0.1; the bootstrap placeholder is the cluster's first node.
      const command = joinCommand!
        .replace('--host 0.0.0.0', '--host 127.0.0.1')
        .replace(/^SVC_PUBLIC_URL=\S+/, `SVC_PUBLIC_URL=${env.SVC_URL}`)
        .replace('--p2p-port 4001', `--p2p-port ${p2p}`)
        .replace(/--bootstrap \S+/, `--bootstrap ${nodes[0]!.multiaddr}`);
      const node = background(command, cwd, env);
      try {
        await node.line((l) => l.includes('"msg":"listening"'), 'the joining node listening');
        await waitUntil(async () => (await readPeers(env.SVC_URL)).connections.open >= 1, 'the joining node connected to the mesh', 60_000, 250);
        const { stdout: report, code } = await bash(peers!, cwd, env, 30_000);
        expect(code).toBe(0);
        expect(report).toMatch(/connected\s+[1-9]/);
        expect(report).toContain(nodes[0]!.peerId);
      } finally {
        expect(await stopGroup(node)).toBe(0);
      }
    });

    it.sequential(
      'The daily claim across nodes: answered by the home through node2, the same refusal through node3',
      { timeout: 60_000 },
      async ({ expect }) => {
        const env = `NODE2=${nodes[1]!.url}\nNODE3=${nodes[2]!.url}\nKEY=$(cat key0)\n`; // key0: node1's operator, from the recipe
        const { stdout, code } = await bash(env + script('claim across nodes'), clusterDir);
        expect(code).toBe(1); // the CLI's refusal
        expect(stdout).toContain(`X-Svc-Served-By: ${nodes[0]!.peerId}`);
        expect(stdout.match(/\{"claimable":false,"reason":"balance_not_low"/g)).toHaveLength(2);
      },
    );

    it.sequential(
      'An identity outlives its home: node5 killed, a custodian takes its identity over; balance, chain and login go on',
      { timeout: 150_000 },
      async ({ expect }) => {
        // Last on this cluster: it kills node5 (the claim and the join above use node1 to node3).
        const { stdout, code } = await bash(script('outlives its home'), clusterDir, {}, 140_000);
        expect(code, stdout).toBe(0);
        const lines = stdout.split('\n').filter(Boolean);
        const jsonLines = lines.filter((l) => l.startsWith('{')).map(json);
        const [before, after, ...rest] = jsonLines;
        const balances = rest.slice(0, 4);
        const [spent, login, verified] = rest.slice(4);
        const balance = balances[0];
        expect(before).toMatchObject({ epoch: 1, home: nodes[4]!.peerId, certified_seq: 3, finality: 'certified' });
        expect(before!.custodians).toHaveLength(3);
        expect(after!.epoch, stdout).toBeGreaterThanOrEqual(2);
        expect(before!.custodians.slice(1)).toContain(after!.home);
        expect(after, stdout).toMatchObject({ finality: 'certified' });
        expect(after!.certified_seq, stdout).toBeGreaterThanOrEqual(4);
        // Asked at the four live nodes: the new home answers itself, the three others forward to it.
        const servedBy = lines.filter((l) => /^x-svc-served-by:/i.test(l)).map((l) => l.split(': ')[1]!.trim());
        expect(servedBy).toEqual([after!.home, after!.home, after!.home]);
        expect(balances).toHaveLength(4);
        for (const b of balances) expect(b).toEqual({ zid: balance!.zid, free: 125, paid: 0, total: 125 });
        expect(spent).toEqual({ value: 9, seq: 4 });
        expect(login).toMatchObject({ zid: balance!.zid });
        expect(verified).toMatchObject({ valid: true, zid: balance!.zid });
      },
    );
  });

  it('Quick start: the node `npm start` started stops on Ctrl-C (SIGINT) and exits 0', { timeout: 60_000 }, async () => {
    expect(await stopGroup(start)).toBe(0);
  });

  // Run, the benchmarks cost minutes of both cores (and bench:guard builds a release in a git worktree): each line is
  // checked instead: its script exists and reads every flag the line names.
  it('Benchmarks: each line names a script that exists and reads the flags the line gives', () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const lines = commands(script('benchmarks'));
    expect(lines.length).toBeGreaterThan(5);
    for (const line of script('benchmarks')
      .split('\n')
      .filter((l) => /^(npx|npm) /.test(l))) {
      const npm = /^npm run ([a-z:]+)/.exec(line);
      const file = npm ? /tsx (\S+)/.exec(scripts[npm[1]!]!)![1]! : /^npx tsx (\S+)/.exec(line)![1]!;
      const dirOf = file.slice(0, file.lastIndexOf('/'));
      const sources = [file, ...[...line.matchAll(/also (\S+?\.ts)/g)].map((a) => `${dirOf}/${a[1]}`)];
      // What the script reads its flags with: itself, the benches' shared lib, and for bench:guard its argument parser.
      const text = [...sources, 'scripts/bench/lib.ts', ...(npm ? [file.replace(/\.ts$/, '-plan.ts')] : [])]
        .map((f) => readFileSync(join(ROOT, f), 'utf8'))
        .join('\n');
      for (const flag of line.match(/--[a-z][a-z-]*/g) ?? []) {
        const name = flag.slice(2);
        expect(text, `${line.slice(0, 60)}…: ${flag}`).toMatch(new RegExp(`['"\`](--)?${name}['"\`]`));
      }
    }
  });
});
