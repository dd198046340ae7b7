// docs/operating.md's nginx block, run: nginx (when /usr/sbin/nginx exists; .ci/run installs nginx-light) starts
// with the block as written, its TLS lines aside and its listen and upstream ports pointed at 127.0.0.1, in front of
// a real node. Through it: a JSON answer, the pulse's server-sent events as they come (proxy_buffering off), and a
// WebSocket stream upgraded end to end (the subscribed frame, then a sealed tick).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { tempDirs } from '../helpers/cli.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { SseClient } from '../helpers/sse.js';
import { waitUntil } from '../helpers/wait.js';
import { freePort } from '../helpers/free-port.js';

const NGINX = '/usr/sbin/nginx';
const ROOT = join(import.meta.dirname, '..', '..');

/** The block between the nginx-snippet markers of docs/operating.md. */
function nginxSnippet(): string {
  const doc = readFileSync(join(ROOT, 'docs/operating.md'), 'utf8');
  const m = /<!-- nginx-snippet -->\s*```nginx\n([\s\S]*?)```\s*<!-- \/nginx-snippet -->/.exec(doc);
  if (!m) throw new Error('docs/operating.md has no nginx block between its markers');
  return m[1]!;
}

const tempDir = tempDirs('svc-nginx-');
let t: TestNode;
let nginx: ChildProcess | null = null;
let proxy = '';

describe.skipIf(!existsSync(NGINX))('docs/operating.md: the node behind nginx', () => {
  beforeAll(async () => {
    t = await startTestNode();
    const port = await freePort();
    const nodePort = new URL(t.url).port;
    const block = nginxSnippet()
      .replace(/^\s*ssl_certificate.*\n/gm, '')
      .replace(/listen 443 ssl;/, `listen 127.0.0.1:${port};`)
      .replace('server 127.0.0.1:8787;', `server 127.0.0.1:${nodePort};`);
    expect(block).toContain(`server 127.0.0.1:${nodePort};`);
    const prefix = await tempDir();
    await mkdir(join(prefix, 'logs'));
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `${k}_temp_path ${join(prefix, k)};`).join('\n  ');
    const conf = `daemon off;\nmaster_process off;\npid ${join(prefix, 'nginx.pid')};\nerror_log ${join(prefix, 'logs/error.log')} warn;\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n  ${temp}\n${block}\n}\n`;
    await writeFile(join(prefix, 'nginx.conf'), conf);
    nginx = spawn(NGINX, ['-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    nginx.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    proxy = `http://127.0.0.1:${port}`;
    await waitUntil(
      async () => {
        if (nginx!.exitCode !== null) throw new Error(`nginx exited ${nginx!.exitCode}: ${stderr}`);
        return fetch(`${proxy}/api/health`).then(
          (r) => r.ok,
          () => false,
        );
      },
      'nginx in front of the node',
      10_000,
    );
  }, 60_000);
  afterAll(async () => {
    nginx?.kill('SIGTERM');
    await t?.destroy();
  });

  it('passes a JSON answer, the SSE pulse as it comes, and a WebSocket stream', async () => {
    const health = await call(proxy, 'GET', '/api/health');
    expect(health.status).toBe(200);
    expect(health.body.node).toBe(t.node.nodeId);

    // Server-sent events: two pulse events arrive while the stream stays open (nginx would hold them if it buffered).
    const sse = await new SseClient(`${proxy}/api/svc/pulse/stream`).connect();
    expect(sse.status).toBe(200);
    await waitUntil(() => sse.events.length >= 2, 'two pulse events through nginx', 10_000);
    expect(JSON.parse(sse.events[0]!.data)).toHaveProperty('svcond');
    await sse.close();

    // WebSocket: upgraded through the proxy; the subscribed frame, then the frame of a tick sealed through it.
    const who = await zkIdentity(proxy, 'nginx-stream');
    const created = await call(proxy, 'POST', '/api/svc/streams', { solver: 'lorenz', inputs: { t_end: 0.5 }, autotick: false }, bearer(who.key));
    expect(created.status, created.text).toBe(201);
    const frames: string[] = [];
    const ws = new WebSocket(`${proxy.replace(/^http/, 'ws')}/ws/stream?channel=${created.body.id}&key=${created.body.key}`);
    ws.on('message', (d: Buffer) => frames.push(d.toString()));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await waitUntil(() => frames.length >= 1, 'the subscribed frame', 10_000);
    expect(JSON.parse(frames[0]!)).toEqual({ subscribed: created.body.id, tick_count: 0 });
    const tick = await call(proxy, 'POST', `/api/svc/streams/${created.body.id}/tick`, undefined, bearer(created.body.key));
    expect(tick.status, tick.text).toBe(200);
    await waitUntil(() => frames.length >= 2, 'the sealed tick frame', 10_000);
    // The frame is the sealed envelope the tick answered with.
    expect(frames[1]).toBe(tick.text);
    ws.close();
  }, 60_000);
});
