// The curated library catalogue behind POST /api/svc/lib-search and the discovery counts: every operator,
// every solver and the kernel's documents, shipped with the node. Search is deterministic token scoring.
import { listOperators } from '../kernel/operators/registry.js';
import type { SolverRegistry } from '../solvers/registry.js';

export interface LibraryEntry {
  id: string;
  kind: 'operator' | 'solver' | 'kernel_doc';
  title: string;
  text: string;
  path: string;
}

export const KERNEL_DOCS: { id: string; title: string; text: string }[] = [
  { id: 'rule-ko42', title: 'KO42 is mandatory', text: 'Operator KO42 is mandatory on every computation and always the first entry of the operator chain.' },
  { id: 'rule-modulation', title: 'Modulation', text: 'R(t) = S(t)[1 + a sin(2 pi f t + phi0)], f = 1.287 Hz, a = 1e-3, so |R - 1| <= 1e-3. Phase in 0..1.' },
  {
    id: 'rule-clock',
    title: 'Tick period',
    text: 'Tick period T = 0.777000777 s exactly (777000777 ns); f*T = 1; 0.777 is display only. Read the tick number (svcond) from the API.',
  },
  {
    id: 'rule-gate',
    title: 'Tolerance gate',
    text: 'Every result carries a precision bound 1e-4 and passes a tolerance gate of 0.1 percent; failing results are HTTP 422 and nothing is sealed.',
  },
  {
    id: 'rule-determinism',
    title: 'Determinism',
    text: 'Identical operators and inputs give the identical value bit for bit; each response is stamped at its own tick with a new proof.',
  },
  {
    id: 'rule-parity',
    title: 'Parity check and metric shift',
    text: 'When the tick variance of a computation exceeds 0.0091 the kernel applies a metric shift; delta alpha is in cko.metric_shift.',
  },
  {
    id: 'rule-protocol',
    title: 'Seven-step protocol',
    text: 'KO42 included; 1-3 domain operators; match scale to domain; target 0.1 percent; compile master field equation; execute functional equation; verify.',
  },
  {
    id: 'rule-field-terms',
    title: 'Field terms',
    text: 'Master equation, functional equation and spectral propagator are computed only for fields, spectra and profiles; null for scalar results.',
  },
  {
    id: 'rule-cko',
    title: 'Result envelope (CKO)',
    text: 'operatorChain, masterSum, R(t), phase, svcond (tick number), svcProof (HMAC-SHA256), precisionBound.',
  },
  {
    id: 'doc-receipts',
    title: 'Receipts and verification',
    text: 'svcProof is HMAC-SHA256 over the RFC 8785 canonical JSON of the sealed body; POST /api/svc/verify checks it; prove receipts use the PROVE key.',
  },
  {
    id: 'doc-keys',
    title: 'API keys',
    text: 'Bearer keys by prefix: sk_ production, sk_test_ test, svc_ak_ legacy (until 1.287.7), zsm_ state machine, zsm_pub_ read-only embed.',
  },
];

function tokens(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .split(' ')
    .filter(Boolean);
}

export class Library {
  readonly entries: LibraryEntry[];

  constructor(registry: SolverRegistry) {
    this.entries = [
      ...listOperators().map((op) => ({
        id: op.id,
        kind: 'operator' as const,
        title: `${op.id} (${op.domain})`,
        text: `${op.formula} ${op.unit} ${op.inputs.map((i) => i.key).join(' ')} ${op.domain}`,
        path: '/api/svc/compute',
      })),
      ...registry.list().map((s) => ({
        id: s.id,
        kind: 'solver' as const,
        title: `${s.id}: ${s.kind}`,
        text: `${s.kind} ${(s.modes ?? []).join(' ')} ${s.inputs.map((i) => i.key).join(' ')}`,
        path: s.endpoint ?? '/api/svc/solve',
      })),
      ...KERNEL_DOCS.map((d) => ({ id: d.id, kind: 'kernel_doc' as const, title: d.title, text: d.text, path: '/api/kernel/prompt' })),
    ];
  }

  search(query: string, limit: number, kind?: LibraryEntry['kind']): { total: number; results: (LibraryEntry & { score: number })[] } {
    const q = [...new Set(tokens(query))];
    const scored = this.entries
      .filter((e) => !kind || e.kind === kind)
      .map((e) => {
        const idTokens = tokens(e.id);
        const titleTokens = new Set(tokens(e.title));
        const textTokens = new Set(tokens(e.text));
        let score = 0;
        for (const t of q) {
          if (idTokens.includes(t)) score += 3;
          else if (titleTokens.has(t)) score += 2;
          else if (textTokens.has(t)) score += 1;
          else if ([...textTokens].some((w) => w.startsWith(t) && t.length >= 3)) score += 0.5;
        }
        return { ...e, score };
      })
      .filter((e) => e.score > 0)
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
    return { total: scored.length, results: scored.slice(0, limit) };
  }
}
