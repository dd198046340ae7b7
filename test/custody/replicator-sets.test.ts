// The custody set a home computes for each write (Replicator.setOf) is kept while the members' view and the identity's
// passed-over members are the objects it was computed from: the same set again for the same view; for another list
// (a member heard, one whose bond ended) the set kept shifted by the change, equal to the set ranked from the new list;
// computed again once the passed-over members are read.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rankWeight } from '../../src/consensus/committee.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import { composedNodes, composedReplicator, type ComposedNode } from '../helpers/composed-custodian.js';

const zid = 'zid_89abcdef0123456789abcdef01234567';

let dir: string;
let nodes: ComposedNode[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-replicator-sets-'));
  nodes = await composedNodes(dir, 5);
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('the custody sets a home keeps', () => {
  it('are the sets of the members of now: kept for the same view, computed again for another', async () => {
    const home = nodes[0]!;
    // The two that weigh most for the identity join the view last.
    const [first, second, ...rest] = nodes.slice(1).sort((a, b) => (rankWeight(zid, a.id) < rankWeight(zid, b.id) ? 1 : -1));
    let view = [home.id, ...rest.map((n) => n.id)];
    const replicator = composedReplicator(home, () => view, null);
    const before = replicator.setOf(zid);
    expect(before.custodians).toEqual(custodySetOf(zid, home.id, view, 3).custodians);
    expect(replicator.setOf(zid)).toBe(before);
    // The same members in a new list: no member joined or left, the same set.
    view = [...view];
    expect(replicator.setOf(zid)).toBe(before);
    // A member heard that outranks the set's custodians takes its place at once.
    view = [...view, first!.id, second!.id];
    expect(replicator.setOf(zid).custodians).toEqual([home.id, first!.id, second!.id]);
    expect(replicator.setOf(zid)).toEqual(custodySetOf(zid, home.id, view, 3));
    // A custodian that leaves is replaced by the next by weight; one behind the set leaving changes nothing.
    const shifted = replicator.setOf(zid);
    view = view.filter((n) => n !== rest.at(-1)!.id);
    expect(replicator.setOf(zid)).toBe(shifted);
    view = view.filter((n) => n !== first!.id);
    expect(replicator.setOf(zid)).toEqual(custodySetOf(zid, home.id, view, 3));
    expect(replicator.setOf(zid).custodians).not.toContain(first!.id);
    // The passed-over members, once read (none stored: an empty list), are what the set is kept with.
    const kept = replicator.setOf(zid);
    await replicator.excludedOf(zid);
    expect(replicator.setOf(zid)).not.toBe(kept);
    expect(replicator.setOf(zid).custodians).toEqual(kept.custodians);
  });
});

describe('a set compared with the sets of other lists of the members (Replicator.sameSetUnder)', () => {
  it('is the same exactly when the set ranked from each list has the same custodians', async () => {
    const home = nodes[0]!;
    const ids = nodes.map((n) => n.id);
    const others = ids.slice(1);
    // Every list of the members that keeps the home: the 16 subsets of the other four.
    const lists = Array.from({ length: 16 }, (_, bits) => [home.id, ...others.filter((_, i) => bits & (1 << i))]);
    const sorted = (xs: readonly string[]) => [...xs].sort();
    let compared = 0;
    let same = 0;
    for (const now of lists) {
      const replicator = composedReplicator(home, () => now, null);
      const expected = sorted(custodySetOf(zid, home.id, now, 3).custodians);
      for (const list of lists) {
        const want = sorted(custodySetOf(zid, home.id, list, 3).custodians).join() === expected.join();
        expect(await replicator.sameSetUnder(zid, [list]), `${now.length} members now, ${list.length} in the list`).toBe(want);
        compared++;
        if (want) same++;
      }
      // Several lists: the same only when the set is the same under each.
      expect(await replicator.sameSetUnder(zid, [now, lists[15]!, lists[0]!])).toBe(false);
      expect(await replicator.sameSetUnder(zid, [now, [...now]])).toBe(true);
    }
    // Both answers were met many times.
    expect(compared).toBe(256);
    expect(same).toBeGreaterThan(20);
    expect(compared - same).toBeGreaterThan(20);
  });
});
