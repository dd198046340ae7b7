// The kept answers' store: expiry by the clock given, the sweep deleting what expired (and only that), in LevelDB.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { ANSWER_KEPT_MS, IdempotentAnswers } from '../../src/http/idempotent-answers.js';

let dir: string;
let store: Store;
let now = 1_000_000;
const answer = (body: string) => ({ fingerprint: 'f'.repeat(64), status: 201, headers: { 'content-type': 'application/json' }, body });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-idem-'));
  store = await Store.open(dir, { sync: false });
  now = 1_000_000;
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('IdempotentAnswers', () => {
  it('keeps an answer for ANSWER_KEPT_MS, then the sweep deletes it and its index entry', async () => {
    const kept = new IdempotentAnswers(store, () => now);
    await kept.keep('a:1', answer('{"x":1}'));
    expect(await kept.get('a:1')).toEqual({ ...answer('{"x":1}'), expires_at: 1_000_000 + ANSWER_KEPT_MS });
    now += ANSWER_KEPT_MS - 1;
    expect(await kept.sweep()).toBe(0);
    expect((await kept.get('a:1'))?.body).toBe('{"x":1}');
    now += 1;
    expect(await kept.get('a:1')).toBeUndefined();
    expect(await kept.sweep()).toBe(1);
    expect(await kept.sweep()).toBe(0);
    expect(await store.count(store.sub('idempotent_answers'), 10)).toBe(0);
    expect(await store.count(store.sub('idempotent_answers_by_expiry'), 10)).toBe(0);
  });

  it('a key kept again after it expired outlives its old index entry: the sweep leaves the new answer', async () => {
    const kept = new IdempotentAnswers(store, () => now);
    await kept.keep('a:1', answer('old'));
    await kept.keep('b:2', answer('other'));
    now += ANSWER_KEPT_MS;
    await kept.keep('a:1', answer('new'));
    expect(await kept.sweep()).toBe(1);
    expect((await kept.get('a:1'))?.body).toBe('new');
    expect(await kept.get('b:2')).toBeUndefined();
    expect(await store.count(store.sub('idempotent_answers'), 10)).toBe(1);
  });
});
