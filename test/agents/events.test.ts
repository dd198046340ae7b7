// The agent event log: one sequence per node, read back per owner after a sequence number, pruned to a window, and
// the sequence goes on after a reopen.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Store } from '../../src/store/db.js';
import { AgentEvents } from '../../src/agents/events.js';

describe('agent events', () => {
  it('since, prune and the sequence across a reopen', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-agent-events-'));
    try {
      let store = await Store.open(join(dir, 'db'), { sync: false });
      let log = new AgentEvents(store);
      await log.load();
      for (let i = 0; i < 10; i++) {
        const { ops } = log.make('tick', `ag_${i % 2}`, i % 2 === 0 ? 'zid_a' : 'zid_b', 100 + i, { tick: i });
        await store.commit(ops);
      }
      expect((await log.since('zid_a', 0, 100)).map((e) => e.seq)).toEqual([1, 3, 5, 7, 9]);
      expect((await log.since('zid_b', 6, 100)).map((e) => e.seq)).toEqual([8, 10]);
      expect(await log.prune(4)).toBe(6);
      expect(await log.prune(4)).toBe(0);
      expect((await log.since('zid_a', 0, 100)).map((e) => e.seq)).toEqual([7, 9]);
      await store.close();
      store = await Store.open(join(dir, 'db'), { sync: false });
      log = new AgentEvents(store);
      await log.load();
      expect(log.make('kill', 'ag_0', 'zid_a', 200, {}).event.seq).toBe(11);
      await store.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
