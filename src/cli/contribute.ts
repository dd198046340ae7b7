// `svc-node contribute status|bond|release|mode`: the contribution routes (http/routes/contribute.ts) for a terminal
// user, against a node's URL with the identity's key (any node: it forwards to the identity's home). Human lines by
// default, the node's JSON with --json. Exit 0 on success, 1 when the node refuses (the part-7 code and message on
// stderr; with --json the error body on stdout), 2 when the node cannot be reached or answers something else.
import { Argument, Command, Option } from 'commander';
import { MODES } from '../consensus/policy.js';
import { OPERATOR_TOKEN_HEADER } from '../consensus/bond-slot.js';
import { exitWith, request, show, str, type Common } from './node-request.js';

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
  const contribute = program
    .command('contribute')
    .description('an identity\'s contribution: its bond of envelopes and its mode (README.md, "Run a contributing node")');

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
    .addOption(
      new Option(
        '--operator-token <token>',
        "the node's operator token (svc-node keys shows it): the bond slot is the operator's unless contribution.operator names the identity",
      ).env('SVC_OPERATOR_TOKEN'),
    )
    .action(async (opts: Common & { tokenIds?: string; operatorToken?: string }) => {
      const ids = opts.tokenIds
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (opts.tokenIds !== undefined && (!ids || ids.length === 0)) exitWith('--token-ids names no token id', 2);
      const operator: Record<string, string> = opts.operatorToken ? { [OPERATOR_TOKEN_HEADER]: opts.operatorToken } : {};
      const body = await request(opts, 'POST', '/api/contribute/bond', ids ? { token_ids: ids } : {}, operator);
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
