// The invariant a reactor's telemetry watches, per stateful solver, read from real runs.
import { describe, expect, it } from 'vitest';
import { defaultRegistry } from '../../src/solvers/registry.js';
import { readInvariant, relativeDrift } from '../../src/reactor/invariants.js';

const registry = defaultRegistry();
const run = (id: string, inputs: Record<string, unknown> = {}) => {
  const s = registry.get(id)!;
  const resolved = s.resolve(inputs);
  const out = s.run(resolved);
  return { resolved, view: { value: out.value, outputs: out.outputs, state: JSON.parse(JSON.stringify(out.state)) } };
};

describe('reactor invariants', () => {
  it('conserved quantities hold over a run; chaotic and filtering solvers have none', () => {
    for (const id of ['multibody', 'epi', 'predator_prey', 'action']) {
      const { resolved, view } = run(id);
      const inv = readInvariant(id, view, resolved)!;
      expect(inv, id).not.toBeNull();
      expect(relativeDrift(inv.initial, inv.value), id).toBeLessThan(1e-3);
    }
    expect(readInvariant('lorenz', run('lorenz', { t_end: 0.1 }).view, {})).toBeNull();
    expect(readInvariant('kalman', run('kalman').view, {})).toBeNull();
    expect(relativeDrift(0, 0.5)).toBe(0.5);
  });
});
