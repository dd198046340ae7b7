// POST /api/genesis/execute: one atomic, sealed creation from a document (machine, roles, first events, charge 50),
// idempotent on the document's digest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { canonicalDigest } from '../../src/kernel/canonical.js';

describe('genesis', () => {
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 120 });
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const balance = async (key: string) => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total as number;

  it('creates the machine with its roles and first events in one sealed step, charged 50; the same document again answers the first', async () => {
    const owner = await zkIdentity(t.url, 'genesis-owner');
    const viewer = await zkIdentity(t.url, 'genesis-viewer');
    const document = {
      slug: 'genesis-lab',
      roles: { [viewer.zid]: 'viewer' },
      events: [
        { type: 'config.set', payload: { gain: 2 } },
        { type: 'note', payload: 'first light' },
      ],
    };
    const first = await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(owner.key));
    expect(first.status).toBe(201);
    expect(first.body.slug).toBe('genesis-lab');
    expect(first.body.admin_key).toMatch(/^zsm_/);
    expect(first.body.svcProof).toMatch(/^[0-9a-f]{64}$/);
    expect(first.body.rows.map((r: any) => [r.seq, r.transitionType])).toEqual([
      [1, 'genesis'],
      [2, 'genesis_event'],
      [3, 'genesis_event'],
    ]);
    expect(first.body.tally_charge).toMatchObject({ action: 'genesis', cost: 50 });
    expect(await balance(owner.key)).toBe(70);
    // The digest is the one a document without the newer fields (contract, inject_*) always had: the normalised
    // document's RFC 8785 SHA-256, the settings left out while false.
    expect(first.body.document_digest).toBe(canonicalDigest({ ...document, is_public: false, metadata: {} }));
    expect(first.body.contract_id).toBeNull();

    const again = await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(owner.key));
    expect(again.status).toBe(200);
    expect(again.body.replayed).toBe(true);
    expect(again.body.admin_key).toBeUndefined();
    expect(again.body.rows).toEqual(first.body.rows);
    expect(again.body.document_digest).toBe(first.body.document_digest);
    expect(await balance(owner.key)).toBe(70);

    // The chain holds exactly those rows and validates; the viewer of the document reads the private machine.
    const chain = await call(t.url, 'GET', '/api/chain/genesis-lab/explore', undefined, bearer(viewer.key));
    expect(chain.status).toBe(200);
    expect(chain.body.rows.map((r: any) => r.hash)).toEqual(first.body.rows.map((r: any) => r.hash));
    expect((await call(t.url, 'GET', '/api/chain/genesis-lab/pohc/validate', undefined, bearer(owner.key))).body.valid).toBe(true);
    const stranger = await zkIdentity(t.url, 'genesis-stranger');
    expectError(await call(t.url, 'GET', '/api/chain/genesis-lab/explore', undefined, bearer(stranger.key)), 403, 'SVC_FORBIDDEN');
    // Someone else's execution of the same document is a conflict, not a copy.
    expectError(await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(stranger.key)), 409, 'SVC_CONFLICT');
  });

  it('deploys the initial contract in the same batch, with the settings of the document; idempotent on its digest', async () => {
    const owner = await zkIdentity(t.url, 'genesis-contract');
    const operator = await zkIdentity(t.url, 'genesis-contract-op');
    const contract = {
      name: 'gate',
      states: ['closed', 'open'],
      initial: 'closed',
      variables: { opened: 0 },
      transitions: [
        { from: 'closed', on: 'open', to: 'open', effects: [{ add: 'opened', by: { value: 1 } }] },
        { from: 'open', on: 'close', to: 'closed' },
      ],
    };
    const document = {
      slug: 'genesis-gate',
      inject_agent_rail: true,
      roles: { [operator.zid]: 'operator' },
      contract,
      events: [{ type: 'note', payload: 'installed' }],
    };
    const first = await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(owner.key));
    expect(first.status).toBe(201);
    expect(first.body.rows.map((r: any) => [r.seq, r.transitionType])).toEqual([
      [1, 'genesis'],
      [2, 'contract_deploy'],
      [3, 'genesis_event'],
    ]);
    expect(first.body.contract_id).toMatch(/^ctr_[0-9a-f]{24}$/);
    expect(first.body.settings).toEqual({ is_public: false, inject_agent_rail: true, inject_pulse_orb: false });
    const settings = await call(t.url, 'GET', '/api/chain/genesis-gate/settings', undefined, bearer(owner.key));
    expect(settings.body).toMatchObject({ is_public: false, inject_agent_rail: true, inject_pulse_orb: false });

    // The contract is the chain's: listed, at its initial state, and it transitions (an operator of the document, cost 5).
    const id = first.body.contract_id as string;
    const listed = await call(t.url, 'GET', '/api/chain/genesis-gate/contracts', undefined, bearer(owner.key));
    expect(listed.body.contracts).toEqual([{ contract_id: id, name: 'gate', deployed_seq: 2 }]);
    expect((await call(t.url, 'GET', `/api/chain/genesis-gate/contracts/${id}`, undefined, bearer(owner.key))).body).toMatchObject({ state: 'closed' });
    const moved = await call(t.url, 'POST', `/api/chain/genesis-gate/contracts/${id}/transition`, { event: { type: 'open' } }, bearer(operator.key));
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ state: 'open', vars: { opened: 1 } });

    // Rebuilt from the log (what a restart does): the deploy row written by genesis checks out.
    t.node.chain.contracts.forget();
    expect((await call(t.url, 'GET', `/api/chain/genesis-gate/contracts/${id}`, undefined, bearer(owner.key))).body).toMatchObject({
      state: 'open',
      transitions_applied: 1,
    });
    expect((await call(t.url, 'GET', '/api/chain/genesis-gate/pohc/validate', undefined, bearer(owner.key))).body).toMatchObject({ valid: true, rows: 4 });

    const again = await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(owner.key));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ replayed: true, contract_id: id, document_digest: first.body.document_digest });
    expect((await call(t.url, 'GET', '/api/chain/genesis-gate/contracts', undefined, bearer(owner.key))).body.contracts).toHaveLength(1);
  });

  it('refuses what it cannot do, writing nothing: a contract that does not validate, a wallet that cannot pay', async () => {
    const id = await zkIdentity(t.url, 'genesis-poor');
    const bad = await call(
      t.url,
      'POST',
      '/api/genesis/execute',
      { document: { slug: 'with-contract', contract: { name: 'x', states: ['a'], initial: 'a', transitions: [{ from: 'a', on: 'go', to: 'b' }] } } },
      bearer(id.key),
    );
    expect(expectError(bad, 400, 'SVC_INVALID_INPUT').field).toBe('document.contract.transitions.0.to');
    const orb = await call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'with-orb', inject_pulse_orb: true } }, bearer(id.key));
    expect(expectError(orb, 400, 'SVC_INVALID_INPUT').field).toBe('document.inject_pulse_orb');
    expectError(await call(t.url, 'GET', '/api/chain/with-orb/explore', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
    expectError(await call(t.url, 'GET', '/api/chain/with-contract/explore', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
    for (const slug of ['poor-one', 'poor-two'])
      expect((await call(t.url, 'POST', '/api/genesis/execute', { document: { slug } }, bearer(id.key))).status).toBe(201);
    expectError(await call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'poor-three' } }, bearer(id.key)), 402, 'INSUFFICIENT_BALANCE');
    expectError(await call(t.url, 'GET', '/api/chain/poor-three/explore', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
    expect(await balance(id.key)).toBe(20);
    expectError(await call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'no-key' } }), 401, 'SVC_NO_KEY');
  });
});

