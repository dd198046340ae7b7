// Memory under a long mixed load: the built node (as npm start runs it) as a child process, fed at a steady rate with
// computes on fresh inputs (every one a chain the node has not seen) and repeated ones, solver runs, reads
// (balance, envelopes, folders, usage, health, pulse) and registrations. The node reports process.memoryUsage() over IPC
// every 10 s (a preloaded one-line module; nothing else in the node changes). One JSON line per minute (RSS, heap,
// requests and errors of that minute), and a summary line: the least-squares slope of RSS and of heap used (MiB/min)
// over the last 10 minutes, or the last half of a shorter run.
// With --snapshots DIR the node also runs with --expose-gc and, after the first and the last minute, collects garbage
// and writes a heap snapshot into DIR (compare them with scripts/bench/heap-diff.ts); a snapshot pauses the node for
// seconds, so the figure run goes without.
// With --new-routes, 6 % of the mix (taken from the health and pulse reads) goes to the state-machine, stream, webhook and agent surfaces instead: an
// event appended to the caller's machine, a tick of the caller's stream channel (made at its first use), its
// checkpoint read, its webhooks and agents listed.
// Usage: npx tsx scripts/bench/soak.ts [--minutes 30] [--rate 100] [--concurrency 32] [--snapshots DIR] [--new-routes]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE_HEAP_FLAGS } from '../../src/config/heap-flags.js';
import { identityKey, numberArg, root, startProcess, stop } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const minutes = numberArg('minutes', 30);
const rate = numberArg('rate', 100);
const concurrency = numberArg('concurrency', 32);
const SAMPLE_MS = 10_000;
const MiB = 1024 * 1024;
const snapshotArg = process.argv.indexOf('--snapshots');
const snapshotDir = snapshotArg > 0 ? process.argv[snapshotArg + 1] : undefined;
const newRoutes = process.argv.includes('--new-routes');

/** Preloaded into the node: its memory over the IPC channel, every SAMPLE_MS. */
const REPORTER = `data:text/javascript,setInterval(() => process.send && process.send(process.memoryUsage()), ${SAMPLE_MS}).unref();`;
/** Preloaded with --snapshots: on a {snapshot: path} message, a full GC, then the heap written to path. */
const SNAPSHOTTER = `data:text/javascript,${encodeURIComponent(
  `import { writeHeapSnapshot } from 'node:v8';
process.on('message', (m) => { if (m && m.snapshot) { globalThis.gc(); globalThis.gc(); process.send({ wrote: writeHeapSnapshot(m.snapshot) }); } });
process.channel && process.channel.unref();`,
)}`;

execFileSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
const dataDir = await mkdtemp(join(tmpdir(), 'svc-soak-'));
const { child, url } = await startProcess(
  process.execPath,
  [...NODE_HEAP_FLAGS, ...(snapshotDir ? ['--expose-gc', '--import', SNAPSHOTTER] : []), '--import', REPORTER, 'dist/cli/index.js', 'start'],
  { SVC_PORT: '0', SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'info', SVC_INITIAL_CREDITS: '1000000000', SVC_MAX_QUEUED_RUNS_PER_IDENTITY: '1000' },
  root,
  true,
);

interface Sample {
  atMin: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}
const samples: Sample[] = [];
const started = performance.now();
let snapshotWritten: ((path: string) => void) | null = null;
child.on('message', (m: NodeJS.MemoryUsage | { wrote: string }) => {
  if ('wrote' in m) return snapshotWritten?.(m.wrote);
  samples.push({
    atMin: (performance.now() - started) / 60_000,
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
  });
});

async function request(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers.authorization = `Bearer ${key}`;
  const r = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, json };
}

