// The app (src/http/app.ts) as a seam: it registers the route groups it is given, in their order, each with the kit;
// it adds QUERY to the listed read routes and answers 404 (with the kit's discovery) and 405 itself.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.js';
import type { HttpKit } from '../../src/http/kit.js';
import type { RouteGroup } from '../../src/http/route-group.js';
import { HungHomes } from '../../src/http/home-health.js';
import { SelfApi } from '../../src/http/self-request.js';
import type { IdentityService } from '../../src/identity/service.js';
import { loadConfig } from '../../src/config/load.js';
import { systemClock } from '../../src/kernel/clock.js';
import { timeOf } from '../../src/util/time.js';

const kit: HttpKit = {
  config: loadConfig({ env: {} }),
  logger: pino({ level: 'silent' }),
  time: timeOf(systemClock),
  nodeId: () => 'node-a',
  publicUrl: () => 'http://node-a',
  auth: { identity: {} as IdentityService, nodeId: () => 'node-a' },
  homes: { peerUrl: () => null, overMesh: null, hung: new HungHomes() },
  signMeshEvent: () => Promise.reject(new Error('no mesh here')),
  selfApi: new SelfApi(),
  discovery: (router) => ({ routes: router.stack.map((l) => String(l.path)) }),
};

/** A group that answers its paths with its name and records the kit it was given. */
function group(name: string, paths: string[], seen: HttpKit[]): RouteGroup {
  return {
    name,
    register(router, k) {
      seen.push(k);
      for (const path of paths)
        router.post(path, (ctx) => {
          ctx.body = { group: name, node: k.nodeId() };
        });
    },
  };
}

describe('createApp(kit, groups)', () => {
  const seen: HttpKit[] = [];
  const { app, router } = createApp(kit, [group('first', ['/api/x/literal', '/api/svc/verify'], seen), group('second', ['/api/x/:param'], seen)]);
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    kit.selfApi.close();
  });

  it('registers the groups in the order given, each with the kit', async () => {
    expect(seen).toEqual([kit, kit]);
    expect(router.stack.filter((l) => l.methods.includes('POST')).map((l) => l.path)).toEqual(['/api/x/literal', '/api/svc/verify', '/api/x/:param']);
    // The literal path, registered first, answers before the parameter.
    const r = await fetch(`${url}/api/x/literal`, { method: 'POST' });
    expect(await r.json()).toEqual({ group: 'first', node: 'node-a' });
  });

  it('adds QUERY to a listed read route that a group registered', async () => {
    const r = await fetch(`${url}/api/svc/verify`, { method: 'QUERY' });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ group: 'first', node: 'node-a' });
  });

  it('answers 405 with Allow, and 404 with the kit’s discovery of this router', async () => {
    const wrong = await fetch(`${url}/api/x/literal`, { method: 'GET' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('POST');
    const none = await fetch(`${url}/api/nowhere`);
    expect(none.status).toBe(404);
    const body = (await none.json()) as { error: { code: string }; discovery: unknown };
    expect(body.error.code).toBe('SVC_NOT_FOUND');
    expect(body.discovery).toEqual(kit.discovery(router));
  });
});
