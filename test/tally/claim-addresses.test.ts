// The daily claim's per-address count across the mesh: the counts other homes gossip are kept per sender as the
// latest (a replay or an older count changes nothing), summed per hour and address, and survive a restart.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Counters } from '../../src/store/counters.js';
import { Store } from '../../src/store/db.js';
import { ClaimAddresses, CLAIM_ADDRESS_EVENT } from '../../src/tally/claim-addresses.js';
import { GossipError } from '../../src/mesh/gossip-error.js';
import type { MeshEvent } from '../../src/mesh/wire.js';

const SECRET = 'mesh-secret-0123456789abcdef';
const HOUR = '2026-11-26T21';
const NOW = Date.parse('2026-11-26T21:30:00Z');
const dirs: string[] = [];
async function open(dir?: string, secret: string | null = SECRET) {
  const d = dir ?? (await mkdtemp(join(tmpdir(), 'svc-claim-addresses-')));
  if (!dir) dirs.push(d);
  const store = await Store.open(d, { sync: false });
  const counters = new Counters(store);
  await counters.load();
  return { store, dir: d, book: new ClaimAddresses(store, counters, secret) };
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
const event = (sender: string) => ({ sender }) as MeshEvent;

describe('claim counts of other homes', () => {
  it('sums the latest count of each home; replays and older counts change nothing; a restart keeps them', async () => {
    const a = await open();
    const handle = a.book.handler(
      () => NOW,
      () => 'self',
    ).handle;
    const address = a.book.digest('203.0.113.7');
    expect(address).toMatch(/^[0-9a-f]{32}$/);
    expect(address).not.toContain('203');
    await handle({ hour: HOUR, address, count: 3 }, event('home-1'));
    await handle({ hour: HOUR, address, count: 5 }, event('home-1'));
    await handle({ hour: HOUR, address, count: 5 }, event('home-1')); // replayed
    await handle({ hour: HOUR, address, count: 4 }, event('home-1')); // arrived late
    await handle({ hour: HOUR, address, count: 2 }, event('home-2'));
    await handle({ hour: HOUR, address, count: 9 }, event('self')); // its own, counted locally already
    expect(a.book.elsewhere(HOUR, '203.0.113.7')).toBe(7);
    expect(a.book.elsewhere(HOUR, '203.0.113.8')).toBe(0);
    expect(a.book.elsewhere('2026-11-26T22', '203.0.113.7')).toBe(0);
    await expect(handle({ hour: '2026-11-26T10', address, count: 1 }, event('home-1'))).rejects.toBeInstanceOf(GossipError);
    expect(
      a.book.handler(
        () => NOW,
        () => 'self',
      ).type,
    ).toBe(CLAIM_ADDRESS_EVENT);
    await a.store.close();
    const b = await open(a.dir);
    expect(b.book.elsewhere(HOUR, '203.0.113.7')).toBe(7);
    await b.store.close();
    // Without a mesh secret nothing comes from elsewhere.
    const c = await open(a.dir, null);
    expect(c.book.elsewhere(HOUR, '203.0.113.7')).toBe(0);
    await c.store.close();
  });
});
