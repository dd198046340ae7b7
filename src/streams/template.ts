// Output templates of a stream channel (spec 4.5): `{{placeholder}}` substitution and nothing else. A placeholder is
// a dotted path of plain names into the sealed envelope (`{{value}}`, `{{cko.svcond}}`, `{{outputs.x.0}}`); it is
// looked up through own properties only, so no name reaches a prototype, a getter or a function, and no text of a
// template is ever evaluated. Anything that is not a well-formed placeholder stays as written.

/** Longest template accepted (characters). */
export const TEMPLATE_MAX = 8192;
/** Longest rendered output (characters); a placeholder naming a large array is cut there. */
export const RENDERED_MAX = 65_536;

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]{1,64}(?:\.[A-Za-z0-9_]{1,64}){0,15})\s*\}\}/g;

function lookup(root: unknown, path: string): unknown {
  let at: unknown = root;
  for (const name of path.split('.')) {
    if (at === null || typeof at !== 'object') return undefined;
    if (!Object.prototype.hasOwnProperty.call(at, name)) return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return at;
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** Render `template` over `data` (a parsed sealed envelope). */
export function renderTemplate(template: string, data: unknown): string {
  const out = template.replace(PLACEHOLDER, (_m, path: string) => show(lookup(data, path)));
  return out.length > RENDERED_MAX ? out.slice(0, RENDERED_MAX) : out;
}
