// Direct probes of overdue homes (home-probes.ts): one probe of a node at a time, the tick its failures started kept
// for the silence they were made in, an answer or a tick event heard forgetting them; with a probe composed in the test.
import { describe, expect, it } from 'vitest';
import { HomeProbes } from '../../src/custody/home-probes.js';
import { waitUntil } from '../helpers/wait.js';

/** A probe whose answers the test gives, one per probe made, in order. */
function scriptedProbe(): { probe: (node: string, signal: AbortSignal) => Promise<boolean>; answer: (ok: boolean) => Promise<void>; made: string[] } {
  const waiting: ((ok: boolean) => void)[] = [];
  const made: string[] = [];
  return {
    made,
    probe: (node) => {
      made.push(node);
      return new Promise<boolean>((resolve) => waiting.push(resolve));
    },
    answer: async (ok) => {
      waiting.shift()!(ok);
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('home probes', () => {
  it('an overdue node is probed one probe at a time; failures count from the first, for the silence they were made in', async () => {
    const p = scriptedProbe();
    const probes = new HomeProbes(p.probe, 1000);
    expect(probes.unreachableSince('home', 120, 100, true)).toBeNull();
    expect(probes.unreachableSince('home', 121, 100, true)).toBeNull(); // the first probe still in flight: no second
    expect(p.made).toEqual(['home']);
    await p.answer(false);
    expect(probes.unreachableSince('home', 122, 100, true)).toBe(120);
    await p.answer(false);
    expect(probes.unreachableSince('home', 123, 100, true)).toBe(120);
    expect(probes.stats).toEqual({ probes: 3, failed: 2 });
    // It answers: the count starts again.
    await p.answer(true);
    expect(probes.unreachableSince('home', 124, 100, true)).toBeNull();
    await p.answer(false);
    expect(probes.unreachableSince('home', 125, 100, true)).toBe(124);
  });

  it('a tick event heard (not overdue, or another silence) forgets the failures; a rejected probe is a failure', async () => {
    let calls = 0;
    const probes = new HomeProbes(async () => {
      calls++;
      throw new Error('dial refused');
    }, 1000);
    probes.unreachableSince('home', 120, 100, true);
    await new Promise((r) => setImmediate(r));
    expect(probes.unreachableSince('home', 121, 100, true)).toBe(120);
    expect(probes.unreachableSince('home', 122, 121, false)).toBeNull();
    await new Promise((r) => setImmediate(r)); // the probe made at 121 (of the earlier silence) settles
    // Overdue again in a later silence: counted from its own first failure, not the earlier one.
    probes.unreachableSince('home', 140, 121, true);
    await new Promise((r) => setImmediate(r));
    expect(probes.unreachableSince('home', 141, 121, true)).toBe(140);
    expect(calls).toBeGreaterThanOrEqual(3);
  });

  it('gives each probe a signal that ends after the timeout', async () => {
    let signal: AbortSignal | null = null;
    const probes = new HomeProbes(
      (_node, s) =>
        new Promise<boolean>((resolve) => {
          signal = s;
          s.addEventListener('abort', () => resolve(false));
        }),
      30,
    );
    probes.unreachableSince('home', 120, 100, true);
    expect(signal!.aborted).toBe(false);
    // The probe answers nothing itself: only the signal ends it, and it then counts as failed.
    await waitUntil(() => probes.stats.failed === 1, 'the probe ended by its signal', 5_000, 5);
    expect(signal!.aborted).toBe(true);
    expect(probes.unreachableSince('home', 121, 100, true)).toBe(120);
  });
});
