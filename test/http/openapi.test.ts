// GET /api/openapi.json: a valid OpenAPI 3.1 document, generated from the router (every route in it), whose response
// schemas the node's real answers fit (ajv, JSON Schema 2020-12).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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

/** The operation that answers method+path (a concrete path: parameters match any segment; literal paths first). */
function operationAt(method: string, path: string): { op: Json; template: string } {
  const entries = Object.entries(doc.paths as Record<string, Json>).sort(([a], [b]) => (a.includes('{') ? 1 : 0) - (b.includes('{') ? 1 : 0));
  for (const [p, item] of entries) {
    const re = new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (!re.test(path)) continue;
    const op = method === 'QUERY' ? item['x-query'] : item[method.toLowerCase()];
    if (op) return { op, template: p };
  }
  throw new Error(`no operation for ${method} ${path}`);
}

/** Operations whose answers the tests below checked against the document, as `METHOD /template`. */
const checkedOperations = new Set<string>();
let ajv: Ajv2020 | undefined;

/** The answer fits the schema the document gives its status; a success status must be declared, not fall to default. */
function check(method: string, path: string, r: Reply): void {
  if (ajv === undefined) {
    ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ $id: 'doc', components: doc.components } as never);
  }
  const { op, template: tpl } = operationAt(method, path.split('?')[0]!);
  const resp = op.responses[String(r.status)] ?? (r.status >= 400 ? op.responses.default : undefined);
  if (resp === undefined)
    throw new Error(`${method} ${path}: status ${r.status} not documented (${Object.keys(op.responses).join(', ')})\n${r.text.slice(0, 400)}`);
  checkedOperations.add(`${method} ${tpl}`);
  if (r.status === 204) return;
  const schema = resp.$ref ? doc.components.schemas.Error : resp.content['application/json'].schema;
  if (r.status < 300) expect(Object.keys(schema).length, `${method} ${path} has a response schema`).toBeGreaterThan(0);
  const validateFn = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')));
  if (!validateFn(r.body)) throw new Error(`${method} ${path} ${r.status}: ${ajv.errorsText(validateFn.errors)}\n${r.text.slice(0, 600)}`);
}

