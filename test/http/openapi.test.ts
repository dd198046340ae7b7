// GET /api/openapi.json: a valid OpenAPI 3.1 document, generated from the router (every route in it), whose response
// schemas the node's real answers fit (ajv, JSON Schema 2020-12).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { bearer, call, startTestNode, zkIdentity, type Reply, type TestNode } from '../helpers/node.js';

type Json = Record<string, any>;

let t: TestNode;
let doc: Json;

beforeAll(async () => {
  // A mesh of one (with a secret): the oracle writes snapshots, so transparency answers are checked with content.
  t = await startTestNode({ mesh: { secret: 'openapi-test-secret-0123456789abcdef', p2pPort: 0, bootstrap: [], tickEvery: 1 } });
  const r = await call(t.url, 'GET', '/api/openapi.json');
  expect(r.status).toBe(200);
  doc = r.body;
}, 60_000);
afterAll(() => t?.destroy());

const template = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

/** The operation that answers method+path (a concrete path: parameters match any segment). */
function operationFor(method: string, path: string): Json {
  for (const [p, item] of Object.entries(doc.paths as Record<string, Json>)) {
    const re = new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (!re.test(path)) continue;
    const op = method === 'QUERY' ? item['x-query'] : item[method.toLowerCase()];
    if (op) return op;
  }
  throw new Error(`no operation for ${method} ${path}`);
}

