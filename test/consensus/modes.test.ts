// Contribution modes on one real node over HTTP (spec 4.7 and part 3's mode row; architecture.md §6): idle |
// contributing (experimenting is refused: docs/decisions.md); contributing needs a bond (403 with the reason); one
// mode at a time, a switch replaces it; persisted across a restart; a release returns a contributing identity to idle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, operatorBond, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

const BOND = 2;
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} };
const overrides = {
  solverThreads: 0,
  sealWorker: false,
  contribution: { bondEnvelopes: BOND, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' },
};

let n: TestNode;
let id: { zid: string; key: string };

const mode = (m: unknown) => call(n.url, 'POST', '/api/contribute/mode', { mode: m }, bearer(id.key));
const status = async () => (await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(id.key))).body;

beforeAll(async () => {
  n = await startTestNode(overrides);
  id = await zkIdentity(n.url, 'modes');
}, 60_000);
afterAll(async () => {
  await n?.destroy();
});

describe('POST /api/contribute/mode', () => {
  it('needs a key, and a mode of the three', async () => {
    expectError(await call(n.url, 'POST', '/api/contribute/mode', { mode: 'idle' }), 401, 'SVC_NO_KEY');
    expect(expectError(await mode('racing'), 400, 'SVC_INVALID_INPUT').field).toBe('mode');
    expectError(await call(n.url, 'POST', '/api/contribute/mode', {}, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    expectError(await call(n.url, 'POST', '/api/contribute/mode', { mode: 'idle', extra: 1 }, bearer(id.key)), 400, 'SVC_INVALID_INPUT');
    expect((await status()).mode).toBe('idle');
  });

  it('contributing without a bond: 403 SVC_NO_BOND with the reason; the mode stays', async () => {
    const e = expectError(await mode('contributing'), 403, 'SVC_NO_BOND');
    expect(e.message).toContain('bond');
    expect((await status()).mode).toBe('idle');
  });

  it('experimenting is refused (400 naming the mode and the modes offered), nothing written; contributing after a bond, and back', async () => {
    const e = expectError(await mode('experimenting'), 400, 'SVC_INVALID_INPUT');
    expect(e).toMatchObject({ field: 'mode', allowed: ['idle', 'contributing'] });
    expect(e.reason).toContain('experimenting');
    expect((await status()).mode).toBe('idle');
    for (let i = 0; i < BOND; i++) expect((await call(n.url, 'POST', '/api/svc/compute', COMPUTE, bearer(id.key))).status).toBe(200);
    const bond = await call(n.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(n) });
    expect(bond.status, bond.text).toBe(201);
    const c = await mode('contributing');
    expect(c.status, c.text).toBe(200);
    expect(c.body).toMatchObject({ mode: 'contributing', previous: 'idle', bond_id: bond.body.bond_id });
    expectError(await mode('experimenting'), 400, 'SVC_INVALID_INPUT');
    expect((await status()).mode).toBe('contributing');
    expect((await mode('idle')).body).toMatchObject({ mode: 'idle', previous: 'contributing' });
    expect((await mode('contributing')).body.previous).toBe('idle');
  });

  it('is kept across a restart', async () => {
    n = await n.restart();
    const s = await status();
    expect(s.mode).toBe('contributing');
    expect(s.bonded).toBe(true);
  }, 60_000);

  it('a release returns a contributing identity to idle, in the same batch', async () => {
    const r = await call(n.url, 'POST', '/api/contribute/release', {}, bearer(id.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body.mode).toBe('idle');
    expect((await status()).mode).toBe('idle');
    expectError(await mode('contributing'), 403, 'SVC_NO_BOND');
    n = await n.restart();
    expect((await status()).mode).toBe('idle');
  }, 60_000);
});
