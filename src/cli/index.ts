#!/usr/bin/env -S node --max-semi-space-size=64 --min-semi-space-size=64
// The svc-node command: start, verify FILE, keys (and its list|revoke|mint, see keys.ts), cluster (cluster.ts), backup
// and restore (backup.ts).
import '../polyfill.js';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from '../config/error.js';
import { decodeReceiptSecret, keyFingerprint, readReceiptSecretFile, RECEIPT_SECRET_FILE } from '../config/receipt-secret.js';
import { deriveKey } from '../kernel/receipt.js';
import { dataDirProblem } from './data-dir.js';
import { startFailure } from './start-failure.js';
import { unreachableReason } from './node-request.js';
import { addBackupCommands } from './backup.js';
import { addContributeCommand } from './contribute.js';
import { addKeysSubcommands } from './keys.js';
import { addVerifyLogCommand } from './verify-log.js';
import { challengeCommand } from './challenge.js';
import { mcpCommand } from './mcp.js';
import { statusCommand } from './status.js';
import { peersCommand } from './peers.js';
import { solveChallenge } from '../tally/claim-proof.js';
import { loadOrCreateOperatorToken, readOperatorToken, OPERATOR_TOKEN_FILE } from '../config/operator-token.js';
import { NODE_VERSION } from '../config/version.js';

// A command loads what only it needs when it runs (the node, libp2p's keys, the config schema, the cluster runner):
// every svc-node command starts in a fraction of the time.
const program = new Command();
program.name('svc-node').description('Deterministic Computation Service node').version(NODE_VERSION);
// A usage error (an unknown flag, a flag's bad value, a missing argument) is a bad configuration: exit 2, as the
// loader's own refusals do. Help and the version exit 0. Set before the commands, which inherit it.
program.exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

function configFlags(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'JSON config file (layered over config/default.json)')
    .option('--host <host>', 'HTTP listen address')
    .addOption(new Option('--port <port>', 'HTTP port (0 = any free port)').argParser(parseIntStrict))
    .option('--data-dir <dir>', 'data directory (LevelDB, keys)')
    .option('--log-level <level>', 'fatal | error | warn | info | debug | trace | silent')
    .addOption(new Option('--p2p-port <port>', 'libp2p TCP port (0 = any)').argParser(parseIntStrict))
    .option('--bootstrap <multiaddrs>', 'comma-separated bootstrap multiaddrs')
    .option('--mesh-secret <secret>', 'shared mesh secret (unset: node runs alone)')
    .option(
      '--listen <multiaddrs>',
      'comma-separated multiaddrs libp2p listens on instead of the host and p2p port (only /p2p-circuit: reached through a relay)',
    )
    .option('--announce <multiaddrs>', 'comma-separated multiaddrs other nodes should dial (a port forward, e.g. /ip4/203.0.113.7/tcp/4001)')
    .option('--mdns', 'find peers on the LAN by multicast DNS')
    .option('--upnp', 'ask the router for a port mapping (UPnP)')
    .addOption(new Option('--peers-target <n>', 'connections kept open at least').argParser(parseIntStrict))
    .addOption(new Option('--peers-max <n>', 'connections above which the worst-scored peers are disconnected').argParser(parseIntStrict))
    .addOption(new Option('--relay-reserve <when>', 'reserve a circuit relay slot').choices(['auto', 'always', 'never']))
    .option('--no-relay-serve', 'do not serve as a circuit relay for other nodes')
    .addOption(
      new Option('--metrics-port <port>', 'serve GET /metrics (Prometheus) on this port of --metrics-host (0 = any; default off)').argParser(parseIntStrict),
    )
    .option('--metrics-host <host>', 'interface of the metrics listener (default 127.0.0.1)');
}