describe('OpenAPI document', () => {
  it('validates as OpenAPI 3.1 and carries the part-7 error object and the security schemes', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await SwaggerParser.validate(structuredClone(doc) as never);
    expect(doc.components.schemas.Error.properties.error.required).toEqual(
      expect.arrayContaining(['code', 'message', 'trace_id', 'timestamp', 'documentation_url']),
    );
    expect(Object.keys(doc.components.securitySchemes)).toEqual(expect.arrayContaining(['bearerKey', 'queryKey', 'nodeHandshake', 'operatorToken']));
  });

  it('has every route of the router (QUERY under x-query), with its auth and declared request bodies', () => {
    const missing: string[] = [];
    let n = 0;
    for (const layer of t.node.router.stack) {
      for (const m of layer.methods) {
        if (m === 'HEAD') continue;
        n++;
        const item = doc.paths[template(String(layer.path))];
        const op = item?.[m === 'QUERY' ? 'x-query' : m.toLowerCase()];
        if (!op) missing.push(`${m} ${layer.path}`);
      }
    }
    expect(missing).toEqual([]);
    expect(n).toBeGreaterThan(80);
    const compute = doc.paths['/api/svc/compute'].post;
    expect(compute.security).toContainEqual({}); // anonymous allowed
    expect(compute.requestBody.content['application/json'].schema.additionalProperties).toBe(false);
    expect(doc.paths['/api/tally/balance'].get.security).toEqual([{ bearerKey: [] }, { queryKey: [] }]);
    expect(doc.paths['/api/mesh/gossip'].post.security).toEqual([{ nodeHandshake: [] }]);
    expect(doc.paths['/api/svc/lib-search']['x-query'].requestBody.content['application/json'].schema.properties.query.type).toBe('string');
    expect(doc.paths['/api/transparency/history'].get.parameters).toContainEqual(expect.objectContaining({ name: 'n', in: 'query' }));
    expect(doc.paths['/api/tally/envelopes/{zid}'].get.parameters[0]).toMatchObject({ name: 'zid', in: 'path', required: true });
  });

  it('declares the schema of every body and query a handler validates (walking the router)', () => {
    // A handler that calls validate(schema, ctx.request.body) / validate(schema, ctx.query) must have the same schema
    // declared with body() / query() in its middleware list, so the document shows it.
    const missing: string[] = [];
    let bodies = 0;
    for (const layer of t.node.router.stack) {
      const handler = String(layer.stack[layer.stack.length - 1]);
      for (const m of layer.methods) {
        if (m === 'HEAD') continue;
        const op = doc.paths[template(String(layer.path))]?.[m === 'QUERY' ? 'x-query' : m.toLowerCase()];
        if (/validate\)?\([^;]*ctx\.request\.body/.test(handler)) {
          bodies++;
          if (Object.keys(op?.requestBody?.content?.['application/json']?.schema ?? {}).length === 0) missing.push(`${m} ${layer.path} (body)`);
        }
        if (/validate\)?\([^;]*ctx\.query/.test(handler) && !(op?.parameters ?? []).some((p: Json) => p.in === 'query'))
          missing.push(`${m} ${layer.path} (query)`);
      }
    }
    expect(missing).toEqual([]);
    expect(bodies).toBeGreaterThan(50);
  });

  it('35 real answers fit their documented schemas', async () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ $id: 'doc', components: doc.components } as never);
    const check = (method: string, path: string, r: Reply): void => {
      const op = operationFor(method, path.split('?')[0]!);
      const resp = op.responses[String(r.status)] ?? op.responses.default;
      if (resp === undefined) throw new Error(`${method} ${path}: status ${r.status} not documented`);
      const schema = resp.$ref ? doc.components.schemas.Error : resp.content['application/json'].schema;
      if (r.status < 300) expect(Object.keys(schema).length, `${method} ${path} has a response schema`).toBeGreaterThan(0);
      const validateFn = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')));
      if (!validateFn(r.body)) throw new Error(`${method} ${path} ${r.status}: ${ajv.errorsText(validateFn.errors)}\n${r.text.slice(0, 400)}`);
    };
    const id = await zkIdentity(t.url, 'openapi');
    // A snapshot is written every 4 ticks (~3.1 s): wait for the first, so history and now have content to check.
    for (const end = Date.now() + 15_000; (await call(t.url, 'GET', '/api/transparency/now')).status !== 200;) {
      if (Date.now() > end) throw new Error('no transparency snapshot');
      await new Promise((r) => setTimeout(r, 200));
    }
    const key = bearer(id.key);
    const calls: [string, string, unknown?, Record<string, string>?][] = [
      ['GET', '/api/health'],
      ['GET', '/api'],
      ['GET', '/api/svc/pulse'],
      ['GET', '/api/tally/clock'],
      ['GET', '/api/demo-key'],
      ['GET', '/api/operators'],
      ['GET', '/api/operators/categories'],
      ['GET', '/api/kernel'],
      ['GET', '/api/system/capabilities'],
      ['POST', '/api/svc/lib-search', { query: 'heat' }],
      ['QUERY', '/api/svc/lib-search', { query: 'wave', limit: 2 }],
      ['GET', '/api/tally/costs'],
      ['GET', '/api/tally/tiers'],
      ['GET', '/api/mesh/status'],
      ['GET', '/api/mesh/peers'],
      ['GET', '/api/transparency/history?n=3'],
      ['GET', '/api/transparency/now'],
      ['GET', '/api/mesh/events?limit=5'],
      ['GET', '/api/tally/consensus?limit=5'],
      ['GET', '/api/contribute/policy'],
      ['GET', '/api/auth/whoami', undefined, key],
      ['GET', '/api/tally/balance', undefined, key],
      ['GET', '/api/contribute/status', undefined, key],
      ['GET', `/api/chain/${id.slug}/pohc/validate`, undefined, key],
      ['POST', '/api/svc-auth/register-v3', { equation_sha256: 'ab'.repeat(32) }],
      // errors: the part-7 object
      ['POST', '/api/svc/compute', { domain: 'mechanics', operators: 'KO42', extra: 1 }],
      ['GET', '/api/tally/balance'],
      ['GET', '/api/tally/balance', undefined, bearer('sk_not_a_key')],
      ['GET', '/api/nowhere'],
      ['DELETE', '/api/health'],
      ['POST', '/api/svc/lib-search', '{"query": '],
      ['POST', '/api/svc/shift', { variance: 1 }],
      ['GET', '/api/dns/resolve'],
      ['GET', '/api/transparency/history?n=0'],
    ];
    let checked = 0;
    for (const [m, p, b, h] of calls) {
      const r = await call(t.url, m, p, b, h);
      if (p === '/api/nowhere' || m === 'DELETE') {
        // Not a route: the error object, checked against the component directly.
        expect(r.status).toBeGreaterThanOrEqual(400);
        const v = ajv.getSchema('doc#/components/schemas/Error')!;
        expect(v(r.body), JSON.stringify(v.errors)).toBe(true);
      } else check(m, p, r);
      checked++;
    }
    const compute = await call(
      t.url,
      'POST',
      '/api/svc/compute',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      key,
    );
    expect(compute.status).toBe(200);
    check('POST', '/api/svc/compute', compute);
    const verified = await call(t.url, 'POST', '/api/svc/verify', compute.body, key);
    expect(verified.body.valid).toBe(true);
    check('POST', '/api/svc/verify', verified);
    const proof = await call(t.url, 'POST', '/api/svc/prove', {});
    check('POST', '/api/svc/prove', proof);
    check('POST', '/api/svc/prove/verify', await call(t.url, 'POST', '/api/svc/prove/verify', proof.body));
    const ok = async (m: string, p: string, b?: unknown): Promise<void> => {
      const r = await call(t.url, m, p, b, key);
      expect(r.status, `${m} ${p}: ${r.text}`).toBeLessThan(300);
      check(m, p, r);
    };
    // A reactor (a stateful solver): open (201), one step, its state.
    const opened = await call(t.url, 'POST', '/api/svc/reactor', { solver: 'lorenz', inputs: { t_end: 0.1 } }, key);
    expect(opened.status, opened.text).toBe(201);
    check('POST', '/api/svc/reactor', opened);
    const stepped = await call(t.url, 'POST', '/api/svc/reactor/step', { id: opened.body.id }, key);
    expect(stepped.status, stepped.text).toBe(200);
    check('POST', '/api/svc/reactor/step', stepped);
    await ok('POST', '/api/svc/reactor/state', { id: opened.body.id });
    // A webhook: registered (201, its secret shown once), listed, read, updated.
    const hook = await call(t.url, 'POST', '/api/webhooks', { url: 'https://example.com/hook', events: ['webhook.test'] }, key);
    expect(hook.status, hook.text).toBe(201);
    check('POST', '/api/webhooks', hook);
    await ok('GET', '/api/webhooks');
    await ok('GET', `/api/webhooks/${hook.body.id}`);
    await ok('PATCH', `/api/webhooks/${hook.body.id}`, { metadata: { app: 'openapi' } });
    await ok('GET', `/api/chain/${id.slug}/checkpoint`);
    await ok('POST', '/api/svc/shift', { variance: 1, phase: 0.25 });
    expect(checked + 4).toBeGreaterThanOrEqual(35);
  }, 60_000);

  it('serves the reference page and its renderer from this node', async () => {
    const page = await call(t.url, 'GET', '/api/docs');
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain('/api/openapi.json');
    expect(page.text).not.toMatch(/https?:\/\/(?!svc\.local)/);
    const js = await fetch(`${t.url}/api/docs/swagger-ui-bundle.js`);
    expect(js.status).toBe(200);
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    expect((await call(t.url, 'GET', '/api/docs/..%2Fpackage.json')).status).toBe(404);
  });
});

