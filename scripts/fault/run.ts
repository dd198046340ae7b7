// A fault-injection run against real node processes on 127.0.0.1 (test/helpers/fault, docs/fault-testing.md):
//   npx tsx scripts/fault/run.ts --nodes 5 --faults 200 --seed 7 [--clients 4] [--minutes 30] [--keep] [--custody]
//     [--replace-ticks N] [--log-level info]
// Runs on the build (dist/: `npm run build` first). Prints one JSON line: the faults, the operations, what was
// acknowledged, the recovery and each checker result (violations cut to the first 20 of each); exits 1 when a check
// fails. No fault starts after --minutes (30). --history FILE writes every operation, fault and the final state read,
// as JSON. --custody bonds every node's operator: custody sets of three, and failovers of killed or cut-off homes;
// --replace-ticks sets custody.replaceTicks (default the node's: no custodian is replaced within a run), so a node
// down or cut off that long is replaced in its identities' sets (reconfigurations under faults).
import { writeFile } from 'node:fs/promises';
import '../../src/polyfill.js';
import { runFaultRun } from '../../test/helpers/fault/run.js';
import { numberArg } from '../bench/lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const VIOLATIONS_SHOWN = 20;
const historyAt = process.argv.indexOf('--history');
const logLevelAt = process.argv.indexOf('--log-level');
const replaceAt = process.argv.indexOf('--replace-ticks');

const run = await runFaultRun({
  nodes: numberArg('nodes', 5),
  faults: numberArg('faults', 200),
  seed: numberArg('seed', 1),
  workload: { clients: numberArg('clients', 4) },
  schedule: { deadlineMs: numberArg('minutes', 30) * 60_000 },
  keep: process.argv.includes('--keep'),
  custody: process.argv.includes('--custody'),
  ...(logLevelAt >= 0 ? { logLevel: process.argv[logLevelAt + 1]! } : {}),
  ...(replaceAt >= 0 ? { replaceTicks: numberArg('replace-ticks', 0) } : {}),
});
if (historyAt >= 0) await writeFile(process.argv[historyAt + 1]!, JSON.stringify({ history: run.history, faults: run.faults, state: run.state }));
const { checks, ...rest } = run.report;
const shown = checks.map((c) => ({ ...c, violations: c.violations.slice(0, VIOLATIONS_SHOWN), violation_count: c.violations.length }));
process.stdout.write(`${JSON.stringify({ ...rest, checks: shown })}\n`);
process.exit(run.report.ok ? 0 : 1);
