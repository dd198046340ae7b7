// Secure-pull sessions in the store: the session key is never stored in clear, and a session's seqs (its GCM nonces)
// never repeat, even when two objects of one session are live (one evicted from memory mid-pull, one read back).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { SecureSessions, SEQ_RESERVE, SESSION_TTL_MS, sessionAtRestKey } from '../../src/streams/secure.js';

let dir: string;
let store: Store;
let now = 1_000_000;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-secure-'));
  store = await Store.open(join(dir, 'db'), { sync: false });
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SecureSessions', () => {
  it('two live objects of one session (evicted mid-pull, read back) never use the same seq', async () => {
    const sessions = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 7)));
    const { session: a } = await sessions.open('str_x', 'zid_owner', generateKeyPairSync('x25519').publicKey);
    // Evicted from memory while `a` is still held by a pull; the next pull reads it back from the store.
    (sessions as unknown as { sessions: Map<string, unknown> }).sessions.delete(a.id);
    const b = (await sessions.get('str_x', a.id))!;
    expect(b).not.toBe(a);
    expect(b.key.equals(a.key)).toBe(true);
    const seqs: number[] = [];
    const n = 2 * Number(SEQ_RESERVE) + 200; // each object passes its first range
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const f = await sessions.seal(i % 2 === 0 ? a : b, Buffer.from('x'));
        seqs.push(f.seq);
      }),
    );
    expect(new Set(seqs).size).toBe(n);
  });

  it('another node secret cannot read the key back; expired sessions are gone', async () => {
    const sessions = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 7)));
    const { session } = await sessions.open('str_y', 'zid_owner', generateKeyPairSync('x25519').publicKey);
    const elsewhere = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 8)));
    expect(await elsewhere.get('str_y', session.id)).toBeNull();
    const again = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 7)));
    expect((await again.get('str_y', session.id))?.key.equals(session.key)).toBe(true);
    expect(await again.get('str_other', session.id)).toBeNull();
    now += SESSION_TTL_MS;
    expect(await again.get('str_y', session.id)).toBeNull();
    expect(await store.get(store.sub('stream_sessions'), session.id)).toBeUndefined();
  });
});

describe('sessions per identity', () => {
  const open = (s: SecureSessions, owner: string, channel = 'str_cap') => s.open(channel, owner, generateKeyPairSync('x25519').publicKey);
  const stored = async () => (await store.range(store.sub('stream_sessions'))).length;

  it('opens up to the cap, refuses one more with 429 saying when a slot frees and writing nothing, and an expiry frees one', async () => {
    const sessions = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 7)), 2);
    const { session: first } = await open(sessions, 'zid_cap');
    now += 1000;
    await open(sessions, 'zid_cap', 'str_cap2');
    expect(await sessions.openBy('zid_cap')).toBe(2);
    const before = await stored();
    const err = await open(sessions, 'zid_cap').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      status: 429,
      code: 'SVC_RATE_LIMIT',
      message: "too many secure sessions open: at most 2 unexpired on one identity's channels; retry when one expires",
      extra: {
        limit: 2,
        scope: 'identity',
        open_sessions: 2,
        window_seconds: SESSION_TTL_MS / 1000,
        retry_after_seconds: (SESSION_TTL_MS - 1000) / 1000,
        reset_at: new Date(first.expiresMs).toISOString(),
      },
    });
    expect(await stored()).toBe(before);
    expect(await sessions.openBy('zid_cap')).toBe(2);
    // Another identity's channels have their own slots.
    await open(sessions, 'zid_other');
    // The first session expires: its slot is free, and the open deletes its index entry in its batch.
    now = first.expiresMs;
    expect(await sessions.openBy('zid_cap')).toBe(1);
    await open(sessions, 'zid_cap');
    expect(await sessions.openBy('zid_cap')).toBe(2);
    expect((await store.range(store.sub('stream_session_owner'), { gte: 'zid_cap!', lt: 'zid_cap!~' })).length).toBe(2);
  });

  it('parallel opens cannot pass the cap, and the count survives a new instance on the same store', async () => {
    const sessions = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 7)), 3);
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => open(sessions, 'zid_race')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
    const again = new SecureSessions(() => now, store, sessionAtRestKey(Buffer.alloc(32, 7)), 3);
    await again.load();
    expect(await again.openBy('zid_race')).toBe(3);
    await expect(open(again, 'zid_race')).rejects.toMatchObject({ status: 429, extra: { limit: 3, open_sessions: 3 } });
  });
});
