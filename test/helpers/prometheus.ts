// The Prometheus text exposition format (0.0.4), parsed strictly, and a family's value summed over matching labels:
// what the metrics tests read /metrics with.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text exposition format (0.0.4), strictly: every sample belongs to a family declared by # TYPE. */
export function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const family = (name: string) => [name, name.replace(/_(bucket|sum|count|total|created)$/, '')].find((n) => types.has(n));
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(line);
    if (m) {
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3]!)) throw new Error(`bad type: ${line}`);
        types.set(m[2]!, m[3]!);
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
      let l: RegExpExecArray | null;
      let consumed = 0;
      while ((l = re.exec(m[2])) !== null) {
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
        consumed = re.lastIndex;
      }
      if (consumed !== m[2].length) throw new Error(`bad labels: ${line}`);
    }
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`bad value: ${line}`);
    if (!family(m[1]!)) throw new Error(`sample of an undeclared family: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { types, samples };
}

export const value = (samples: Sample[], name: string, labels: Record<string, string> = {}): number =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
