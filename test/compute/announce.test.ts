// The sealed-result announcement (compute/announce.ts): one result.sealed event per sealed result while the node has
// a mesh, none without; a failed publish is reported, never thrown at the seal.
import { describe, expect, it } from 'vitest';
import { RESULT_SEALED, sealedAnnouncer } from '../../src/compute/announce.js';
import type { SealedSummary } from '../../src/compute/service.js';

const summary: SealedSummary = {
  result_id: 'res_1_0123456789abcdef',
  result_digest: 'd'.repeat(64),
  kind: 'solver',
  solver: 'root',
  operators: null,
  svcond: 3,
  value: 1.5,
  unit: '',
};

describe('the sealed-result announcement', () => {
  it('publishes result.sealed with the summary while the mesh is on; nothing while it is off', () => {
    const sent: [string, SealedSummary][] = [];
    let enabled = false;
    const announce = sealedAnnouncer({ enabled: () => enabled, publish: async (type, body) => sent.push([type, body]), onError: () => undefined });
    announce(summary);
    expect(sent).toEqual([]);
    enabled = true;
    announce(summary);
    expect(RESULT_SEALED).toBe('result.sealed');
    expect(sent).toEqual([[RESULT_SEALED, summary]]);
  });
  it('a publish that fails is reported to onError', async () => {
    const errors: unknown[] = [];
    const announce = sealedAnnouncer({ enabled: () => true, publish: () => Promise.reject(new Error('no peers')), onError: (err) => errors.push(err) });
    expect(() => announce(summary)).not.toThrow();
    await new Promise((r) => setImmediate(r));
    expect(String(errors[0])).toContain('no peers');
  });
});
