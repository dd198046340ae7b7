// The natural-language router of solvers.md §5 (POST /api/svc/auto): pure keyword scoring over 19 solvers,
// and the split of `constants` into the chosen solver's accepted inputs and the ignored keys.
// It takes the solver definition as a parameter and imports no registry, so it can sit below the service layer.
import { ServiceError } from '../kernel/errors.js';
import { InputError } from './errors.js';
import type { SolverDef } from './types.js';

export interface RouterRow {
  solver: string;
  /** Keywords worth 3 points each. */
  strong: readonly string[];
  /** Keywords worth 1 point each. */
  weak: readonly string[];
  /** One example query, returned in the no-match suggestion list. */
  example: string;
}

/** The table of §5, in its order (ties go to the earlier row). */
export const ROUTER_TABLE: readonly RouterRow[] = [
  {
    solver: 'blackhole',
    strong: ['black hole', 'schwarzschild', 'event horizon', 'infall', 'falling into', 'geodesic', 'singularity'],
    weak: ['relativity', 'relativistic', 'horizon'],
    example: 'How long does a probe take to drop radially into a Schwarzschild black hole?',
  },
  {
    solver: 'multibody',
    strong: ['n body', 'nbody', 'three body', 'two body', 'planet', 'planetary', 'orbit', 'orbital', 'solar system', 'moon', 'gravitational'],
    weak: ['sun', 'earth', 'gravity'],
    example: 'Integrate the orbit of a planet around its star for a few years.',
  },
  {
    solver: 'zeta',
    strong: ['zeta', 'riemann', 'nontrivial zero', 'non trivial zero', 'critical line'],
    weak: ['zero', 'prime'],
    example: 'Find the tenth zero of the Riemann zeta function on the critical line.',
  },
  {
    solver: 'sat',
    strong: ['sat', '3 sat', 'satisfiability', 'satisfiable', 'cnf', 'clause', 'boolean formula', 'dpll', 'walksat'],
    weak: ['boolean', 'logic', 'variables'],
    example: 'Is this random CNF formula with 50 variables satisfiable?',
  },
  {
    solver: 'quant',
    strong: ['black scholes', 'call option', 'put option', 'option price', 'option pricing', 'strike price', 'european option', 'implied volatility'],
    weak: ['option', 'strike', 'volatility', 'premium', 'stock'],
    example: 'What is a fair price for a European call option one year out?',
  },
  {
    solver: 'epi',
    strong: [
      'epidemic',
      'sir model',
      'seir',
      'outbreak',
      'infection',
      'infected',
      'infectious',
      'pandemic',
      'contagion',
      'disease',
      'attack rate',
      'herd immunity',
    ],
    weak: ['population', 'spread'],
    example: 'What fraction of a town ends up infected in a flu outbreak with R0 = 2.5?',
  },
  {
    solver: 'predator_prey',
    strong: ['predator', 'prey', 'lotka', 'volterra', 'foxes', 'rabbits', 'wolves', 'lynx', 'hares'],
    weak: ['ecosystem', 'species'],
    example: 'How long is one boom-and-bust cycle of rabbits and the foxes that eat them?',
  },
  {
    solver: 'tumour',
    strong: ['tumour', 'tumor', 'cancer', 'glioma', 'glioblastoma', 'fisher kpp', 'kpp', 'invasion front'],
    weak: ['growth front', 'invasion', 'cells'],
    example: 'How fast does the edge of a brain tumour advance into healthy tissue?',
  },
  {
    solver: 'kalman',
    strong: ['kalman', 'state estimation', 'sensor fusion', 'noisy measurements', 'noisy position', 'tracking filter'],
    weak: ['filter', 'tracking', 'measurement', 'noise'],
    example: 'Smooth a cart position from a Kalman filter fed with jittery readings.',
  },
  {
    solver: 'quantum_levels',
    strong: [
      'schrodinger',
      'schroedinger',
      'energy levels',
      'energy level',
      'eigenstate',
      'quantum well',
      'particle in a box',
      'harmonic oscillator',
      'morse potential',
      'bound state',
      'ground state',
    ],
    weak: ['quantum', 'electron', 'eigenvalue'],
    example: 'What is the ground state energy of an electron trapped in a finite quantum well?',
  },
  {
    solver: 'acoustic',
    strong: ['acoustic', 'organ pipe', 'resonator', 'flute', 'clarinet', 'oboe', 'trumpet', 'horn', 'sound', 'pipe', 'duct'],
    weak: ['tube', 'tone', 'resonance', 'air column'],
    example: 'Which note does a clarinet-like closed tube of 60 cm play?',
  },
  {
    solver: 'buckling',
    strong: ['buckling', 'buckle', 'buckles', 'euler load', 'critical load', 'column', 'strut'],
    weak: ['compression', 'compressive', 'axial load'],
    example: 'At what axial force does a slender steel column buckle?',
  },
  {
    solver: 'fea',
    strong: ['cantilever', 'finite element', 'fem', 'fea', 'beam deflection', 'tip deflection', 'bending'],
    weak: ['beam', 'deflection', 'stiffness', 'load'],
    example: 'How far does the free end of a loaded cantilever sag?',
  },
  {
    solver: 'device',
    strong: ['pn junction', 'p n junction', 'diode', 'semiconductor', 'built in potential', 'depletion', 'doping', 'dopant', 'poisson boltzmann'],
    weak: ['silicon', 'junction'],
    example: 'What is the built-in voltage of a silicon diode with these doping levels?',
  },
  {
    solver: 'climate',
    strong: ['shallow water', 'climate', 'ocean', 'atmosphere', 'atmospheric', 'rossby', 'poincare', 'inertia gravity', 'coriolis', 'geostrophic'],
    weak: ['rotating', 'latitude', 'gravity wave'],
    example: 'How fast do waves travel across a rotating ocean basin with Coriolis force?',
  },
  {
    solver: 'flow',
    strong: ['navier stokes', 'incompressible', 'taylor green', 'vortex', 'vorticity', 'viscous flow', 'fluid flow', 'turbulence'],
    weak: ['fluid', 'flow', 'viscosity', 'reynolds'],
    example: 'How quickly does a Taylor-Green vortex decay in a viscous fluid?',
  },
  {
    solver: 'heat',
    strong: [
      'heat equation',
      'heat diffusion',
      'heat conduction',
      'thermal diffusion',
      'thermal diffusivity',
      'diffusivity',
      'conduction',
      'cooling',
      'temperature distribution',
      'temperature profile',
    ],
    weak: ['heat', 'temperature', 'thermal', 'rod', 'plate'],
    example: 'How does heat conduction cool the centre of a hot copper rod?',
  },
  {
    solver: 'wave',
    strong: ['wave equation', 'membrane', 'drum', 'drumhead', 'vibrating', 'standing wave', 'maxwell', 'electromagnetic wave', 'fdtd'],
    weak: ['wave', 'electromagnetic', 'oscillation', 'cavity'],
    example: 'What is the lowest frequency of a square drum skin?',
  },
  {
    solver: 'lorenz',
    strong: ['lorenz', 'strange attractor', 'chaotic attractor', 'butterfly effect', 'chaos'],
    weak: ['chaotic', 'attractor'],
    example: 'Follow the Lorenz system for 20 time units and report where z ends up.',
  },
];

