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
    const { session: a } = await sessions.open('str_x', generateKeyPairSync('x25519').publicKey);
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
    const { session } = await sessions.open('str_y', generateKeyPairSync('x25519').publicKey);
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
