// Push benchmark (issue 21): one `svc-node start` process (durable writes) and, in this process, `clients` WebSocket
// clients on ONE stream channel and a webhook receiver on 127.0.0.1.
//   ticks:    the channel (lorenz, t_end 0.01: a stateful continuation each tick) is ticked `ticks` times, one after
//             another; ticksPerSec = ticks / elapsed. Every client must receive every tick.
//   push:     a push's latency is from the tick's stamp (unix_ns in the sealed envelope, the node's clock: this
//             machine's wall clock) to its arrival at a client; it includes the durable batch and the fan-out to all
//             clients. p99PushMs over every (tick, client) pair (target < 50 ms).
//   webhooks: `deliveries` computations (16 at a time) owe one computation.complete delivery each to a receiver that
//             answers 200 at once; webhookDeliveriesPerSec = deliveries / (last delivery − first computation sent).
// Prints ONE JSON line: {wsClients, ticksPerSec, p99PushMs, webhookDeliveriesPerSec, …}.
// Usage: npx tsx scripts/bench/push.ts [--clients 1000] [--ticks 200] [--deliveries 500] [--sync 1]
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { numberArg, root, startProcess, stop } from './lib.js';

const CLIENTS = numberArg('clients', 1000);
const TICKS = numberArg('ticks', 200);
const DELIVERIES = numberArg('deliveries', 500);
const SYNC = numberArg('sync', 1) !== 0;

const STAMP = Buffer.from('"unix_ns":"');
const wallMs = () => performance.timeOrigin + performance.now();

async function call(url: string, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(key ? { authorization: `Bearer ${key}` } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
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
    const who = (await call(node.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest })).body as { admin_key: string };
    const key = who.admin_key;
    const ch = (await call(node.url, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.01 } }, key)).body as { id: string; key: string };

    // 1 000 clients on one channel (opened 50 at a time).
    const latencies: number[] = [];
    const received = new Array<number>(CLIENTS).fill(0);
    const sockets: WebSocket[] = [];
    for (let i = 0; i < CLIENTS; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, CLIENTS - i) }, (_, j) => {
          const n = i + j;
          return new Promise<void>((resolve, reject) => {
            const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/ws/stream?channel=${ch.id}&key=${ch.key}`);
            let hello = false;
            ws.on('message', (d) => {
              if (!hello) {
                hello = true;
                resolve();
                return;
              }
              const at = wallMs();
              // The stamp only (a full parse per client would make this process, not the node, the bottleneck).
              const buf = d as Buffer;
              const i = buf.indexOf(STAMP);
              const ns = buf.toString('latin1', i + STAMP.length, buf.indexOf(0x22, i + STAMP.length));
              latencies.push(at - Number(BigInt(ns) / 1000n) / 1000);
              received[n]!++;
            });
            ws.on('error', reject);
            sockets.push(ws);
          });
        }),
      );
    }

    const t0 = performance.now();
    for (let i = 0; i < TICKS; i++) {
      const r = await call(node.url, 'POST', `/api/svc/streams/${ch.id}/tick`, undefined, ch.key);
      if (r.status !== 200) throw new Error(`tick ${i}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    const tickSecs = (performance.now() - t0) / 1000;
    const deadline = Date.now() + 60_000;
    while (received.some((c) => c < TICKS) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const missing = received.reduce((s, c) => s + (TICKS - c), 0);
    for (const ws of sockets) ws.terminate();

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
        p50PushMs: Math.round(percentile(latencies, 50) * 10) / 10,
        maxPushMs: Math.round(latencies.reduce((m, x) => Math.max(m, x), 0) * 10) / 10,
        pushes: latencies.length,
        missingPushes: missing,
        webhookDeliveriesPerSec: Math.round((got / ((lastAt - w0) / 1000)) * 10) / 10,
        webhookDeliveries: got,
        ticks: TICKS,
        syncWrites: SYNC,
      }),
    );
  } finally {
    await stop(node.child);
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
