// The sealed-result announcement (compute/announce.ts): the seals of a tick interval in one results.sealed event while
// the node has a mesh, none without; the newest ANNOUNCED_MAX listed and all counted; a failed publish is reported,
// never thrown at the seal.
import { describe, expect, it } from 'vitest';
import { ANNOUNCED_MAX, RESULTS_SEALED, SealAnnouncer, resultsSealedBody, type ResultsSealed } from '../../src/compute/announce.js';
import type { SealedSummary } from '../../src/compute/service.js';

const summary = (i: number): SealedSummary => ({
  result_id: `res_${i}_0123456789abcdef`,
  result_digest: i.toString(16).padStart(64, '0'),
  kind: i % 2 ? 'solver' : 'compute',
  solver: i % 2 ? 'root' : null,
  operators: i % 2 ? null : ['KO42', 'MECH_KINETIC_ENERGY'],
  svcond: 100 + i,
  value: i * 1.5,
  unit: i % 2 ? '' : 'J',
});

/** An announcer whose interval never ends by itself (flushed by hand), and what it published. */
function announcer(options: { enabled?: () => boolean; intervalMs?: number } = {}) {
  const sent: [string, ResultsSealed][] = [];
  let published: () => void = () => undefined;
  const next = () => new Promise<void>((resolve) => (published = resolve));
  const a = new SealAnnouncer({
    enabled: options.enabled ?? (() => true),
    publish: async (type, body) => {
      sent.push([type, structuredClone(body)]);
      published();
    },
    intervalMs: () => options.intervalMs ?? 3_600_000,
    onError: () => undefined,
  });
  return { a, sent, next };
}

describe('the sealed-result announcement', () => {
  it('announces the seals of an interval in one event, oldest first, counted, with the ticks they span', () => {
    const { a, sent } = announcer();
    for (let i = 1; i <= 3; i++) a.sealed(summary(i), true);
    expect(sent).toEqual([]);
    a.flush();
    expect(sent).toEqual([[RESULTS_SEALED, { count: 3, from_svcond: 101, to_svcond: 103, results: [summary(1), summary(2), summary(3)] }]]);
    expect(resultsSealedBody.safeParse(sent[0]![1]).success).toBe(true);
    // Nothing pending: nothing more is sent.
    a.flush();
    expect(sent).toHaveLength(1);
    a.stop();
  });

  it('lists the newest ANNOUNCED_MAX of a busy interval and counts them all', () => {
    const { a, sent } = announcer();
    const n = ANNOUNCED_MAX * 3 + 5;
    for (let i = 1; i <= n; i++) a.sealed(summary(i), true);
    a.flush();
    expect(sent).toHaveLength(1);
    const body = sent[0]![1];
    expect(body.count).toBe(n);
    expect(body.from_svcond).toBe(101);
    expect(body.to_svcond).toBe(100 + n);
    expect(body.results.map((r) => r.result_id)).toEqual(Array.from({ length: ANNOUNCED_MAX }, (_, k) => summary(n - ANNOUNCED_MAX + 1 + k).result_id));
    expect(resultsSealedBody.safeParse(body).success).toBe(true);
    // Under a mesh event's 64 KiB, with room to spare.
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(32 * 1024);
    a.stop();
  });

  it('spans the least and the greatest tick of its seals, whatever order they finished in', () => {
    const { a, sent } = announcer();
    a.sealed({ ...summary(1), svcond: 105 }, true);
    a.sealed({ ...summary(2), svcond: 103 }, true);
    a.sealed({ ...summary(3), svcond: 104 }, true);
    a.flush();
    expect(sent[0]![1]).toMatchObject({ count: 3, from_svcond: 103, to_svcond: 105 });
    expect(resultsSealedBody.safeParse(sent[0]![1]).success).toBe(true);
    a.stop();
  });

  it('sends at the end of the interval that its first seal started', async () => {
    const { a, sent, next } = announcer({ intervalMs: 5 });
    const first = next();
    a.sealed(summary(1), true);
    a.sealed(summary(2), true);
    await first;
    expect(sent.map(([, b]) => b.count)).toEqual([2]);
    const second = next();
    a.sealed(summary(3), true);
    await second;
    expect(sent.map(([, b]) => b.results.map((r) => r.svcond))).toEqual([[101, 102], [103]]);
    a.stop();
  });

  it('counts a result its owner does not publish without listing it: its value is not told', () => {
    const { a, sent } = announcer();
    a.sealed(summary(1), false);
    a.sealed(summary(2), true);
    a.sealed(summary(3), false);
    a.flush();
    expect(sent[0]![1]).toEqual({ count: 3, from_svcond: 101, to_svcond: 103, results: [summary(2)] });
    a.sealed(summary(4), false);
    a.flush();
    expect(sent[1]![1]).toEqual({ count: 1, from_svcond: 104, to_svcond: 104, results: [] });
    expect(JSON.stringify(sent[1]![1])).not.toContain(summary(4).result_id);
    expect(resultsSealedBody.safeParse(sent[1]![1]).success).toBe(true);
    a.stop();
  });

  it('keeps and sends nothing while the node has no mesh; a stop drops what is pending', () => {
    let enabled = false;
    const { a, sent } = announcer({ enabled: () => enabled });
    a.sealed(summary(1), true);
    a.flush();
    expect(sent).toEqual([]);
    enabled = true;
    a.sealed(summary(2), true);
    a.stop();
    a.flush();
    expect(sent).toEqual([]);
  });

  it('a publish that fails is reported to onError', async () => {
    const errors: unknown[] = [];
    const a = new SealAnnouncer({
      enabled: () => true,
      publish: () => Promise.reject(new Error('no peers')),
      intervalMs: () => 3_600_000,
      onError: (err) => errors.push(err),
    });
    a.sealed(summary(1), true);
    expect(() => a.flush()).not.toThrow();
    await new Promise((r) => setImmediate(r));
    expect(String(errors[0])).toContain('no peers');
  });

  it('the row refuses a body that lists more than it counts, runs backwards or counts nothing', () => {
    const ok = { count: 2, from_svcond: 1, to_svcond: 2, results: [summary(1), summary(2)] };
    expect(resultsSealedBody.safeParse(ok).success).toBe(true);
    expect(resultsSealedBody.safeParse({ ...ok, count: 1 }).success).toBe(false);
    expect(resultsSealedBody.safeParse({ ...ok, from_svcond: 3 }).success).toBe(false);
    expect(resultsSealedBody.safeParse({ ...ok, results: [] }).success).toBe(true);
    expect(resultsSealedBody.safeParse({ ...ok, count: 0, results: [] }).success).toBe(false);
    expect(resultsSealedBody.safeParse({ ...ok, results: Array.from({ length: ANNOUNCED_MAX + 1 }, (_, i) => summary(i)) }).success).toBe(false);
    expect(resultsSealedBody.safeParse({ ...ok, results: [{ ...summary(1), result_digest: 'x' }] }).success).toBe(false);
  });
});
