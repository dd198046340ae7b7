// Push benchmark: one `svc-node start` process (durable writes), `clients` WebSocket clients on ONE stream
// channel in `procs` client processes of their own (push-clients.ts; --procs 0: in this process, the in-process method),
// and a webhook receiver on 127.0.0.1. This process only ticks and counts.
//   ticks:    the channel (lorenz, t_end 0.01: a stateful continuation each tick) is ticked `ticks` times, one after
//             another; ticksPerSec = ticks / elapsed. Every client must receive every tick. With --interval-ms N the
//             ticks start N ms apart (an offered rate below saturation: a tick's fan-out does not queue behind the
//             last one's); by default each starts when the previous one is answered (the saturating rate).
//   push:     a push's latency is from the tick's stamp (unix_ns in the sealed envelope: the node's clock, taken when
//             the tick is sealed, before its batch is written) to the moment the client's 'message' handler runs;
//             it includes the durable batch, the fan-out to all clients and the client process's own queue. Both
//             clocks are this machine's realtime clock advanced by the monotonic one (push-clients.ts: a latency
//             is the true one plus at most 1 ms). p99PushMs over every (tick, client) pair (target < 50 ms).
//   webhooks: `deliveries` computations (16 at a time) owe one computation.complete delivery each to a receiver that
//             answers 200 at once; webhookDeliveriesPerSec = deliveries / (last delivery − first computation sent).
// Prints ONE JSON line: {wsClients, ticksPerSec, p99PushMs, webhookDeliveriesPerSec, …, loadAvg1m: [before, after]}.
// Usage: npx tsx scripts/bench/push.ts [--clients 1000] [--ticks 200] [--deliveries 500] [--sync 1] [--procs 2] [--interval-ms 0]
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import WebSocket from 'ws';
import { identityKey, numberArg, percentile, root, startProcess, stop } from './lib.js';
import { exactAnchorNs, tickStampOf } from './push-stamp.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const CLIENTS = numberArg('clients', 1000);
const TICKS = numberArg('ticks', 200);
const INTERVAL_MS = numberArg('interval-ms', 0);
const DELIVERIES = numberArg('deliveries', 500);
const SYNC = numberArg('sync', 1) !== 0;
const PROCS = numberArg('procs', 2);

const wallMs = () => performance.timeOrigin + performance.now();

const anchorNs = exactAnchorNs();

interface ClientGroup {
  open(o: { url: string; channel: string; key: string; count: number }): Promise<void>;
  report(): Promise<{ latenciesMs: number[]; stamps: string[]; received: number[] }>;
}

/** A client process (push-clients.ts) driven over IPC. */
async function clientProcess(): Promise<ClientGroup> {
  const child = fork(join(root, 'scripts/bench/push-clients.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = () =>
    new Promise<any>((resolve, reject) => {
      child.once('message', (m: any) => (m.error ? reject(new Error(m.error)) : resolve(m)));
      child.once('exit', (code) => reject(new Error(`client process exited with ${code}`)));
    });
  return {
    open: async (o) => {
      const got = next();
      child.send({ open: o });
      await got;
    },
    report: async () => {
      const got = next();
      child.send({ report: true });
      return got;
    },
  };
}

/**
 * The in-process method: the clients in this process, the arrival read with performance.timeOrigin + now() (which can
 * differ from the node's Date.now() anchor by more than a millisecond), each message handled in this process's loop.
 */
function inProcessClients(): ClientGroup {
  const latencies: number[] = [];
  const stamps: string[] = [];
  let received: number[] = [];
  const sockets: WebSocket[] = [];
  return {
    open: async (o) => {
      received = new Array<number>(o.count).fill(0);
      for (let i = 0; i < o.count; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, o.count - i) }, (_, j) => {
            const n = i + j;
            return new Promise<void>((resolve, reject) => {
              const ws = new WebSocket(`${o.url.replace(/^http/, 'ws')}/ws/stream?channel=${o.channel}&key=${o.key}`);
              let hello = false;
              ws.on('message', (d) => {
                if (!hello) {
                  hello = true;
                  resolve();
                  return;
                }
                const at = wallMs();
                const ns = tickStampOf(d as Buffer);
                latencies.push(at - Number(BigInt(ns) / 1000n) / 1000);
                stamps.push(ns);
                received[n]!++;
              });
              ws.on('error', reject);
              sockets.push(ws);
            });
          }),
        );
      }
    },
    report: async () => {
      for (const ws of sockets) ws.terminate();
      return { latenciesMs: latencies, stamps, received };
    },
  };
}