/** The 19 routable solver ids, in table order. */
export const ROUTABLE_SOLVERS: readonly string[] = ROUTER_TABLE.map((r) => r.solver);

export const MAX_QUERY_LENGTH = 2000;

export interface RouteResult {
  solver: string;
  /** best / (best + runner-up), rounded to 4 decimals; 1 when no other solver scored. */
  confidence: number;
  /** Keywords of the chosen solver that matched (strong ones first, each in table order). */
  matched: string[];
  /** Score of every routable solver, in table order. */
  scores: Record<string, number>;
}

/** Lower-case, every character outside [a-z0-9] becomes a space, split into tokens. */
export function tokenize(query: string): string[] {
  return query
    .toLowerCase()
    .replace(/[^a-z0-9]/g, ' ')
    .split(' ')
    .filter((t) => t.length > 0);
}

/** A token stands for a keyword word when it is the word itself or the word plus 's' or 'es'. */
function tokenMatches(token: string, word: string): boolean {
  return token === word || token === `${word}s` || token === `${word}es`;
}

/** True when the keyword's words occur as consecutive tokens. */
export function keywordMatches(tokens: readonly string[], keyword: string): boolean {
  const words = keyword.split(' ');
  for (let start = 0; start + words.length <= tokens.length; start++) {
    let all = true;
    for (let k = 0; k < words.length; k++) {
      if (!tokenMatches(tokens[start + k]!, words[k]!)) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
}

function noMatch(best: number): ServiceError {
  return new ServiceError(
    400,
    'SVC_INVALID_DOMAIN',
    `the query's domain is not recognised (best keyword score ${best} < 3); name the system to simulate, e.g. one of the suggestions`,
    { suggestion: ROUTER_TABLE.map((r) => ({ solver: r.solver, example: r.example })) },
  );
}

/**
 * Pick a solver for a natural-language query (§5). Score = 3 × strong keywords + 1 × weak keywords matched,
 * each counted once; the best score wins and ties go to the earlier row. Best < 3 → 400 SVC_INVALID_DOMAIN.
 */
export function routeQuery(query: string): RouteResult {
  if (typeof query !== 'string' || query.length < 1 || query.length > MAX_QUERY_LENGTH) {
    throw new InputError('query', `must be a string of 1 … ${MAX_QUERY_LENGTH} characters`, { min: 1, max: MAX_QUERY_LENGTH });
  }
  const tokens = tokenize(query);
  const scores: Record<string, number> = {};
  const matchedBySolver: string[][] = [];
  let bestIndex = -1;
  let bestScore = 0;
  ROUTER_TABLE.forEach((row, index) => {
    const matched: string[] = [];
    let score = 0;
    for (const kw of row.strong) {
      if (keywordMatches(tokens, kw)) {
        matched.push(kw);
        score += 3;
      }
    }
    for (const kw of row.weak) {
      if (keywordMatches(tokens, kw)) {
        matched.push(kw);
        score += 1;
      }
    }
    scores[row.solver] = score;
    matchedBySolver.push(matched);
    // Strictly greater: on a tie the earlier row keeps the lead.
    if (score > bestScore) {
      bestScore = score;
      bestIndex = index;
    }
  });
  if (bestScore < 3 || bestIndex < 0) throw noMatch(bestScore);
  let runnerUp = 0;
  ROUTER_TABLE.forEach((row, index) => {
    if (index !== bestIndex && scores[row.solver]! > runnerUp) runnerUp = scores[row.solver]!;
  });
  const confidence = Math.round((bestScore / (bestScore + runnerUp)) * 1e4) / 1e4;
  return { solver: ROUTER_TABLE[bestIndex]!.solver, confidence, matched: matchedBySolver[bestIndex]!, scores };
}

/**
 * Split the request's `constants` into the inputs the chosen solver accepts (its InputSpec keys) and the
 * keys it ignores (sorted, so equal requests give equal answers whatever their key order). The accepted
 * inputs are validated afterwards by the solver's own resolve, exactly as on its own route.
 */
export function splitConstants(solverDef: Pick<SolverDef, 'inputs'>, constants: unknown): { inputs: Record<string, unknown>; ignored_constants: string[] } {
  if (constants === undefined || constants === null) return { inputs: {}, ignored_constants: [] };
  if (typeof constants !== 'object' || Array.isArray(constants)) {
    throw new InputError('constants', 'constants must be a JSON object', 'object');
  }
  const accepted = new Set(solverDef.inputs.map((spec) => spec.key));
  const inputs: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [key, value] of Object.entries(constants as Record<string, unknown>)) {
    if (accepted.has(key)) inputs[key] = value;
    else ignored.push(key);
  }
  ignored.sort();
  return { inputs, ignored_constants: ignored };
}
