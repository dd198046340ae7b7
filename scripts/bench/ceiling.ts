// What this machine can do at all under the compute bench's load (autocannon, 50 connections), so the node's figures
// can be read against it: servers that do nothing but answer with a body the size of a sealed compute (~3.3 KB),
// on raw node:http and on Koa, and raw node:http that also writes a durable LevelDB batch per request shaped like a
// seal's (result, envelope, chain row, wallet; group-committed, fsync, one batch in flight, as the Store does).
// Targets run side by side and take their seconds in turns (as compute.ts does). Linux: server CPU from /proc.
// Prints one JSON line. Usage: npx tsx scripts/bench/ceiling.ts [--duration 10] [--connections 50] [--rounds 5]
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { numberArg, processCpuMs, startProcess, stop } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

/** A JSON body of a sealed compute's size (3,339 bytes in the quick start), the same for every request. */
const BODY = Buffer.from(JSON.stringify({ ok: true, filler: 'x'.repeat(3300) }).slice(0, 3339 - 2) + '"}');

async function serve(mode: string): Promise<void> {
  let handler: http.RequestListener;
  let cleanUp = async (): Promise<void> => {};
  if (mode === 'koa') {
    const Koa = (await import('koa')).default;
    const app = new Koa();
    app.use(async (ctx) => {
      const chunks: Buffer[] = [];
      for await (const c of ctx.req) chunks.push(c as Buffer);
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      ctx.type = 'application/json';
      ctx.body = BODY;
    });
    handler = app.callback();
  } else {
    const { Level } = await import('level');
    const dir = mkdtempSync(join(tmpdir(), 'svc-ceiling-'));
    const db = mode === 'durable' ? new Level<string, Buffer>(dir, { valueEncoding: 'buffer' }) : null;
    await db?.open();
    // Closed before its directory goes: LevelDB's own threads may still be writing files in it.
    cleanUp = async () => {
      await db?.close();
      rmSync(dir, { recursive: true, force: true });
    };
    let queue: { key: string; res: http.ServerResponse }[] = [];
    let writing = false;
    let n = 0;
    const flush = (): void => {
      if (writing || queue.length === 0 || db === null) return;
      writing = true;
      const group = queue;
      queue = [];
      const batch = db.batch();
      for (const { key } of group) {
        batch.put(`r!${key}`, BODY);
        batch.put(`e!${key}`, BODY.subarray(0, 400));
        batch.put(`c!${key}`, BODY.subarray(0, 300));
        batch.put('w!wallet', BODY.subarray(0, 60));
      }
      void batch.write({ sync: true }).then(() => {
        writing = false;
        for (const { res } of group) res.end(BODY);
        flush();
      });
    };
    handler = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': BODY.length });
        if (db === null) return res.end(BODY);
        queue.push({ key: String(++n).padStart(12, '0'), res });
        flush();
      });
    };
  }
  const server = http.createServer(handler).listen(0, '127.0.0.1', () => {
    const addr = server.address() as { port: number };
    console.log(JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${addr.port}` }));
  });
  process.on('SIGTERM', () => {
    server.close();
    void cleanUp().finally(() => process.exit(0));
  });
}

if (process.env.CEILING_SERVER) {
  await serve(process.env.CEILING_SERVER);
} else {
  const duration = numberArg('duration', 10);
  const connections = numberArg('connections', 50);
  const rounds = Math.max(1, Math.floor(numberArg('rounds', 5)));
  const start = (mode: string) => startProcess(process.execPath, [...process.execArgv, import.meta.filename], { CEILING_SERVER: mode });
  const body = JSON.stringify({ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } });
  const modes = ['raw', 'koa', 'durable'] as const;
  const targets = [];
  for (const mode of modes) targets.push({ mode, ...(await start(mode)), ok: 0, seconds: 0, serverMs: 0 as number | null, clientMs: 0 });
  const load = (url: string, seconds: number) =>
    autocannon({ url, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections, duration: seconds });
  try {
    for (const t of targets) await load(t.url, 2);
    for (let r = 0; r < rounds; r++) {
      for (const t of targets) {
        const s0 = processCpuMs(t.child.pid!);
        const c0 = process.cpuUsage();
        const res = await load(t.url, duration / rounds);
        const c = process.cpuUsage(c0);
        const s1 = processCpuMs(t.child.pid!);
        t.ok += res['2xx'];
        t.seconds += duration / rounds;
        t.serverMs = t.serverMs === null || s0 === null || s1 === null ? null : t.serverMs + (s1 - s0);
        t.clientMs += (c.user + c.system) / 1000;
      }
    }
  } finally {
    await Promise.all(targets.map((t) => stop(t.child)));
  }
  const out: Record<string, unknown> = {};
  for (const t of targets) {
    out[`${t.mode}Rps`] = Math.round(t.ok / t.seconds);
    out[`${t.mode}ServerUsPerRequest`] = t.serverMs === null ? null : Math.round((t.serverMs * 1000) / t.ok);
  }
  const clientMs = targets.reduce((n, t) => n + t.clientMs, 0);
  const ok = targets.reduce((n, t) => n + t.ok, 0);
  console.log(
    JSON.stringify({ ...out, autocannonUsPerRequest: Math.round((clientMs * 1000) / ok), bodyBytes: BODY.length, connections, durationS: duration, rounds }),
  );
}
