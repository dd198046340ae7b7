import { describe, expect, it } from 'vitest';
import { ROUTABLE_SOLVERS, ROUTER_TABLE, routeQuery, splitConstants, tokenize } from '../../src/solvers/auto.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { InputError } from '../../src/solvers/errors.js';
import type { InputSpec } from '../../src/solvers/types.js';

function expectNoMatch(query: string): ServiceError {
  try {
    routeQuery(query);
  } catch (e) {
    expect(e).toBeInstanceOf(ServiceError);
    const err = e as ServiceError;
    expect(err.status).toBe(400);
    expect(err.code).toBe('SVC_INVALID_DOMAIN');
    return err;
  }
  throw new Error(`expected no match for "${query}"`);
}

describe('router: picks the solver a plain-English question is about', () => {
  const cases: [string, string][] = [
    ['How much proper time passes for a probe dropped toward a Schwarzschild hole?', 'blackhole'],
    ['Simulate the Earth and Moon pulled together by their mutual attraction', 'multibody'],
    ['Locate the 100th zero of the Riemann function', 'zeta'],
    ['Decide whether my 3-SAT instance has a satisfying assignment', 'sat'],
    ['Value a put option on a stock that pays no dividend', 'quant'],
    ['Model the spread of a disease through a school', 'epi'],
    ['Wolves hunting deer: how do the populations oscillate?', 'predator_prey'],
    ['How quickly does a glioma invade the surrounding brain?', 'tumour'],
    ['Fuse GPS and an accelerometer with a Kalman estimator', 'kalman'],
    ['Compute the lowest energy levels of a Morse potential', 'quantum_levels'],
    ['What pitch does a flute of this length sound?', 'acoustic'],
    ['Load at which a thin strut will buckle sideways', 'buckling'],
    ['How much does a steel cantilever bend under its own weight?', 'fea'],
    ['Width of the depletion region in a silicon pn-junction', 'device'],
    ['Rossby waves in a shallow water model of the atmosphere', 'climate'],
    ['Turbulence in an incompressible fluid at high Reynolds number', 'flow'],
    ['The cooling of a hot plate whose edges are held at 300 K', 'heat'],
    ['Standing wave pattern on a vibrating square membrane', 'wave'],
    ['Show me the butterfly effect with two nearby starting points', 'lorenz'],
  ];
  it.each(cases)('%s → %s', (query, solver) => {
    const r = routeQuery(query);
    expect(r.solver).toBe(solver);
    expect(r.scores[solver]).toBeGreaterThanOrEqual(3);
    expect(r.matched.length).toBeGreaterThan(0);
  });

  it('every one of the 19 rows is reachable and the table has the §5 order', () => {
    expect(ROUTABLE_SOLVERS).toEqual([
      'blackhole',
      'multibody',
      'zeta',
      'sat',
      'quant',
      'epi',
      'predator_prey',
      'tumour',
      'kalman',
      'quantum_levels',
      'acoustic',
      'buckling',
      'fea',
      'device',
      'climate',
      'flow',
      'heat',
      'wave',
      'lorenz',
    ]);
    for (const id of ['action', 'evolve', 'fracture', 'gauge', 'grid', 'react', 'opt', 'dock']) {
      expect(ROUTABLE_SOLVERS).not.toContain(id);
    }
    const reached = new Set(cases.map(([, s]) => s));
    expect(reached.size).toBe(19);
  });
});

