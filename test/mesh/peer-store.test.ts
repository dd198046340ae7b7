// The persisted peer store: what a node learns survives a reopen; it is bounded (the least recently seen go first)
// and a peer long unseen whose dials keep failing is forgotten.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { PeerStore } from '../../src/mesh/peer-store.js';
import { makeDataDir, removeDir } from './helpers.js';

describe('mesh peer store', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await removeDir(d);
  });

  const open = async () => {
    const dir = await makeDataDir('svc-peer-store-');
    dirs.push(dir);
    return { dir, store: await Store.open(join(dir, 'db'), { sync: false }) };
  };

  it('keeps learnt addresses, last seen and failures across a reopen', async () => {
    const { dir, store } = await open();
    const a = new PeerStore({ store });
    a.learn('peerA', ['/ip4/10.0.0.1/tcp/4001']);
    a.learn('peerA', ['/ip4/10.0.0.2/tcp/4001']);
    a.seen('peerA', 1_000_000);
    a.learn('peerB', ['/ip4/10.0.0.3/tcp/4001']);
    a.failed('peerB', 2_000_000);
    await a.flush();
    await store.close();
    const again = await Store.open(join(dir, 'db'), { sync: false });
    const b = new PeerStore({ store: again });
    await b.load();
    expect(b.get('peerA')).toEqual({
      peerId: 'peerA',
      addrs: ['/ip4/10.0.0.2/tcp/4001', '/ip4/10.0.0.1/tcp/4001'],
      lastSeen: 1_000_000,
      lastFailure: null,
      failures: 0,
    });
    expect(b.get('peerB')).toMatchObject({ lastSeen: 0, lastFailure: 2_000_000, failures: 1 });
    await again.close();
  });

  it('is bounded: past max the least recently seen peer is evicted, in the store too', async () => {
    const { store } = await open();
    const s = new PeerStore({ store, max: 2 });
    s.learn('old', ['/ip4/10.0.0.1/tcp/1']);
    s.seen('old', 1_000);
    s.learn('recent', ['/ip4/10.0.0.2/tcp/1']);
    s.seen('recent', 5_000_000);
    await s.flush();
    s.learn('newcomer', ['/ip4/10.0.0.3/tcp/1']);
    s.seen('newcomer', 9_000_000);
    await s.flush();
    expect(
      s
        .list()
        .map((p) => p.peerId)
        .sort(),
    ).toEqual(['newcomer', 'recent']);
    const reloaded = new PeerStore({ store });
    await reloaded.load();
    expect(reloaded.get('old')).toBeUndefined();
    await store.close();
  });

  it('forgets a peer unseen for longer than forgetAfterMs after three failed dials in a row', async () => {
    const { store } = await open();
    const s = new PeerStore({ store, forgetAfterMs: 1_000 });
    s.learn('gone', ['/ip4/10.0.0.9/tcp/1']);
    s.failed('gone', 10_000);
    s.failed('gone', 20_000);
    expect(s.get('gone')?.failures).toBe(2);
    s.failed('gone', 30_000);
    expect(s.get('gone')).toBeUndefined();
    await s.flush();
    const reloaded = new PeerStore({ store });
    await reloaded.load();
    expect(reloaded.size).toBe(0);
    await store.close();
  });
});
