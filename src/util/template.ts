// {{placeholder}} templates (spec 4.5: "no code in a template is executed"): a placeholder names a path into a context
// object and is looked up, never evaluated. Used by agent programs and the reactor's feedback rule.

export const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}$/;

function lookup(path: string, ctx: object): unknown {
  let v: unknown = ctx;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, part)) return null;
    v = (v as Record<string, unknown>)[part];
  }
  return v ?? null;
}

/** Fill a template: a string that is one placeholder takes the value as it is (a number stays a number). */
export function fill(t: unknown, ctx: object): unknown {
  if (typeof t === 'string') {
    const whole = WHOLE.exec(t);
    if (whole) return lookup(whole[1]!, ctx);
    return t.replace(PLACEHOLDER, (_m, path: string) => {
      const v = lookup(path, ctx);
      return v === null || v === undefined ? '' : String(v);
    });
  }
  if (Array.isArray(t)) return t.map((x) => fill(x, ctx));
  if (t !== null && typeof t === 'object') return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, fill(v, ctx)]));
  return t;
}

/** Every placeholder path a template names. */
export function placeholders(t: unknown, out: string[] = []): string[] {
  if (typeof t === 'string') for (const m of t.matchAll(PLACEHOLDER)) out.push(m[1]!);
  else if (Array.isArray(t)) for (const x of t) placeholders(x, out);
  else if (t !== null && typeof t === 'object') for (const v of Object.values(t)) placeholders(v, out);
  return out;
}