describe('openApiDocument', () => {
  it('documents a route registered the standard way with no edit to the generator', async () => {
    const { default: Router } = await import('@koa/router');
    const { z } = await import('zod');
    const { openApiDocument } = await import('../../src/http/openapi.js');
    const { body, query, responds } = await import('../../src/http/validate.js');
    const router = new Router();
    const thing = z.object({ name: z.string().min(1), size: z.number().int().default(1) }).strict();
    router.post('/api/things/:id', body(thing), responds(z.object({ ok: z.boolean() }), { status: 201 }), (ctx) => {
      ctx.body = { ok: true };
    });
    router.get('/api/things', query(z.object({ limit: z.coerce.number().int().max(9).default(3) })), (ctx) => {
      ctx.body = [];
    });
    const d = openApiDocument(router, { title: 't', version: '1' }) as Json;
    const op = d.paths['/api/things/{id}'].post;
    expect(op.requestBody.content['application/json'].schema).toMatchObject({ properties: { name: { type: 'string', minLength: 1 } }, required: ['name'] });
    expect(op.responses['201'].content['application/json'].schema.properties.ok.type).toBe('boolean');
    expect(op.security).toEqual([]);
    expect(d.paths['/api/things'].get.parameters).toEqual([expect.objectContaining({ name: 'limit', in: 'query', required: false })]);
    await SwaggerParser.validate(structuredClone(d) as never);
  });
});
