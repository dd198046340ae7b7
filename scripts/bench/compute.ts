// HTTP throughput of sealed computes vs a bare Koa JSON route, in the same run (autocannon, 50 connections, 10 s).
// Line 1: sealing with buffered writes; line 2: durable (fsync) writes; line 3: the same sealed compute in process
// (no HTTP, durable writes, 50 at a time), which separates the cost of sealing from the cost of the HTTP layer.
// Each line is one JSON object.
// Usage: npx tsx scripts/bench/compute.ts [--duration 10] [--connections 50]
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { resolveCaller } from '../../src/http/auth.js';
import { SvcNode } from '../../src/node.js';

const args = process.argv.slice(2);
const arg = (name: string, def: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const duration = arg('duration', 10);
const connections = arg('connections', 50);
const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

function startProcess(cmd: string, argv: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    const timer = setTimeout(() => reject(new Error('process did not report its url in 30 s')), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"url":"([^"]+)"/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.once('exit', (code) => reject(new Error(`process exited early with ${code}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function load(url: string, path: string, body: string | undefined, headers: Record<string, string>): Promise<autocannon.Result> {
  return autocannon({
    url: url + path,
    method: body ? 'POST' : 'GET',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    connections,
    duration,
  });
}

const computeBody = JSON.stringify({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } });

async function runNode(sync: boolean): Promise<{ rps: number; p50: number; p99: number; non2xx: number; sealed: number }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  // The built node, as npm start runs it (the bench builds first).
  const { child, url } = await startProcess(process.execPath, ['dist/cli/index.js', 'start'], {
    SVC_PORT: '0',
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'info',
    SVC_SYNC_WRITES: String(sync),
    SVC_INITIAL_CREDITS: '100000000',
    // As npm start runs it.
    NODE_OPTIONS: '--max-semi-space-size=64',
  });
  try {
    const digest = createHash('sha256').update(`bench ${Date.now()}`).digest('hex');
    const reg = await fetch(`${url}/api/svc-auth/register-v3`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ equation_sha256: digest }) });
    const key = ((await reg.json()) as { admin_key: string }).admin_key;
    // Warm-up, then the measured run.
    await autocannon({ url: `${url}/api/svc/compute`, method: 'POST', body: computeBody, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, connections, duration: 2 });
    const r = await load(url, '/api/svc/compute', computeBody, { authorization: `Bearer ${key}` });
    return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, sealed: r['2xx'] / duration };
  } finally {
    await stop(child);
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function runBaseline(body: 'koa' | 'node'): Promise<number> {
  const { child, url } = await startProcess(tsx, ['scripts/bench/bare-koa.ts'], body === 'node' ? { BARE_BODY: 'node' } : {});
  try {
    await autocannon({ url: `${url}/ping`, connections, duration: 2 });
    const r = await load(url, '/ping', JSON.stringify({ ping: 1 }), {});
    return r.requests.average;
  } finally {
    await stop(child);
  }
}

execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
const baselineRps = await runBaseline('koa');
const leanBaselineRps = await runBaseline('node');
const buffered = await runNode(false);
console.log(
  JSON.stringify({
    computeRps: Math.round(buffered.rps),
    baselineRps: Math.round(baselineRps),
    ratio: Math.round((buffered.rps / baselineRps) * 1000) / 1000,
    // The same bare route with the node's own JSON body middleware instead of @koa/bodyparser.
    leanBaselineRps: Math.round(leanBaselineRps),
    leanRatio: Math.round((buffered.rps / leanBaselineRps) * 1000) / 1000,
    p50Ms: buffered.p50,
    p99Ms: buffered.p99,
    non2xx: buffered.non2xx,
    syncWrites: false,
    connections,
    durationS: duration,
  }),
);
const durable = await runNode(true);
console.log(
  JSON.stringify({
    durableComputeRps: Math.round(durable.rps),
    sealedPerSec: Math.round(durable.sealed),
    ratio: Math.round((durable.rps / baselineRps) * 1000) / 1000,
    p50Ms: durable.p50,
    p99Ms: durable.p99,
    non2xx: durable.non2xx,
    syncWrites: true,
    connections,
    durationS: duration,
  }),
);

/** Sealed computes through ComputeService.compute in this process, `connections` at a time, durable writes. */
async function runInProcess(): Promise<Record<string, unknown>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  const config = loadConfig({ env: {}, overrides: { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', syncWrites: true } });
  const node = await new SvcNode(config, { logger: pino({ level: 'silent' }), initialCredits: 100_000_000 }).start();
  try {
    const digest = createHash('sha256').update(`bench in-process ${Date.now()}`).digest('hex');
    const reg = await fetch(`${node.url}/api/svc-auth/register-v3`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ equation_sha256: digest }) });
    const key = ((await reg.json()) as { admin_key: string }).admin_key;
    const ctx = { get: (h: string) => (h === 'authorization' ? `Bearer ${key}` : ''), query: {}, ip: '127.0.0.1' } as unknown as Parameters<typeof resolveCaller>[0];
    const deps = { identity: node.identity, chain: node.chain };
    const run = async (ms: number): Promise<number> => {
      const end = performance.now() + ms;
      let done = 0;
      const worker = async () => {
        while (performance.now() < end) {
          const caller = await resolveCaller(ctx, deps, true);
          await node.compute.compute(caller, JSON.parse(computeBody));
          done++;
        }
      };
      await Promise.all(Array.from({ length: connections }, worker));
      return done;
    };
    await run(2000);
    const before = { ...node.store.stats };
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const n = await run(duration * 1000);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const batches = node.store.stats.batches - before.batches;
    return {
      inProcessSealedPerSec: Math.round(n / seconds),
      cpuUsPerSeal: Math.round((cpu.user + cpu.system) / n),
      storeOpsPerSeal: Math.round(((node.store.stats.ops - before.ops) / n) * 10) / 10,
      sealsPerBatch: Math.round((n / batches) * 10) / 10,
      syncWrites: true,
      concurrency: connections,
      durationS: duration,
    };
  } finally {
    await node.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

console.log(JSON.stringify(await runInProcess()));
