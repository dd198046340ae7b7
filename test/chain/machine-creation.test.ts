// Creating a state machine (chain/machine-creation.ts): the record and the admin key's ops in one batch with the
// creation's charge, the m-… slugs refused, one of concurrent creations of a slug going on, the announcement only once
// written. A real store and chain in a temp dir; the admin key and the claim table are the identity service's ports.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store, type Op } from '../../src/store/db.js';
import { ChainService } from '../../src/chain/service.js';
import { MachineCreation } from '../../src/chain/machine-creation.js';
import { Claims, conflict } from '../../src/identity/claims.js';

let dir: string;
let store: Store;
let chain: ChainService;
let creation: MachineCreation;
const announced: string[] = [];
const keyNotes = () => store.sub('key_notes');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-machine-creation-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
  chain = new ChainService(store);
  const claims = new Claims();
  creation = new MachineCreation({
    store,
    chain,
    nodeId: () => 'peer-here',
    nowMs: () => 1234,
    adminKey: (zid, slug) => ({
      key: `zsm_${slug}`,
      digest: `digest-of-${slug}`,
      ops: [{ type: 'put', sub: keyNotes(), key: slug, value: zid }],
      announce: () => announced.push(`key ${slug}`),
    }),
    slugClaims: { take: (slug) => claims.take('slug', slug), conflict: (slug) => conflict('slug', slug) },
  });
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('machine creation', () => {
  it('writes the machine with its owner, home and admin key digest, and the key ops, in one batch; announces after', async () => {
    const { machine, adminKey } = await creation.create('zid_a', 'book-one', 7, true, undefined, { zid_b: 'viewer' }, { inject_pulse_orb: true });
    expect(adminKey).toBe('zsm_book-one');
    expect(machine).toMatchObject({
      slug: 'book-one',
      owner: 'zid_a',
      genesis_svcond: 7,
      is_public: true,
      key_digest: 'digest-of-book-one',
      roles: { zid_b: 'viewer', zid_a: 'owner' },
      inject_agent_rail: false,
      inject_pulse_orb: true,
      home: 'peer-here',
      created_unix_ms: 1234,
    });
    expect(await chain.getMachine('book-one')).toEqual(machine);
    expect(await store.get(keyNotes(), 'book-one')).toBe('zid_a');
    expect(announced).toEqual(['key book-one']);
  });

  it("refuses slugs of identities' default machines (m-…) with 400, before anything else", async () => {
    await expect(creation.create('zid_a', 'm-0123', 7, false)).rejects.toMatchObject({ status: 400, code: 'SVC_INVALID_INPUT' });
  });

  it('answers 409 for a slug already written, and of concurrent creations of one slug lets one through', async () => {
    await expect(creation.create('zid_b', 'book-one', 8, false)).rejects.toMatchObject({ status: 409, code: 'SVC_CONFLICT' });
    const both = await Promise.allSettled([creation.create('zid_a', 'book-two', 8, false), creation.create('zid_b', 'book-two', 8, false)]);
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((await chain.getMachine('book-two'))?.owner).toBe('zid_a');
  });

  it("puts the charge's ops in the same batch, and rolls the charge back when the batch fails", async () => {
    const charged: string[] = [];
    const chargeOp: Op = { type: 'put', sub: keyNotes(), key: 'charge:book-three', value: 1 };
    await creation.create('zid_a', 'book-three', 9, false, () => ({ ops: [chargeOp], rollback: () => charged.push('rolled back') }));
    expect(await store.get(keyNotes(), 'charge:book-three')).toBe(1);
    expect(charged).toEqual([]);
    const commit = store.commit.bind(store);
    store.commit = () => Promise.reject(new Error('disk full'));
    try {
      await expect(creation.create('zid_a', 'book-four', 9, false, () => ({ ops: [], rollback: () => charged.push('rolled back') }))).rejects.toThrow(
        'disk full',
      );
    } finally {
      store.commit = commit;
    }
    expect(charged).toEqual(['rolled back']);
    expect(await chain.getMachine('book-four')).toBeUndefined();
    expect(announced).not.toContain('key book-four');
  });
});