describe('genesis within the contract cap', () => {
  const CAP = 1;
  let t: TestNode;
  beforeAll(async () => {
    t = await startTestNode({ limits: { contractsPerIdentity: CAP } }, { initialCredits: 1000 });
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const contract = { name: 'switch', states: ['off', 'on'], initial: 'off', transitions: [{ from: 'off', on: 'flip', to: 'on' }] };
  const balance = async (key: string) => (await call(t.url, 'GET', '/api/tally/balance', undefined, bearer(key))).body.total as number;

  it('refuses a document with a contract from an owner at the cap as a deploy is (409), writing nothing of it', async () => {
    const owner = await zkIdentity(t.url, 'genesis-capped');
    // The first genesis contract takes the owner's one slot.
    const first = await call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'capped-first', contract } }, bearer(owner.key));
    expect(first.status, first.text).toBe(201);
    expect(await t.node.chain.contracts.deployedBy(owner.zid)).toBe(CAP);
    const deploy = expectError(await call(t.url, 'POST', `/api/chain/${owner.slug}/contracts`, contract, bearer(owner.key)), 409, 'SVC_CONFLICT');
    const paid = await balance(owner.key);
    const heads = t.node.chain.headsDigest();

    const document = { slug: 'capped-second', contract, events: [{ type: 'note', payload: 'never written' }] };
    const refused = expectError(await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(owner.key)), 409, 'SVC_CONFLICT');
    expect(refused).toMatchObject({ limit: CAP, count: CAP, resource: 'contracts' });
    expect(refused.message).toBe(deploy.message);
    // Nothing of it: no machine, no contract, no row, no charge, no record (sent again, it is refused again, not replayed).
    expectError(await call(t.url, 'GET', '/api/chain/capped-second/explore', undefined, bearer(owner.key)), 404, 'SVC_NOT_FOUND');
    expectError(await call(t.url, 'GET', '/api/chain/capped-second/contracts', undefined, bearer(owner.key)), 404, 'SVC_NOT_FOUND');
    expect(await t.node.chain.contracts.list('capped-second')).toEqual([]);
    expect(await t.node.chain.contracts.deployedBy(owner.zid)).toBe(CAP);
    expect(t.node.chain.headsDigest()).toBe(heads);
    expect(await balance(owner.key)).toBe(paid);
    expectError(await call(t.url, 'POST', '/api/genesis/execute', { document }, bearer(owner.key)), 409, 'SVC_CONFLICT');

    // A document without a contract deploys none, so the cap does not apply; the first document still replays.
    const plain = await call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'capped-plain' } }, bearer(owner.key));
    expect(plain.status, plain.text).toBe(201);
    const again = await call(t.url, 'POST', '/api/genesis/execute', { document: { slug: 'capped-first', contract } }, bearer(owner.key));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ replayed: true, contract_id: first.body.contract_id });
  });
});