/** A flag's integer: commander names the flag and its value in the refusal. */
function parseIntStrict(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(v);
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function flagsToPaths(o: Record<string, unknown>): Record<string, unknown> {
  return {
    host: o.host,
    port: o.port,
    dataDir: o.dataDir,
    logLevel: o.logLevel,
    'mesh.p2pPort': o.p2pPort,
    'mesh.bootstrap': typeof o.bootstrap === 'string' ? list(o.bootstrap) : undefined,
    'mesh.secret': o.meshSecret,
    'mesh.announce': typeof o.announce === 'string' ? list(o.announce) : undefined,
    'mesh.listen': typeof o.listen === 'string' ? list(o.listen) : undefined,
    'mesh.mdns': o.mdns === true ? true : undefined,
    'mesh.upnp': o.upnp === true ? true : undefined,
    'mesh.peers.target': o.peersTarget,
    'mesh.peers.max': o.peersMax,
    'mesh.relay.reserve': o.relayReserve,
    'mesh.relay.serve': o.relayServe === false ? false : undefined,
    'metrics.port': o.metricsPort,
    'metrics.host': o.metricsHost,
  };
}

function fail(message: string, code = 2): never {
  process.stderr.write(`svc-node: ${message}\n`);
  process.exit(code);
}

/** A client command's data dir must exist (with `store`, be a node's: hold its store): exit 2 with the reason, nothing created. */
async function requireDataDir(dir: string, options: { store?: boolean } = {}): Promise<void> {
  const problem = await dataDirProblem(dir, options);
  if (problem !== null) fail(problem);
}

configFlags(program.command('start').description('run a node')).action(async (opts: Record<string, unknown>) => {
  const { loadConfig } = await import('../config/load.js');
  let config;
  try {
    config = loadConfig({ configFile: opts.config as string | undefined, flags: flagsToPaths(opts) });
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  // Loaded here, not at the top: the client commands (contribute, challenge, claim, grant …) start without the node.
  const [{ SvcNode }, { dataDirBefore, removeStartLeftovers }] = await Promise.all([import('../node/node.js'), import('./start-leftovers.js')]);
  const before = await dataDirBefore(config.dataDir);
  const node = new SvcNode(config);
  try {
    await node.start();
  } catch (err) {
    // The node has stopped what it started (its store is closed): what it made in the data dir can go.
    await removeStartLeftovers(before, err).catch(() => undefined);
    if (err instanceof ConfigError) fail(err.message);
    const reason = startFailure(err, config);
    if (reason !== null) fail(reason);
    throw err;
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    node.logger.info({ signal }, 'shutting down');
    node.stop().then(
      () => process.exit(0),
      (err) => {
        node.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  // A node the cluster started holds an IPC channel to it (src/cli/cluster.ts) and stops when the channel closes: a
  // cluster that ends without stopping its nodes (SIGKILL, a crash) leaves none running on its ports and data dirs.
  // The channel may have closed while the node started.
  if (process.send !== undefined) {
    if (process.connected) process.once('disconnect', () => shutdown('disconnect'));
    else shutdown('disconnect');
  }
});

/**
 * The data dir and receipt secret of a node started with these settings, as `start` layers them: the config file,
 * the environment, the --data-dir flag. The secret is receiptSecret's hex when set, else the data dir's file.
 */
async function nodeSettings(opts: { config?: string; dataDir?: string }): Promise<{ dataDir: string; secret: Buffer | null }> {
  const { loadConfig } = await import('../config/load.js');
  const config = loadConfig({ configFile: opts.config, flags: { dataDir: opts.dataDir } });
  const secret = config.receiptSecret ? decodeReceiptSecret(config.receiptSecret, 'receiptSecret') : await readReceiptSecretFile(config.dataDir);
  return { dataDir: config.dataDir, secret };
}

/**
 * The receipt secret for verify, flags before environment (as in the config's layers): --secret (hex), else
 * --data-dir's receipt-secret file, else what a node started with --config and the environment uses (SVC_RECEIPT_SECRET,
 * the file in SVC_DATA_DIR or ./data). A cluster's data root holds its receipt-secret file like a data dir. The same
 * hex means the same key everywhere.
 */
async function receiptSecretFor(opts: { secret?: string; dataDir?: string; config?: string }): Promise<{ secret: Buffer | null; dataDir: string }> {
  if (opts.secret !== undefined) return { secret: decodeReceiptSecret(opts.secret, '--secret'), dataDir: opts.dataDir ?? process.env.SVC_DATA_DIR ?? './data' };
  if (opts.dataDir !== undefined) return { secret: await readReceiptSecretFile(opts.dataDir), dataDir: opts.dataDir };
  return nodeSettings(opts);
}

/**
 * The nodes an offline verify knows as sealers: those given with --node, and the node whose key is kept in the data
 * dir the secret is read from (or, for a cluster's data root, each node's dir under it).
 */
async function knownSealers(dir: string, nodes: string[]): Promise<Set<string>> {
  const { readNodeId } = await import('../mesh/identity.js');
  const known = new Set(nodes);
  const own = await readNodeId(dir);
  if (own !== null) known.add(own);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const id = await readNodeId(join(dir, e.name)).catch(() => null);
    if (id !== null) known.add(id);
  }
  return known;
}

program
  .command('verify <file>')
  .description(
    'verify a saved compute or solver response offline: its proof and tick receipt with the receipt secret, its seal_signature by a known node, its result_digest',
  )
  .option('--secret <hex>', 'the receipt secret, hex (as SVC_RECEIPT_SECRET and the receipt-secret file)')
  .option('--data-dir <dir>', "read the secret kept in this data dir (or a cluster's data root); its node (or nodes) are known sealers")
  .option('--node <peer id>', 'a node accepted as the sealer (repeatable)', (v: string, all: string[] = []) => [...all, v])
  .option('-c, --config <file>', "the node's JSON config file: its receiptSecret and dataDir")
  .action(async (file: string, opts: { secret?: string; dataDir?: string; node?: string[]; config?: string }) => {
    if (opts.dataDir !== undefined) await requireDataDir(opts.dataDir);
    let secret: Buffer | null = null;
    let dataDir: string;
    try {
      ({ secret, dataDir } = await receiptSecretFor(opts));
    } catch (err) {
      fail(err instanceof ConfigError ? err.message : `cannot read the receipt secret: ${(err as Error).message}`);
    }
    if (secret === null)
      fail(`no receipt secret: give --secret, SVC_RECEIPT_SECRET, --config or --data-dir holding ${RECEIPT_SECRET_FILE} (for a cluster, its data root)`);
    let body: unknown;
    try {
      body = JSON.parse(await readFile(file, 'utf8'));
    } catch (err) {
      fail(`cannot read ${file} as JSON: ${(err as Error).message}`);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) fail(`${file} is not a result object`);
    let sealers: Set<string>;
    try {
      sealers = await knownSealers(dataDir, opts.node ?? []);
    } catch (err) {
      fail(`cannot read the node key: ${(err as Error).message}`);
    }
    // The same check as POST /api/svc/verify, with the nodes given here as the known ones.
    const [{ verifySealedResult }, { verifyText }] = await Promise.all([import('../compute/verify-result.js'), import('../mesh/wire.js')]);
    const answer = verifySealedResult({ receiptKey: deriveKey(secret, 'RECEIPT'), isKnownNode: (n) => sealers.has(n), verifySignature: verifyText }, body);
    const b = body as Record<string, unknown>;
    process.stdout.write(`${JSON.stringify({ ...answer, value: b.value ?? null, unit: b.unit ?? null })}\n`);
    process.exit(answer.valid ? 0 : 1);
  });

const keysCommand = program
  .command('keys')
  .description('show the node identity (peer id), the receipt-key fingerprint and the operator token; list, revoke or mint an identity’s API keys')
  .option('--data-dir <dir>', 'data directory (default: SVC_DATA_DIR or ./data)')
  .option('-c, --config <file>', "the node's JSON config file: its dataDir and receiptSecret")
  .action(async (opts: { dataDir?: string; config?: string }) => {
    // What a node started with these settings uses: its data dir and receipt secret.
    let dataDir: string;
    let secret: Buffer | null;
    try {
      ({ dataDir, secret } = await nodeSettings(opts));
    } catch (err) {
      fail(err instanceof ConfigError ? err.message : `cannot read the receipt secret: ${(err as Error).message}`);
    }
    // It reads the node's key and token, and must not make them in a directory that is no node's.
    await requireDataDir(dataDir, { store: true });
    const { loadOrCreateNodeKey } = await import('../mesh/identity.js');
    const ident = await loadOrCreateNodeKey(dataDir);
    const fingerprint = secret === null ? null : keyFingerprint(deriveKey(secret, 'RECEIPT'));
    let operatorToken: string;
    try {
      operatorToken = await loadOrCreateOperatorToken(dataDir);
    } catch (err) {
      fail(err instanceof ConfigError ? err.message : `cannot read the operator token: ${(err as Error).message}`);
    }
    process.stdout.write(`${JSON.stringify({ nodeId: ident.nodeId, keyType: 'Ed25519', receiptKeyFingerprint: fingerprint, operatorToken, dataDir })}\n`);
  });
addKeysSubcommands(keysCommand);

/** POST `body` as JSON to `url`; prints the answer as one JSON line; exit 1 when it is not a success. */
async function postJson(url: string, body: unknown, headers: Record<string, string>): Promise<never> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  } catch (err) {
    fail(`cannot reach ${url}: ${unreachableReason(err)}`);
  }
  const text = await res.text();
  process.stdout.write(`${text.trim()}\n`);
  process.exit(res.ok ? 0 : 1);
}

program
  .command('grant')
  .description("grant paid credits (and a tier) to an identity homed on the node at --url, with that node's operator token")
  .requiredOption('--url <url>', "the node's HTTP URL, e.g. http://127.0.0.1:8787")
  .requiredOption('--zid <zid>', 'the identity')
  .addOption(new Option('--credits <n>', 'paid credits to add').argParser(parseIntStrict).makeOptionMandatory())
  .option('--tier <tier>', "set the identity's tier: free, starter, standard, professional or enterprise")
  .option('--token <token>', "the operator token (default: the data dir's operator-token file)")
  .option('--data-dir <dir>', "the node's data dir, to read its operator token", process.env.SVC_DATA_DIR ?? './data')
  .action(async (opts: { url: string; zid: string; credits: number; tier?: string; token?: string; dataDir: string }) => {
    let token = opts.token ?? process.env.SVC_OPERATOR_TOKEN ?? null;
    if (token === null) {
      await requireDataDir(opts.dataDir);
      try {
        token = await readOperatorToken(opts.dataDir);
      } catch (err) {
        fail((err as Error).message);
      }
    }
    if (token === null) fail(`no operator token: give --token, SVC_OPERATOR_TOKEN or --data-dir holding ${OPERATOR_TOKEN_FILE}`);
    await postJson(
      `${opts.url.replace(/\/+$/, '')}/api/tally/grants`,
      { zid: opts.zid, credits: opts.credits, ...(opts.tier ? { tier: opts.tier } : {}) },
      { authorization: `Bearer ${token}` },
    );
  });

program
  .command('claim')
  .description('claim the daily 128 credits for the identity of --key: asks for a challenge, solves its proof of work, claims')
  .requiredOption('--url <url>', "the node's HTTP URL, e.g. http://127.0.0.1:8787")
  .requiredOption('--key <key>', 'an API key of the identity')
  .action(async (opts: { url: string; key: string }) => {
    const base = opts.url.replace(/\/+$/, '');
    const headers = { authorization: `Bearer ${opts.key}` };
    let status: { claimable?: boolean; challenge?: string | null; difficulty?: number };
    try {
      const res = await fetch(`${base}/api/tally/claim`, { headers });
      const text = await res.text();
      if (!res.ok) {
        process.stdout.write(`${text.trim()}\n`);
        process.exit(1);
      }
      status = JSON.parse(text) as typeof status;
    } catch (err) {
      fail(`cannot reach ${base}: ${unreachableReason(err)}`);
    }
    if (!status.claimable || !status.challenge || typeof status.difficulty !== 'number') {
      process.stdout.write(`${JSON.stringify(status)}\n`);
      process.exit(1);
    }
    const nonce = solveChallenge(status.challenge, status.difficulty);
    await postJson(`${base}/api/tally/claim`, { challenge: status.challenge, nonce }, headers);
  });

program
  .command('cluster')
  .description('run N real nodes on 127.0.0.1 that form a mesh; one JSON line per node when healthy')
  .addOption(new Option('--nodes <n>', 'number of nodes').argParser(parseIntStrict).default(3))
  .addOption(
    new Option('--base-port <port>', 'HTTP port of node 1 (node i: base + i - 1; libp2p: base + 100 + i - 1); 0 = any free ports')
      .argParser(parseIntStrict)
      .default(8787),
  )
  .option('--mesh-secret <secret>', 'shared mesh secret (random when not given)')
  .option('--data-root <dir>', "parent of the nodes' data dirs", './data/cluster')
  .option('--log-level <level>', 'log level of the nodes (their logs go to <dataDir>/node.log)', 'info')
  .option('--restart', 'start a node that exits again, on the same data dir and ports (without it, the others keep running)', false)
  .action(async (opts: { nodes: number; basePort: number; meshSecret?: string; dataRoot: string; logLevel: string; restart: boolean }) => {
    if (opts.nodes < 1 || opts.nodes > 64) fail('--nodes must be 1 … 64');
    if (opts.meshSecret !== undefined && opts.meshSecret.length < 16) fail('--mesh-secret must be at least 16 characters');
    const { runCluster } = await import('./cluster.js');
    await runCluster({
      nodes: opts.nodes,
      basePort: opts.basePort,
      meshSecret: opts.meshSecret,
      dataRoot: opts.dataRoot,
      logLevel: opts.logLevel,
      restart: opts.restart,
    });
  });

addContributeCommand(program);
addBackupCommands(program);
challengeCommand(program);
mcpCommand(program, NODE_VERSION);

addVerifyLogCommand(program);
statusCommand(program);
peersCommand(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof ConfigError) fail(err.message);
  process.stderr.write(`svc-node: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