describe('OpenAPI document', () => {
  it('validates as OpenAPI 3.1 and carries the part-7 error object and the security schemes', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // Part 9: the published description is interface 1.287.0; the kernel says its own version beside it.
    expect(doc.info).toMatchObject({ version: '1.287.0', 'x-kernel-version': '1.287.6' });
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
        const v = new Ajv2020({ strict: false, validateFormats: false }).compile(doc.components.schemas.Error);
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

  it('no success answer or request body of any operation has an empty schema; success statuses are declared', () => {
    const empty: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item)) {
        const successes = Object.keys(op.responses).filter((st) => st.startsWith('2'));
        if (successes.length === 0) empty.push(`${method} ${path}: no success status`);
        for (const st of successes) {
          const content = op.responses[st].content;
          if (st === '204') continue;
          const schema = content?.['application/json']?.schema ?? content?.[Object.keys(content ?? {})[0] ?? '']?.schema;
          if (!schema || Object.keys(schema).length === 0) empty.push(`${method} ${path} ${st}`);
        }
        const body = op.requestBody?.content?.['application/json']?.schema;
        if (op.requestBody && Object.keys(body ?? {}).length === 0) empty.push(`${method} ${path} (request body)`);
        expect(op.operationId, `${method} ${path}`).not.toMatch(/^(query){2}|^(post){2}/);
      }
    }
    expect(empty).toEqual([]);
    // Creations answer 201, accepted work 202: declared as answered.
    expect(Object.keys(doc.paths['/api/chain/state-machines'].post.responses)).toContain('201');
    expect(Object.keys(doc.paths['/api/svc/streams'].post.responses)).toContain('201');
    expect(Object.keys(doc.paths['/api/svc/batch'].post.responses)).toContain('202');
    expect(doc.paths['/api/svc/batch'].post.responses['200']).toBeUndefined();
    expect(doc.paths['/api/svc/lib-search']['x-query'].operationId).toBe('queryApiSvcLibSearch');
    // Only the formats JSON Schema defines (a prefix is a pattern).
    const formats = [...JSON.stringify(doc).matchAll(/"format":"([^"]+)"/g)].map((m) => m[1]);
    expect(formats.filter((f) => !['email', 'uri', 'date-time', 'uuid', 'int32', 'int64', 'double', 'float'].includes(f!))).toEqual([]);
    // A solver route's body is the solver's own input schema, as its MCP tool's arguments.
    const heat = doc.paths['/api/svc/heat'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(heat.properties)).toEqual(expect.arrayContaining(['mode', 'length_m']));
  });

  it('real answers of the operations a client calls fit their documented schemas and statuses', async () => {
    const me = await zkIdentity(t.url, 'openapi-replay');
    const key = bearer(me.key);
    const admin = bearer(me.adminKey);
    const ok = async (m: string, p: string, b?: unknown, h: Record<string, string> = key, status?: number): Promise<Reply> => {
      const r = await call(t.url, m, p, b, h);
      if (status !== undefined) expect(r.status, `${m} ${p}: ${r.text}`).toBe(status);
      else expect(r.status, `${m} ${p}: ${r.text}`).toBeLessThan(300);
      check(m, p, r);
      return r;
    };
    // Identity: v1 register and session, keys, demo keys.
    await ok('POST', '/api/auth/register', { email: 'replay@example.com', password: 'correct horse battery' }, {}, 201);
    const login = await ok('POST', '/api/auth/login', { email: 'replay@example.com', password: 'correct horse battery' }, {});
    const cookie = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0]! };
    await ok('POST', '/api/auth/verify', undefined, cookie);
    await ok('POST', '/api/auth/session-key', undefined, cookie);
    await ok('POST', '/api/auth/api-key', { kind: 'sk_test' }, cookie, 201);
    await ok('GET', '/api/auth/salt/replay@example.com', undefined, {});
    await ok('POST', '/api/auth/logout', undefined, cookie);
    await ok('POST', '/api/demo-key/mint', undefined, {}, 201);
    const minted = await ok('POST', '/api/auth/keys', { kind: 'sk_test' }, key, 201);
    await ok('GET', '/api/auth/keys');
    await ok('DELETE', `/api/auth/keys/${minted.body.key_id}`);
    // Compute: the library, a sweep, a routed question, a playground run, solver routes.
    await ok('POST', '/api/svc/operator-spec', { operator: 'MECH_KINETIC_ENERGY' }, {});
    await ok('POST', '/api/svc/operator-spec', { domain: 'mechanics' }, {});
    await ok('POST', '/api/svc/operator-spec', { solver: 'heat' }, {});
    await ok('POST', '/api/svc/lattice', {
      domain: 'mechanics',
      operators: ['KO42', 'MECH_KINETIC_ENERGY'],
      inputs: { mass_kg: 2 },
      sweep: { key: 'velocity_m_s', from: 1, to: 3, points: 3 },
    });
    await ok('POST', '/api/svc/auto', { query: 'heat diffusion in a copper rod' });
    await ok('POST', '/api/playground/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } });
    const zeta = await ok('POST', '/api/svc/zeta', { n: 3, count: 1 });
    await ok('POST', '/api/svc/heat', {});
    // The record of this node's results, and a result looked up by a peer.
    await ok('GET', '/api/tally/settings/publish-default');
    await ok('POST', '/api/tally/settings/publish-default', { publish_default: true });
    await ok('GET', '/api/tally/record?limit=2');
    await ok('GET', `/api/mesh/results/${zeta.body.result_id}`, undefined, {});
    // The wallet: usage, envelopes, folders, a folder move, the claim's standing, an operator grant.
    await ok('GET', '/api/compute/usage');
    const envelopes = await ok('GET', `/api/tally/envelopes/${me.zid}?limit=5`);
    await ok('GET', `/api/tally/envelopes/${me.zid}/folders`);
    await ok('POST', '/api/tally/envelopes/folder', { folder: 'kept', token_ids: [envelopes.body.items[0].token_id] });
    await ok('GET', '/api/tally/claim');
    const operator = bearer(readFileSync(join(t.dataDir, 'operator-token'), 'utf8').trim());
    await ok('POST', '/api/tally/grants', { zid: me.zid, credits: 500, tier: 'standard' }, operator, 201);
    // State machines: create, events, a contract and a transition, settings, tallies, embed keys, proofs, export.
    const machine = await ok('POST', '/api/chain/state-machines', { slug: 'openapi-replay' }, key, 201);
    const slug = machine.body.slug as string;
    await ok('POST', `/api/chain/${slug}/events`, { payload: { note: 'one' } }, key, 201);
    const gate = {
      name: 'gate',
      states: ['closed', 'open'],
      initial: 'closed',
      variables: { opened: 0 },
      transitions: [
        { from: 'closed', on: 'open', to: 'open', effects: [{ add: 'opened', by: { value: 1 } }] },
        { from: 'open', on: 'close', to: 'closed' },
      ],
    };
    const contract = await ok('POST', `/api/chain/${slug}/contracts`, gate, key, 201);
    await ok('GET', `/api/chain/${slug}/contracts`);
    await ok('GET', `/api/chain/${slug}/contracts/${contract.body.contract_id}`);
    await ok('POST', `/api/chain/${slug}/contracts/${contract.body.contract_id}/transition`, { event: { type: 'open' } });
    await ok('GET', `/api/chain/${slug}/settings`);
    await ok('PATCH', `/api/chain/${slug}/settings`, { is_public: true });
    await ok('GET', `/api/chain/${slug}/explore`);
    await ok('GET', `/api/chain/${slug}/tally/charges`);
    await ok('GET', `/api/chain/${slug}/tally/summary`);
    const embed = await ok('POST', `/api/chain/${slug}/embed-keys`, {}, key, 201);
    await ok('POST', `/api/chain/${slug}/embed`, { payload: { reading: 1 } }, bearer(embed.body.embed_key), 201);
    await ok('GET', `/api/chain/${slug}/proof/inclusion?seq=1`);
    await ok('GET', `/api/chain/${slug}/proof/consistency?from=1`);
    await ok('GET', `/api/chain/${slug}/export`);
    await ok('GET', '/api/chain/aggregate/list');
    await ok('GET', '/api/chain/forks', undefined, {});
    await ok('GET', `/api/mesh/machines/${slug}`, undefined, {});
    // Mesh: identity checks, names, the oracle's figures.
    await ok('GET', `/api/mesh/identity/${me.zid}`, undefined, {});
    await ok('POST', '/api/mesh/verify', { zid: me.zid }, {});
    await ok('POST', '/api/dns/register', { name: 'openapi-replay' }, key, 201);
    await ok('GET', '/api/dns/resolve?name=openapi-replay', undefined, {});
    await ok('GET', `/api/dns/lookup?peerId=${t.node.nodeId}`, undefined, {});
    await ok('GET', '/api/dns/status', undefined, {});
    await ok('GET', '/api/transparency/breakdown', undefined, {});
    await ok('GET', '/api/transparency/revenue', undefined, {});
    // MCP and chat (the offline assistant).
    await ok('GET', '/api/mcp', undefined, {});
    await ok('POST', '/api/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...key, accept: 'application/json, text/event-stream' });
    await ok('POST', '/api/llm/chat', { messages: [{ role: 'user', content: 'heat diffusion in a copper rod' }] });
    await ok('GET', '/api/svc/llm/credentials');
    // A reactor's reads.
    const reactor = await ok('POST', '/api/svc/reactor', { solver: 'lorenz', inputs: { t_end: 0.1 } }, key, 201);
    await ok('POST', '/api/svc/reactor/step', { id: reactor.body.id });
    for (const read of ['observe', 'telemetry', 'next']) await ok('POST', `/api/svc/reactor/${read}`, { id: reactor.body.id });
    await ok('POST', '/api/svc/reactor/trajectory', { id: reactor.body.id });
    // MMIO, genesis, agents.
    await ok('GET', '/api/svc/mmio', undefined, {});
    await ok('GET', '/api/svc/mmio/registers');
    await ok('POST', '/api/genesis/execute', { document: { slug: 'openapi-genesis', events: [{ type: 'note', payload: 'first' }] } }, key, 201);
    await ok('POST', '/api/genesis/execute', { document: { slug: 'openapi-genesis', events: [{ type: 'note', payload: 'first' }] } }, key, 200);
    const program = {
      every: 1000,
      step: { kind: 'compute', domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
    };
    const agent = await ok('POST', '/api/svc/agent/spawn', { program }, key, 201);
    await ok('GET', '/api/svc/agent/list');
    await ok('GET', `/api/svc/agent/${agent.body.id}`);
    await ok('POST', `/api/svc/agent/${agent.body.id}/kill`);
    // Streams: open, read, tick, latest, a pull link and its pull and verify, a secure session, autotick, close.
    const channel = await ok(
      'POST',
      '/api/svc/streams',
      { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
      key,
      201,
    );
    const ch = `/api/svc/streams/${channel.body.id}`;
    await ok('GET', `${ch}/latest`, undefined, key, 204);
    const ticked = await ok('POST', `${ch}/tick`);
    await ok('GET', ch);
    await ok('GET', `${ch}/latest`, undefined, key, 200);
    const link = await ok('POST', `${ch}/link`, {}, key, 201);
    await ok('GET', `${ch}/pull?sig=${encodeURIComponent(link.body.sig)}`, undefined, {}, 200);
    await ok('POST', `${ch}/verify?sig=${encodeURIComponent(link.body.sig)}`, ticked.body, {});
    const { publicKey } = generateKeyPairSync('x25519');
    const secure = await ok('POST', `${ch}/secure/open`, { client_public_key: publicKey.export({ format: 'jwk' }).x }, key, 201);
    await ok('GET', `${ch}/secure/pull?session=${encodeURIComponent(secure.body.session)}`, undefined, {}, 200);
    await ok('PATCH', ch, { autotick: false });
    await ok('POST', `${ch}/close`);
    const second = await ok('POST', '/api/svc/stream/channels', { solver: 'heat' }, key, 201);
    await ok('DELETE', `/api/svc/streams/${second.body.id}`);
    // Webhooks: a test delivery, the deliveries, delete.
    const hook = await ok('POST', '/api/webhooks', { url: 'https://example.com/replay', events: ['webhook.test'] }, key, 201);
    await ok('POST', `/api/webhooks/${hook.body.id}/test`, undefined, key, 202);
    await ok('GET', `/api/webhooks/${hook.body.id}/deliveries`);
    await ok('DELETE', `/api/webhooks/${hook.body.id}`);
    // A batch: accepted, then its status.
    const batch = await ok('POST', '/api/svc/batch', { items: [{ domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }] }, key, 202);
    await ok('GET', `/api/svc/batch/${batch.body.id}`);
    // Consensus: the protocol, the machine's own keys on its own machine.
    await ok('GET', '/api/protocol/pohc', undefined, {});
    await ok('GET', `/api/chain/${me.slug}/explore`, undefined, admin);
    await ok('GET', '/api/openapi.json', undefined, {});
    expect(checkedOperations.size).toBeGreaterThanOrEqual(90);
  }, 90_000);

  it('serves the reference page and its renderer from this node', async () => {
    const page = await call(t.url, 'GET', '/api/docs');
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain('/api/openapi.json');
    expect(page.text).not.toMatch(/https?:\/\/(?!svc\.local)/);
    const js = await fetch(`${t.url}/api/docs/swagger-ui-bundle.js`);
    expect(js.status).toBe(200);
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
    expect((await call(t.url, 'GET', '/api/docs/..%2Fpackage.json')).status).toBe(404);
    // A name of an Object.prototype member is no asset (it was looked up on a plain object, and answered 500).
    for (const path of ['/api/docs/constructor', '/api/docs/hasOwnProperty', '/dashboard/constructor', '/dashboard/toString']) {
      const r = await call(t.url, 'GET', path);
      expect([r.status, r.body.error?.code], path).toEqual([404, 'SVC_NOT_FOUND']);
    }
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