describe('router: scoring rules', () => {
  it('3 per strong keyword, 1 per weak one, each keyword counted once', () => {
    // kalman: "kalman" (3) + "noisy measurements" (3) + "filter" (1) + "measurement" via plural (1) = 8,
    // "kalman" repeated twice still counts once.
    const r = routeQuery('Kalman, Kalman again: a filter for noisy measurements of a cart');
    expect(r.solver).toBe('kalman');
    expect(r.scores.kalman).toBe(8);
    expect(r.matched).toEqual(['kalman', 'noisy measurements', 'filter', 'measurement']);
    expect(r.confidence).toBe(1);
    expect(Object.keys(r.scores)).toEqual([...ROUTABLE_SOLVERS]);
  });

  it('a tie goes to the earlier row, with confidence 0.5', () => {
    // "vortex" is strong for flow (row 16), "column" strong for buckling (row 12): 3 each.
    const r = routeQuery('Simulate the vortex shed behind a bridge column');
    expect(r.scores.flow).toBe(3);
    expect(r.scores.buckling).toBe(3);
    expect(r.solver).toBe('buckling');
    expect(r.confidence).toBe(0.5);
    // Two black holes on an orbit: blackhole (row 1) 3, multibody (row 2) 3 → row 1.
    const r2 = routeQuery('two black holes orbit one another');
    expect(r2.scores.blackhole).toBe(3);
    expect(r2.scores.multibody).toBe(3);
    expect(r2.solver).toBe('blackhole');
  });

  it('confidence is best / (best + runner-up) rounded to 4 decimals', () => {
    // zeta: "nontrivial zero" (3) + "zero" (1) = 4; multibody: "planet" (3) → 4/7 = 0.571428… → 0.5714.
    const r = routeQuery('Count the nontrivial zeroes a planet-sized computer could list');
    expect(r.scores.zeta).toBe(4);
    expect(r.scores.multibody).toBe(3);
    expect(r.solver).toBe('zeta');
    expect(r.confidence).toBe(0.5714);
  });

  it('plurals: a token equal to the word plus s or es matches', () => {
    const holes = routeQuery('Tidal forces near black holes');
    expect(holes.solver).toBe('blackhole');
    expect(holes.matched).toContain('black hole');
    const orbits = routeQuery('Stability of orbits in a binary star');
    expect(orbits.solver).toBe('multibody');
    expect(orbits.matched).toEqual(['orbit']);
    const zeroes = routeQuery('Where do the non-trivial zeroes sit?');
    expect(zeroes.solver).toBe('zeta');
    expect(zeroes.matched).toEqual(['non trivial zero', 'zero']);
    expect(zeroes.scores.zeta).toBe(4);
    // "boxes" is box + es inside the multi-word keyword "particle in a box".
    expect(routeQuery('a particle in a boxes lattice').solver).toBe('quantum_levels');
  });

  it('tokens must equal the keyword word: no substring matches', () => {
    // "saturn" is not "sat"; "sunday" is not "sun"; "columns" is a plural of "column" and does match.
    expect(() => routeQuery('saturn on a sunday')).toThrow(ServiceError);
    expect(routeQuery('load-bearing columns').solver).toBe('buckling');
  });

  it('tokenisation lower-cases and splits on anything outside [a-z0-9]', () => {
    expect(tokenize('Navier–Stokes & 3-SAT: Schrödinger!')).toEqual(['navier', 'stokes', '3', 'sat', 'schr', 'dinger']);
    expect(routeQuery('NAVIER–STOKES in a pipe?').scores.flow).toBeGreaterThanOrEqual(3);
    expect(routeQuery('Is this 3-SAT problem solvable?').matched).toEqual(['sat', '3 sat']);
  });

  it('weak keywords alone reach the threshold only at a score of 3', () => {
    const r = routeQuery('temperature of a thermal rod');
    expect(r.solver).toBe('heat');
    expect(r.scores.heat).toBe(3);
    expectNoMatch('a thermal rod');
  });

  it('numbers in the query are not parsed', () => {
    const a = routeQuery('Lorenz system with rho = 28');
    const b = routeQuery('Lorenz system with rho = 99');
    expect(a).toEqual(b);
  });
});

describe('router: no match', () => {
  it('400 SVC_INVALID_DOMAIN with one suggestion per routable solver', () => {
    const err = expectNoMatch('What is the capital of France?');
    const suggestion = err.extra.suggestion as { solver: string; example: string }[];
    expect(suggestion).toHaveLength(19);
    expect(suggestion.map((s) => s.solver)).toEqual([...ROUTABLE_SOLVERS]);
    for (const s of suggestion) {
      expect(s.example.length).toBeGreaterThan(10);
      // Every example routes to its own solver.
      expect(routeQuery(s.example).solver).toBe(s.solver);
    }
    expect(ROUTER_TABLE).toHaveLength(19);
  });

  it('an empty or over-long query is an invalid input', () => {
    expect(() => routeQuery('')).toThrow(InputError);
    expect(() => routeQuery('x'.repeat(2001))).toThrow(InputError);
    expectNoMatch('!!! ???');
  });
});

describe('splitConstants', () => {
  const def = {
    inputs: [
      { key: 'length_m', unit: 'm', default: 1, range: '> 0' },
      { key: 't_end_s', unit: 's', default: 10, range: '> 0' },
      { key: 'mode', unit: '', default: '1d', range: '1d, 2d' },
    ] satisfies InputSpec[],
  };

  it('keeps accepted keys and lists the rest, sorted', () => {
    const r = splitConstants(def, { zebra: 1, length_m: 2, alpha: 'x', mode: '2d' });
    expect(r.inputs).toEqual({ length_m: 2, mode: '2d' });
    expect(r.ignored_constants).toEqual(['alpha', 'zebra']);
  });

  it('values are passed through unvalidated (the solver validates them)', () => {
    const r = splitConstants(def, { t_end_s: -5 });
    expect(r.inputs).toEqual({ t_end_s: -5 });
    expect(r.ignored_constants).toEqual([]);
  });

  it('absent constants are an empty object; a non-object is an invalid input', () => {
    expect(splitConstants(def, undefined)).toEqual({ inputs: {}, ignored_constants: [] });
    expect(splitConstants(def, {})).toEqual({ inputs: {}, ignored_constants: [] });
    expect(() => splitConstants(def, [1, 2])).toThrow(InputError);
    expect(() => splitConstants(def, 'length_m=2')).toThrow(InputError);
  });
});