describe('genesis when its batch fails', () => {
  it('leaves no chain head behind: the heads digest is as before and the slug can be created later', async () => {
    const t = await startTestNode({ solverThreads: 0, sealWorker: false }, { initialCredits: 120 });
    try {
      const id = await zkIdentity(t.url, 'genesis-disk');
      const before = t.node.chain.headsDigest();
      const store = t.node.store;
      const commit = store.commit.bind(store);
      // One failing write, as a full disk would give.
      store.commit = async () => {
        store.commit = commit;
        throw new Error('disk full');
      };
      const failed = await call(
        t.url,
        'POST',
        '/api/genesis/execute',
        { document: { slug: 'after-disk', events: [{ type: 'e', payload: { a: 1 } }] } },
        bearer(id.key),
      );
      expect(failed.status).toBe(500);
      expect(t.node.chain.headsDigest()).toBe(before);
      expectError(await call(t.url, 'GET', '/api/chain/after-disk/explore', undefined, bearer(id.key)), 404, 'SVC_NOT_FOUND');
      const made = await call(
        t.url,
        'POST',
        '/api/genesis/execute',
        { document: { slug: 'after-disk', events: [{ type: 'e', payload: { a: 1 } }] } },
        bearer(id.key),
      );
      expect(made.status).toBe(201);
      expect(made.body.rows.map((r: { seq: number }) => r.seq)).toEqual([1, 2]);
      expect(t.node.chain.headsDigest()).not.toBe(before);
      // The same digest a restart computes from the store.
      const digest = t.node.chain.headsDigest();
      const again = await t.restart();
      expect(again.node.chain.headsDigest()).toBe(digest);
      await again.destroy();
    } catch (err) {
      await t.destroy();
      throw err;
    }
  });
});
