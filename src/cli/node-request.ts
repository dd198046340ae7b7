// How the terminal commands that speak to a node's HTTP API (contribute, keys) send a request and show its answer:
// human lines by default, the node's JSON with --json. Exit 0 on success, 1 when the node refuses (the part-7 code and
// message on stderr; with --json the error body on stdout), 2 when the node cannot be reached or answers something else.

export interface Common {
  url: string;
  key?: string;
  json: boolean;
}

/**
 * Why a request to a node got no answer, in words: fetch's own message is "fetch failed" whatever the cause (nothing
 * listening, a name that does not resolve, a timeout), the cause is in `cause`.
 */
export function unreachableReason(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'no answer before the timeout';
  const code = e?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused: no node listens there (is it running, and is this the URL of its "listening" log line?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the host name does not resolve (${code})`;
  if (code === 'ERR_INVALID_URL') return 'not a URL (e.g. http://127.0.0.1:8787)';
  const cause = e?.cause?.message;
  return cause && cause !== e?.message ? `${e?.message ?? String(err)}: ${cause}` : (e?.message ?? String(err));
}

/** What the node answered: the parsed body of a 2xx. */
export type Body = Record<string, unknown>;

export function exitWith(message: string, code: number): never {
  process.stderr.write(`svc-node: ${message}\n`);
  process.exit(code);
}

/** The part-7 error's code, message and own fields, in lines a person reads. */
function describeError(status: number, body: unknown): string {
  const e = (body as { error?: Record<string, unknown> } | null)?.error;
  if (!e || typeof e !== 'object') return `the node answered ${status}`;
  const skip = new Set(['code', 'message', 'status', 'trace_id', 'timestamp', 'documentation_url', 'details']);
  const fields = Object.entries(e)
    .filter(([k]) => !skip.has(k))
    .map(([k, v]) => `  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return [`${String(e.code)} (${status}): ${String(e.message)}`, ...fields, `  trace_id: ${String(e.trace_id)}`].join('\n');
}

/** Send a request as it is (no key added); the parsed 2xx body and the response's headers, else exit as above. */
export async function send(
  opts: Pick<Common, 'url' | 'json'>,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ body: Body; headers: Headers }> {
  const url = `${opts.url.replace(/\/+$/, '')}${path}`;
  const sent: Record<string, string> = { ...headers };
  if (body !== undefined) sent['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  } catch (err) {
    exitWith(`cannot reach ${url}: ${unreachableReason(err)}`, 2);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    exitWith(`${url} answered ${res.status} with no JSON: ${text.slice(0, 200)}`, 2);
  }
  if (!res.ok) {
    if (opts.json) process.stdout.write(`${JSON.stringify(parsed)}\n`);
    exitWith(describeError(res.status, parsed), 1);
  }
  return { body: parsed as Body, headers: res.headers };
}

/** A request with the identity's key (--key, else SVC_KEY). */
export async function request(
  opts: Common,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<Body> {
  const key = opts.key ?? process.env.SVC_KEY;
  if (!key) exitWith('no key: give --key or SVC_KEY', 2);
  return (await send(opts, method, path, body, { ...extra, authorization: `Bearer ${key}` })).body;
}

export function show(opts: Pick<Common, 'json'>, body: Body, lines: () => string[]): void {
  process.stdout.write(opts.json ? `${JSON.stringify(body)}\n` : `${lines().join('\n')}\n`);
}

export const str = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'string' ? v : JSON.stringify(v));