async function call(url: string, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(key ? { authorization: `Bearer ${key}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-push-'));
  const node = await startProcess(process.execPath, ['--import', 'tsx', join(root, 'src/cli/index.ts'), 'start'], {
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_DATA_DIR: dir,
    SVC_SYNC_WRITES: String(SYNC),
    SVC_LOG_LEVEL: 'info',
    SVC_INITIAL_CREDITS: '100000000',
    SVC_WEBHOOK_ALLOW_LOOPBACK: 'true',
  });
  try {
    const digest = createHash('sha256').update(`bench-push:${Date.now()}`).digest('hex');
    await call(node.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest });
    const key = await identityKey(node.url, digest);
    const ch = (await call(node.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.01 } }, key)).body as { id: string; key: string };

    // 1 000 clients on one channel: in `procs` client processes (push-clients.ts), or with --procs 0 in this process.
    const groups: ClientGroup[] = [];
    const per = Math.ceil(CLIENTS / Math.max(1, PROCS));
    for (let i = 0; i < CLIENTS; i += per) groups.push(PROCS > 0 ? await clientProcess() : inProcessClients());
    await Promise.all(groups.map((g, i) => g.open({ url: node.url, channel: ch.id, key: ch.key, count: Math.min(per, CLIENTS - i * per) })));

    const load0 = loadavg();
    const t0 = performance.now();
    // The tick's answer leaves the node after the fan-out loop (streams/channels.ts publishes before it returns): its
    // arrival here, against the tick's stamp, bounds the node's part (durable batch + writes to every socket).
    const answered: number[] = [];
    for (let i = 0; i < TICKS; i++) {
      const due = t0 + i * INTERVAL_MS;
      if (performance.now() < due) await new Promise((r) => setTimeout(r, due - performance.now()));
      const r = await call(node.url, 'POST', `/api/svc/streams/${ch.id}/tick`, undefined, ch.key);
      const at = process.hrtime.bigint();
      if (r.status !== 200) throw new Error(`tick ${i}: ${r.status} ${JSON.stringify(r.body)}`);
      answered.push(Number(anchorNs + at - BigInt(r.body.unix_ns as string)) / 1e6);
    }
    const tickSecs = (performance.now() - t0) / 1000;
    const load1 = loadavg();
    await new Promise((r) => setTimeout(r, 2000));
    const reports = await Promise.all(groups.map((g) => g.report()));
    const latencies = reports.flatMap((r) => r.latenciesMs);
    // Where a push's time goes, per tick: its first arrival (the durable batch and the first send) and the spread to
    // its last arrival (the fan-out to every client and the clients' own queues).
    const perTick = new Map<string, { min: number; max: number }>();
    for (const r of reports)
      r.latenciesMs.forEach((l, i) => {
        const t = perTick.get(r.stamps[i]!);
        if (!t) perTick.set(r.stamps[i]!, { min: l, max: l });
        else {
          t.min = Math.min(t.min, l);
          t.max = Math.max(t.max, l);
        }
      });
    const firstArrival = [...perTick.values()].map((t) => t.min);
    const spread = [...perTick.values()].map((t) => t.max - t.min);
    const missing = reports.reduce((s, r) => s + r.received.reduce((t, c) => t + (TICKS - c), 0), 0);

    // Webhooks.
    let got = 0;
    let lastAt = 0;
    const receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        got++;
        lastAt = performance.now();
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const hook = await call(node.url, 'POST', '/api/webhooks', { url: hookUrl, events: ['computation.complete'] }, key);
    if (hook.status !== 201) throw new Error(`webhook: ${JSON.stringify(hook.body)}`);
    const w0 = performance.now();
    let sent = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < DELIVERIES) {
          sent++;
          const r = await call(
            node.url,
            'POST',
            '/api/svc/compute',
            { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 1 + sent } },
            key,
          );
          if (r.status !== 200) throw new Error(`compute: ${r.status}`);
        }
      }),
    );
    const wDeadline = Date.now() + 120_000;
    while (got < DELIVERIES && Date.now() < wDeadline) await new Promise((r) => setTimeout(r, 20));
    receiver.close();

    console.log(
      JSON.stringify({
        wsClients: CLIENTS,
        ticksPerSec: Math.round((TICKS / tickSecs) * 10) / 10,
        p99PushMs: Math.round(percentile(latencies, 99) * 10) / 10,
        p90PushMs: Math.round(percentile(latencies, 90) * 10) / 10,
        p50PushMs: Math.round(percentile(latencies, 50) * 10) / 10,
        p50TickAnsweredMs: Math.round(percentile(answered, 50) * 10) / 10,
        p99TickAnsweredMs: Math.round(percentile(answered, 99) * 10) / 10,
        p50FirstArrivalMs: Math.round(percentile(firstArrival, 50) * 10) / 10,
        p99FirstArrivalMs: Math.round(percentile(firstArrival, 99) * 10) / 10,
        p50SpreadMs: Math.round(percentile(spread, 50) * 10) / 10,
        p99SpreadMs: Math.round(percentile(spread, 99) * 10) / 10,
        maxPushMs: Math.round(latencies.reduce((m, x) => Math.max(m, x), 0) * 10) / 10,
        pushes: latencies.length,
        missingPushes: missing,
        webhookDeliveriesPerSec: Math.round((got / ((lastAt - w0) / 1000)) * 10) / 10,
        webhookDeliveries: got,
        ticks: TICKS,
        intervalMs: INTERVAL_MS,
        syncWrites: SYNC,
        clientProcs: PROCS,
        loadAvg1m: [load0, load1].map(([oneMinute]) => Math.round((oneMinute ?? NaN) * 100) / 100),
      }),
    );
  } finally {
    await stop(node.child);
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
