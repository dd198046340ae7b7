// `svc-node contribute status|bond|release|mode`: the contribution routes (http/routes/contribute.ts) for a terminal
// user, against a node's URL with the identity's key (any node: it forwards to the identity's home). Human lines by
// default, the node's JSON with --json. Exit 0 on success, 1 when the node refuses (the part-7 code and message on
// stderr; with --json the error body on stdout), 2 when the node cannot be reached or answers something else.
import { Argument, Command, Option } from 'commander';
import { MODES } from '../consensus/policy.js';

interface Common {
  url: string;
  key?: string;
  json: boolean;
}

/** What the node answered: the parsed body of a 2xx. */
type Body = Record<string, unknown>;

function exitWith(message: string, code: number): never {
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

async function request(opts: Common, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Body> {
  const key = opts.key ?? process.env.SVC_KEY;
  if (!key) exitWith('no key: give --key or SVC_KEY', 2);
  const url = `${opts.url.replace(/\/+$/, '')}${path}`;
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
  } catch (err) {
    exitWith(`cannot reach ${url}: ${(err as Error).message}`, 2);
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
  return parsed as Body;
}

function show(opts: Common, body: Body, lines: () => string[]): void {
  process.stdout.write(opts.json ? `${JSON.stringify(body)}\n` : `${lines().join('\n')}\n`);
}

const str = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'string' ? v : JSON.stringify(v));

function bondLine(b: Record<string, unknown>): string {
  return `${str(b.bond_id)} on node ${str(b.node)}: ${str(b.token_ids_count)} envelopes since tick ${str(b.since_svcond)}, ${str(b.days_remaining)} of ${str(b.term_days)} days remaining`;
}

function withCommon(cmd: Command): Command {
  return cmd
    .requiredOption('--url <url>', "a node's HTTP URL, e.g. http://127.0.0.1:8787 (any node: it forwards to the identity's home)")
    .option('--key <key>', 'an API key of the identity (default: SVC_KEY)')
    .option('--json', "print the node's JSON answer instead of lines", false);
}

/** Adds `contribute` and its four subcommands to the svc-node program. */
export function addContributeCommand(program: Command): void {
  const contribute = program.command('contribute').description("an identity's contribution: its bond of envelopes and its mode (architecture.md §6)");

  withCommon(contribute.command('status').description('the bond, days remaining, mode and open challenges')).action(async (opts: Common) => {
    const body = await request(opts, 'GET', '/api/contribute/status');
    show(opts, body, () => {
      const bond = body.bond as Record<string, unknown> | null;
      const policy = (body.policy ?? {}) as Record<string, unknown>;
      const challenges = Array.isArray(body.open_challenges) ? body.open_challenges : [];
      return [
        `identity   ${str(body.zid)}`,
        `mode       ${str(body.mode)} (since tick ${str(body.mode_since_svcond)})`,
        `bond       ${bond ? bondLine(bond) : 'none'}`,
        `challenges ${challenges.length} open${challenges.length > 0 ? `: ${challenges.map(str).join(', ')}` : ''}`,
        `policy     a bond holds ${str(policy.bond_envelopes)} envelopes; committees of ${str(policy.committee_size)}, quorum ${str(policy.quorum)}`,
      ];
    });
  });

  withCommon(contribute.command('bond').description('bond envelopes the identity holds (the oldest, or those named): they become immovable'))
    .addOption(new Option('--token-ids <ids>', 'comma-separated envelope token ids to bond (default: the oldest held)'))
    .action(async (opts: Common & { tokenIds?: string }) => {
      const ids = opts.tokenIds
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (opts.tokenIds !== undefined && (!ids || ids.length === 0)) exitWith('--token-ids names no token id', 2);
      const body = await request(opts, 'POST', '/api/contribute/bond', ids ? { token_ids: ids } : {});
      show(opts, body, () => [`bonded     ${bondLine(body)}`, `identity   ${str(body.zid)}`]);
    });

  withCommon(contribute.command('release').description('release the bond (refused while a challenge is open); the mode goes back to idle')).action(
    async (opts: Common) => {
      const body = await request(opts, 'POST', '/api/contribute/release', {});
      show(opts, body, () => [`released   ${str(body.bond_id)} at tick ${str(body.released_svcond)}`, `mode       ${str(body.mode)}`]);
    },
  );

  withCommon(
    contribute
      .command('mode')
      .description('switch the mode: idle or contributing (needs a bond); experimenting is refused by the node')
      .addArgument(new Argument('<mode>', 'the new mode').choices(MODES)),
  ).action(async (mode: string, opts: Common) => {
    const body = await request(opts, 'POST', '/api/contribute/mode', { mode });
    show(opts, body, () => [
      `mode       ${str(body.mode)} (was ${str(body.previous)}, since tick ${str(body.since_svcond)})`,
      `bond       ${str(body.bond_id)}`,
    ]);
  });
}
