// `svc-node keys list|revoke|mint`: an identity's API keys (http/routes/identity.ts, /api/auth/keys) for a terminal
// user, against a node's URL (any node: it forwards to the identity's home). list and revoke take an identity key
// (sk_); mint takes one too, or, for a v3 identity holding none yet, the SHA-256 of its equation (login-v3 opens a
// session, the session mints the key). The secret of a key is printed once, by mint; list never shows one.
import { Command, Option } from 'commander';
import { exitWith, request, send, show, str, type Body, type Common } from './node-request.js';

function withCommon(cmd: Command): Command {
  return cmd
    .requiredOption('--url <url>', "a node's HTTP URL, e.g. http://127.0.0.1:8787 (any node: it forwards to the identity's home)")
    .option('--key <key>', 'an identity key (sk_) of the identity (default: SVC_KEY)')
    .option('--json', "print the node's JSON answer instead of lines", false);
}

function keyLine(k: Record<string, unknown>): string {
  const scope = k.slug ? `${str(k.scope)} ${str(k.slug)}` : str(k.scope);
  const state = k.revoked_at ? `revoked ${str(k.revoked_at)}` : 'active';
  return `${str(k.key_id)}  ${str(k.kind)}  ${scope}  created ${str(k.created_at)}  last used ${str(k.last_used_at)}  ${state}`;
}

/** Adds `list`, `revoke` and `mint` under the `keys` command. */
export function addKeysSubcommands(keys: Command): void {
  withCommon(keys.command('list').description("the identity's keys: id, kind, scope, created, last used, revoked (never a secret)")).action(
    async (opts: Common) => {
      const body = await request(opts, 'GET', '/api/auth/keys');
      const listed = Array.isArray(body.keys) ? (body.keys as Record<string, unknown>[]) : [];
      show(opts, body, () => [`identity ${str(body.zid)}: ${listed.length} keys`, ...listed.map(keyLine)]);
    },
  );

  withCommon(keys.command('revoke <key_id>').description('revoke one of the identity’s keys at once, on every node (401 with revoked_at from then on)')).action(
    async (keyId: string, opts: Common) => {
      const body = await request(opts, 'DELETE', `/api/auth/keys/${encodeURIComponent(keyId)}`);
      show(opts, body, () => [`revoked  ${keyLine(body)}`]);
    },
  );

  withCommon(keys.command('mint').description('mint an identity key (shown once)'))
    .addOption(new Option('--kind <kind>', 'sk (production) or sk_test (test)').choices(['sk', 'sk_test']).default('sk'))
    .addOption(new Option('--equation-sha256 <hex>', 'a v3 identity without a key: the SHA-256 of its equation (login-v3)').env('SVC_EQUATION_SHA256'))
    .action(async (opts: Common & { kind: 'sk' | 'sk_test'; equationSha256?: string }) => {
      let body: Body;
      if (opts.key ?? process.env.SVC_KEY) {
        body = await request(opts, 'POST', '/api/auth/keys', { kind: opts.kind });
      } else if (opts.equationSha256) {
        const login = await send(opts, 'POST', '/api/svc-auth/login-v3', { equation_sha256: opts.equationSha256 }, {});
        const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
        if (!cookie) exitWith('login-v3 set no session cookie', 2);
        body = (await send(opts, 'POST', '/api/auth/api-key', { kind: opts.kind }, { cookie })).body;
      } else {
        exitWith('no identity: give --key (or SVC_KEY), or --equation-sha256 (or SVC_EQUATION_SHA256)', 2);
      }
      show(opts, body, () => [`key      ${str(body.key)}`, `key_id   ${str(body.key_id)}  ${str(body.kind)}`, 'shown once; only its digest is stored']);
    });
}
