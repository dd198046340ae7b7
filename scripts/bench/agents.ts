// Agent runtime benchmark: 1,000 agents on one in-process node, every one due on every tick, with SSE
// clients reading the event stream over real HTTP. The node's clock is a ManualClock moved one tick per round, and
// each round runs everything due (AgentRuntime.pump), so the figure is the runtime's capacity, not the 1.287 Hz pace:
// at 1,000 agents a node keeps up with the real clock while ticksPerSec ≥ 1,287.
// Prints ONE JSON line: {agents, ticksPerSec, sseClients, p99EventMs, …}: ticksPerSec is agent ticks (each a step,
// its chain row or sealed result, its record and event in one batch) per second; p99EventMs the p99 from an event's
// emission (after its batch is durable) to its arrival at an SSE client; p99TickToEventMs from the start of the
// round (the tick) to the arrival.
// Usage: npx tsx scripts/bench/agents.ts [--agents 1000] [--owners 10] [--clients 10] [--rounds 10] [--kind append|compute]
import '../../src/polyfill.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { SvcNode } from '../../src/node/node.js';
import { ManualClock } from '../../src/kernel/clock.js';
import { numberArg } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const AGENTS = numberArg('agents', 1000);
const OWNERS = numberArg('owners', 10);
const CLIENTS = numberArg('clients', 10);
const ROUNDS = numberArg('rounds', 10);
const KIND = process.argv.includes('compute') ? 'compute' : 'append';

async function call(url: string, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** An SSE reader that notes when each event id arrives. */
async function sseClient(url: string, key: string, arrivals: Map<number, number>, signal: AbortSignal): Promise<void> {
  const res = await fetch(`${url}/api/svc/agent/stream`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal });
  if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const now = performance.now();
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.startsWith('id:')) arrivals.set(Number(line.slice(3).trim()), now);
      }
    }
  })().catch(() => undefined);
}

function p99(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]!;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-agents-'));
  const clock = new ManualClock(BigInt(Date.now()) * 1_000_000n);
  const config = loadConfig({
    env: {},
    overrides: { port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', syncWrites: false, solverThreads: 0, sealWorker: false },
  });
  const node = await new SvcNode(config, {
    clock,
    logger: pino({ level: 'silent' }),
    initialCredits: 10_000_000,
    agents: { autoTick: false, heartbeatMs: 15_000, limits: { maxPerOwner: AGENTS } },
  }).start();
  const abort = new AbortController();
  try {
    const owners: { key: string }[] = [];
    for (let i = 0; i < OWNERS; i++) {
      const digest = createHash('sha256').update(`bench-agents-${i}-${dir}`).digest('hex');
      const r = await call(node.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
      owners.push({ key: r.body.admin_key });
      // The append step writes its chain row only on a machine that injects the agent rail (measured here as before).
      const patched = await call(node.url, 'PATCH', `/api/chain/${r.body.state_machine.slug}/settings`, { inject_agent_rail: true }, r.body.admin_key);
      if (patched.status !== 200) throw new Error(`settings answered ${patched.status}`);
    }
    const step =
      KIND === 'compute'
        ? { kind: 'compute', domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: '{{tick}}' } }
        : { kind: 'append', event: 'beat', payload: { tick: '{{tick}}', svcond: '{{svcond}}' } };
    for (let i = 0; i < AGENTS; i++) {
      const r = await call(node.url, 'POST', '/api/svc/agent/spawn', { program: { every: 1, step } }, owners[i % OWNERS]!.key);
      if (r.status !== 201) throw new Error(`spawn answered ${r.status}: ${JSON.stringify(r.body)}`);
    }
    const arrivals = new Map<number, number>();
    for (let c = 0; c < CLIENTS; c++) await sseClient(node.url, owners[c % OWNERS]!.key, arrivals, abort.signal);
    const emitted = new Map<number, { at: number; round: number }>();
    let round = 0;
    node.agents.events.subscribe((e) => {
      if (e.type === 'tick') emitted.set(e.seq, { at: performance.now(), round });
    });
    const roundStart: number[] = [];
    const ticksBefore = node.agents.ticksRun;
    const t0 = performance.now();
    for (round = 0; round < ROUNDS; round++) {
      clock.advanceTicks(1);
      roundStart.push(performance.now());
      await node.agents.pump();
    }
    const elapsed = (performance.now() - t0) / 1000;
    const ticks = node.agents.ticksRun - ticksBefore;
    // The events of owners with a client: wait for their arrival (bounded).
    const watched = new Set(Array.from({ length: Math.min(CLIENTS, OWNERS) }, (_, c) => c));
    const expected = Math.round((ticks * watched.size) / OWNERS);
    const deadline = Date.now() + 20_000;
    while ([...emitted.keys()].filter((s) => arrivals.has(s)).length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const lat: number[] = [];
    const tickLat: number[] = [];
    for (const [seq, e] of emitted) {
      const got = arrivals.get(seq);
      if (got === undefined) continue;
      lat.push(got - e.at);
      tickLat.push(got - roundStart[e.round]!);
    }
    console.log(
      JSON.stringify({
        agents: AGENTS,
        ticksPerSec: Math.round(ticks / elapsed),
        sseClients: CLIENTS,
        p99EventMs: Math.round(p99(lat) * 100) / 100,
        p99TickToEventMs: Math.round(p99(tickLat) * 100) / 100,
        kind: KIND,
        rounds: ROUNDS,
        agentTicks: ticks,
        eventsReceived: lat.length,
        msPerRound: Math.round((elapsed * 1000 * 100) / ROUNDS) / 100,
        keepsUpWithClock: ticks / elapsed >= AGENTS * 1.287,
      }),
    );
  } finally {
    abort.abort();
    await node.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
