// A node killed (SIGKILL) with webhook deliveries owed (attempts out, receiver not answering yet) delivers every one of
// them after a restart on the same data dir: the outbox was written in each seal's batch, and an attempt whose outcome
// was not written is made again. Each delivery id arrives at least once and the same id each time (deduplicable).
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess } from '../../scripts/bench/lib.js';
import { bearer, call, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { startReceiver, until, type Receiver } from './receiver.js';

const ROOT = join(import.meta.dirname, '..', '..');
let child: ChildProcess | null = null;
let dir = '';
let rx: Receiver | null = null;
let restarted: TestNode | null = null;
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await restarted?.stop().catch(() => undefined);
  await rx?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('webhook deliveries owed across a SIGKILL', () => {
  it('are all delivered after the restart, each delivery id at least once', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-wh-crash-'));
    rx = await startReceiver();
    rx.mode = 'hang';
    const first = await startProcess(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/index.ts'), 'start'], {
      SVC_HOST: '127.0.0.1',
      SVC_PORT: '0',
      SVC_DATA_DIR: dir,
      SVC_SYNC_WRITES: 'true',
      SVC_SOLVER_THREADS: '0',
      SVC_SEAL_WORKER: 'false',
      SVC_LOG_LEVEL: 'info',
      SVC_WEBHOOK_ALLOW_LOOPBACK: 'true',
    });
    child = first.child;
    const me = await zkIdentity(first.url, 'wh-crash');
    const hook = await call(first.url, 'POST', '/api/webhooks', { url: rx.url, events: ['computation.complete'] }, bearer(me.key));
    expect(hook.status).toBe(201);
    const results: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(
        first.url,
        'POST',
        '/api/svc/compute',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 1 + i } },
        bearer(me.key),
      );
      expect(r.status).toBe(200);
      results.push(r.body.result_id);
    }
    // Every delivery's first attempt is out and unanswered: the node dies with all three owed.
    await until(() => rx!.received.length === 3).catch(async (e) => {
      const d = await call(first.url, 'GET', `/api/webhooks/${hook.body.id}/deliveries`, undefined, bearer(me.key));
      throw new Error(`${e} received ${rx!.received.length} ${d.text}`);
    });
    const before = new Set(rx.received.map((r) => r.headers['webhook-id'] as string));
    expect(before.size).toBe(3);
    first.child.removeAllListeners('exit');
    const exited = new Promise<void>((r) => first.child.once('exit', () => r()));
    first.child.kill('SIGKILL');
    await exited;

    rx.mode = 'ok';
    restarted = await startTestNode({ webhooks: { allowLoopback: true } }, {}, dir);
    await until(
      () => new Set(rx!.received.filter((r) => r.json.delivery_attempt >= 1).map((r) => r.headers['webhook-id'])).size === 3 && rx!.received.length >= 6,
    );
    const after = rx.received.slice(3);
    for (const id of before) expect(after.some((r) => r.headers['webhook-id'] === id)).toBe(true);
    expect(new Set(after.map((r) => r.json.computation_id))).toEqual(new Set(results));
    const deliveries = await call(restarted.url, 'GET', `/api/webhooks/${hook.body.id}/deliveries`, undefined, bearer(me.key));
    await until(
      async () =>
        (await call(restarted!.url, 'GET', `/api/webhooks/${hook.body.id}/deliveries?status=delivered`, undefined, bearer(me.key))).body.deliveries.length ===
        3,
    );
    expect(deliveries.body.deliveries.map((d: { id: string }) => d.id).sort()).toEqual([...before].sort());
  });
});