let registered = 0;
async function register(): Promise<{ key: string; zid: string; slug: string; channel?: Promise<string> }> {
  const digest = createHash('sha256').update(`soak ${process.pid} ${++registered} ${Date.now()}`).digest('hex');
  const r = await request('POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
  if (r.status !== 201) throw new Error(`register-v3: ${r.status}`);
  return { key: await identityKey(url, digest), zid: r.json.zid as string, slug: r.json.state_machine.slug as string };
}

// A working set of identities; registrations add to it (the newest replace the oldest, as users come and go).
const identities = await Promise.all(Array.from({ length: 20 }, () => register()));
let fresh = 0;
const SOLVER_RUNS: [string, unknown][] = [
  ['/api/svc/heat', {}],
  ['/api/svc/zeta', {}],
  ['/api/svc/lorenz', {}],
  ['/api/svc/epi', {}],
  ['/api/svc/solve', { solver: 'kalman', inputs: {} }],
];

/** One request of the mix (weights in per cent). */
async function one(i: number): Promise<number> {
  const id = identities[i % identities.length]!;
  const roll = i % 100;
  if (roll < 45) {
    // A chain the node has not seen: kinetic energy with a new mass.
    return (
      await request(
        'POST',
        '/api/svc/compute',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 1 + ++fresh / 1e6, velocity_m_s: 3 } },
        id.key,
      )
    ).status;
  }
  if (roll < 55)
    return (
      await request(
        'POST',
        '/api/svc/compute',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
        id.key,
      )
    ).status;
  if (roll < 60) {
    const [path, body] = SOLVER_RUNS[Math.floor(i / 100) % SOLVER_RUNS.length]!;
    return (await request('POST', path, body, id.key)).status;
  }
  if (roll < 70) return (await request('GET', '/api/tally/balance', undefined, id.key)).status;
  if (roll < 78) return (await request('GET', `/api/tally/envelopes/${id.zid}?limit=20`, undefined, id.key)).status;
  if (roll < 81) return (await request('GET', `/api/tally/envelopes/${id.zid}/folders`, undefined, id.key)).status;
  if (roll < 84) return (await request('GET', '/api/compute/usage', undefined, id.key)).status;
  if (newRoutes && roll >= 84 && roll < 95) {
    if (roll < 87) return (await request('GET', '/api/health')).status;
    if (roll < 89) return (await request('GET', '/api/svc/pulse')).status;
    if (roll < 91) return (await request('POST', `/api/chain/${id.slug}/events`, { payload: { i, fresh } }, id.key)).status;
    if (roll < 93) {
      id.channel ??= request(
        'POST',
        '/api/svc/streams',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
        id.key,
      ).then((r) => {
        if (r.status !== 201) throw new Error(`stream create: ${r.status}`);
        return r.json.id as string;
      });
      return (await request('POST', `/api/svc/streams/${await id.channel}/tick`, {}, id.key)).status;
    }
    if (roll < 94) return (await request('GET', `/api/chain/${id.slug}/checkpoint`, undefined, id.key)).status;
    return (await request('GET', i % 2 ? '/api/webhooks' : '/api/svc/agent/list', undefined, id.key)).status;
  }
  if (roll < 90) return (await request('GET', '/api/health')).status;
  if (roll < 95) return (await request('GET', '/api/svc/pulse')).status;
  const newcomer = await register();
  identities[registered % identities.length] = newcomer;
  return 201;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
/** Least-squares slope of y (bytes) against minutes, in MiB/min. */
function slope(points: { x: number; y: number }[]): number | null {
  if (points.length < 2) return null;
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.x - mx) * (p.y - my);
    sxx += (p.x - mx) ** 2;
  }
  return sxx === 0 ? null : Math.round((sxy / sxx / MiB) * 100) / 100;
}

let inFlight = 0;
let sent = 0;
let dropped = 0;
let minuteCounts: Record<string, number> = {};
const tickMs = 50;
const perTick = (rate * tickMs) / 1000;
let credit = 0;
const ticker = setInterval(() => {
  credit += perTick;
  while (credit >= 1) {
    credit--;
    if (inFlight >= concurrency) {
      dropped++;
      continue;
    }
    inFlight++;
    const i = sent++;
    one(i)
      .then((status) => (minuteCounts[status] = (minuteCounts[status] ?? 0) + 1))
      .catch((err: Error) => (minuteCounts[err.message.slice(0, 40)] = (minuteCounts[err.message.slice(0, 40)] ?? 0) + 1))
      .finally(() => inFlight--);
  }
}, tickMs);

try {
  for (let m = 1; m <= minutes; m++) {
    await new Promise((r) => setTimeout(r, 60_000));
    const last = samples[samples.length - 1];
    console.log(
      JSON.stringify({
        minute: m,
        rssMiB: last ? round1(last.rss / MiB) : null,
        heapUsedMiB: last ? round1(last.heapUsed / MiB) : null,
        heapTotalMiB: last ? round1(last.heapTotal / MiB) : null,
        externalMiB: last ? round1(last.external / MiB) : null,
        arrayBuffersMiB: last ? round1(last.arrayBuffers / MiB) : null,
        requests: minuteCounts,
        dropped,
        registered,
      }),
    );
    minuteCounts = {};
    if (snapshotDir && (m === 1 || m === minutes)) {
      const wrote = await new Promise<string>((resolve) => {
        snapshotWritten = resolve;
        child.send({ snapshot: join(snapshotDir, `soak-min${m}.heapsnapshot`) });
      });
      console.log(JSON.stringify({ minute: m, snapshot: wrote }));
    }
  }
} finally {
  clearInterval(ticker);
  const window = Math.min(10, minutes / 2);
  const from = minutes - window;
  const inWindow = samples.filter((s) => s.atMin >= from);
  const first = samples[0];
  const last = samples[samples.length - 1];
  console.log(
    JSON.stringify({
      bench: 'soak',
      minutes,
      rate,
      newRoutes,
      sent,
      dropped,
      registered,
      slopeWindowMin: window,
      rssSlopeMiBPerMin: slope(inWindow.map((s) => ({ x: s.atMin, y: s.rss }))),
      heapUsedSlopeMiBPerMin: slope(inWindow.map((s) => ({ x: s.atMin, y: s.heapUsed }))),
      rssFirstMiB: first ? round1(first.rss / MiB) : null,
      rssLastMiB: last ? round1(last.rss / MiB) : null,
      rssMaxMiB: round1(Math.max(...samples.map((s) => s.rss)) / MiB),
      heapUsedLastMiB: last ? round1(last.heapUsed / MiB) : null,
      target: 'rss slope < 1 MiB/min over the last 10 minutes',
    }),
  );
  await stop(child);
  await rm(dataDir, { recursive: true, force: true });
}
