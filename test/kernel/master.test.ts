// Rule 8's field terms (kernel/master.ts) against closed forms. The test field is φ_j = cos(2π·3j/32), j = 0…31:
// its DFT has all power in mode 3 (P_3 = (n/2)²/n² = 1/4), ⟨φ²⟩ = 1/2, ⟨φ⁶⟩ = 5/16 over the 32 samples, and the
// three-point Laplacian acts on it as the eigenvalue −4·sin²(π·3/32)/h² with h = 1/31. Interior RMS values drop
// the two end samples (φ_0 = 1, φ_31 = cos(3π/16)). Scalar results carry no samples, so their terms are null.
import { describe, expect, it } from 'vitest';
import { fieldTerms } from '../../src/kernel/master.js';
import { defaultRegistry } from '../../src/solvers/registry.js';

const N = 32;
const M = 3;
const wave = Array.from({ length: N }, (_, j) => Math.cos((2 * Math.PI * M * j) / N));
const last = Math.cos((3 * Math.PI) / 16); // φ_31 = cos(2π·93/32) = cos(3π/16)

// Closed forms of the interior RMS (30 interior samples).
const rmsPhi = Math.sqrt((N / 2 - 1 - last ** 2) / (N - 2)); // Σφ² = 16 over all 32
const rmsPhi3 = Math.sqrt((N * (5 / 16) - 1 - last ** 6) / (N - 2)); // Σφ⁶ = 10 over all 32
const boxFactor = 4 * Math.sin((Math.PI * M) / N) ** 2 * (N - 1) ** 2; // −∇²φ = boxFactor·φ
const gamma = (2 * Math.PI * M) ** 2;

function term(t: ReturnType<typeof fieldTerms>, name: string): number {
  return t.master_equation.masterSum.terms.find((x) => x.name === name)!.value;
}

describe('rule 8 field terms of a profile', () => {
  const R_t = 1.0007;
  const t = fieldTerms(wave, R_t);

  it('spectrum: all power in mode 3, G_k = 1/(k² + 1), centroid 3, dominant share 1', () => {
    const sp = t.spectral_propagator;
    expect(sp.k).toHaveLength(16);
    expect(sp.k[5]).toBeCloseTo(10 * Math.PI, 12);
    sp.power.forEach((p, k) => expect(p).toBeCloseTo(k === M ? 0.25 : 0, 14));
    sp.propagator.forEach((g, k) => expect(g).toBeCloseTo(1 / ((2 * Math.PI * k) ** 2 + 1), 15));
    expect(sp.propagated).toBeCloseTo(1 / (gamma + 1), 14);
    expect(t.functional_equation.C).toBeCloseTo(1, 12);
    expect(t.functional_equation.X).toBeCloseTo(3, 12);
  });

  it('master equation: the six terms as RMS over the interior, with Γ = k_dominant² = (6π)²', () => {
    const rel = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);
    expect(rel(term(t, 'dalembertian'), boxFactor * rmsPhi)).toBeLessThan(1e-12);
    expect(rel(term(t, 'mass'), rmsPhi)).toBeLessThan(1e-13);
    expect(rel(term(t, 'self_interaction'), rmsPhi3)).toBeLessThan(1e-13);
    expect(rel(term(t, 'decay'), gamma * rmsPhi)).toBeLessThan(1e-13);
    expect(rel(term(t, 'ko42_coupling'), 1e-3 * R_t * rmsPhi)).toBeLessThan(1e-13);
    // T = (boxFactor + 1 + Γ + κR)·φ + φ³ pointwise; RMS formed from the closed-form coefficients.
    const c1 = boxFactor + 1 + gamma + 1e-3 * R_t;
    let s = 0;
    for (let j = 1; j < N - 1; j++) s += (c1 * wave[j]! + wave[j]! ** 3) ** 2;
    const T = Math.sqrt(s / (N - 2));
    expect(rel(term(t, 'source'), T)).toBeLessThan(1e-12);
    expect(t.master_equation.masterSum.total).toBe(term(t, 'source'));
    expect(t.master_equation.masterSum.unit).toBe('1');
    expect(t.master_equation.masterSum.terms.map((x) => x.symbol)).toEqual(['□φ', 'μ²φ', 'λφ³', 'Γφ', 'κR(t)φ', 'T']);
  });

  it('functional equation: E = P_φ·Z with P_φ = 1/2 and Z = M·R·C·(1 − 1e-4)/(1 + X)', () => {
    const f = t.functional_equation;
    expect(f.P_phi).toBeCloseTo(0.5, 15);
    expect(f.R).toBe(R_t);
    expect(f.delta).toBe(1e-4);
    expect(f.M).toBe(t.master_equation.masterSum.total);
    const Z = (f.M * R_t * 1 * (1 - 1e-4)) / 4;
    expect(f.Z / Z).toBeCloseTo(1, 12);
    expect(f.E / (0.5 * Z)).toBeCloseTo(1, 12);
  });

  it('normalises by max|samples|: a scaled field gives the same terms; non-finite samples count as 0', () => {
    const scaled = fieldTerms(
      wave.map((v) => -250 * v),
      R_t,
    );
    expect(term(scaled, 'mass')).toBeCloseTo(term(t, 'mass'), 13);
    expect(term(scaled, 'source')).toBeCloseTo(term(t, 'source'), 9);
    const zero = fieldTerms(new Array<number>(16).fill(0), 1);
    expect(zero.master_equation.masterSum.total).toBe(0);
    expect(zero.functional_equation).toMatchObject({ P_phi: 0, C: 0, X: 0, E: 0 });
    expect(zero.spectral_propagator.propagated).toBe(0);
    const holed = fieldTerms([...wave.slice(0, 31), Number.NaN], R_t);
    expect(Number.isFinite(holed.master_equation.masterSum.total)).toBe(true);
  });
});

describe('rule 8 field terms of a 2-D field', () => {
  it('a field constant along y adds its mean square ⟨φ²⟩ = 1/2 to mode 0: C = 1/3, X = 1, no y-curvature', () => {
    const rows = Array.from({ length: 8 }, () => wave.slice());
    const t = fieldTerms(rows, 1);
    const p = t.spectral_propagator.power;
    expect(p[0]).toBeCloseTo(0.5, 14);
    expect(p[M]).toBeCloseTo(0.25, 14);
    expect(t.functional_equation.C).toBeCloseTo(1 / 3, 13);
    expect(t.functional_equation.X).toBeCloseTo(1, 13);
    // Interior rows are identical to the profile and ∂²φ/∂y² = 0, so the RMS terms equal the 1-D ones.
    const oneD = fieldTerms(wave, 1);
    for (const name of ['dalembertian', 'mass', 'self_interaction', 'decay', 'ko42_coupling', 'source']) {
      expect(term(t, name) / term(oneD, name)).toBeCloseTo(1, 12);
    }
  });
});

describe('rule 8: scalar results have no samples, so their field terms are null', () => {
  // The sealed body writes master_equation / functional_equation / spectral_propagator as null when a solver's
  // output is scalar (test/http/solvers.test.ts checks the sealed bodies); here: the scalar solvers give no samples.
  const registry = defaultRegistry();
  for (const id of ['grid', 'sat']) {
    it(`${id} returns output_class 'scalar' with rule8 and rule8_array null`, () => {
      const s = registry.get(id)!;
      const out = s.run(s.resolve({}));
      expect(out.output_class).toBe('scalar');
      expect(out.rule8).toBeNull();
      expect(out.rule8_array).toBeNull();
    });
  }
});
