// `svc-node verify-log FILE [--proofs FILE]`: check an exported state-machine log offline (chain/verify-log.ts):
// its hash chain, its RFC 6962 root against every signed checkpoint, forks, and any proofs given. Prints the
// report as one JSON line; exit 0 when everything holds, 1 when anything does not, 2 when a file cannot be read.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { LogReport } from '../chain/verify-log.js';
import { progress } from './progress.js';

/** The command's work, callable in-process (tests): the report and the exit code. */
export async function verifyLogFiles(
  file: string,
  proofsFile?: string,
  expectedHome: string | null = null,
): Promise<{ report: LogReport | null; code: number; error?: string }> {
  let doc: unknown;
  let proofs: unknown[] = [];
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
    if (proofsFile) {
      const p = JSON.parse(await readFile(proofsFile, 'utf8')) as unknown;
      proofs = Array.isArray(p) ? p : [p];
    }
  } catch (err) {
    return { report: null, code: 2, error: `cannot read ${proofsFile && doc !== undefined ? proofsFile : file} as JSON: ${(err as Error).message}` };
  }
  // Proofs may also travel inside the export document.
  const inDoc = (doc as { proofs?: unknown } | null)?.proofs;
  if (Array.isArray(inDoc)) proofs = [...inDoc, ...proofs];
  // Loaded on use: the chain's modules would cost every other command a part of a second of start-up.
  const { verifyLog } = await import('../chain/verify-log.js');
  const report = await verifyLog(doc, proofs, undefined, expectedHome);
  return { report, code: report.valid ? 0 : 1 };
}

export function addVerifyLogCommand(program: Command): void {
  program
    .command('verify-log <file>')
    .description('verify an exported state-machine log offline (GET /api/chain/:slug/export): hash chain, signed checkpoints, forks, proofs')
    .option('--proofs <file>', 'a JSON proof or array of proofs (GET /api/chain/:slug/proof/inclusion or /proof/consistency answers)')
    .option('--home <peer id>', "the machine's home node (GET /api/mesh/machines/:slug): the checkpoints must be its signatures")
    .action(async (file: string, opts: { proofs?: string; home?: string }) => {
      // On a terminal: a spinner while a large export is hashed, then one line saying what held (stdout keeps the JSON).
      const spin = await progress(`verifying ${file}`);
      const { report, code, error } = await verifyLogFiles(file, opts.proofs, opts.home ?? null);
      if (report) {
        const what = `${report.rows} rows, ${report.checkpoints.length} checkpoints, ${report.proofs.length} proofs, signed by ${report.home ?? 'no one'}`;
        const unchecked = opts.home === undefined ? ' (give --home to check the signer is the machine’s home)' : '';
        if (report.valid) spin.succeed(`valid: ${what}${unchecked}`);
        else if (opts.home !== undefined && report.home !== opts.home)
          spin.fail(`invalid: signed by ${report.home ?? 'no one'}, not by the home ${opts.home}: ${what}`);
        else spin.fail(`invalid${report.first_bad ? ` at row ${report.first_bad.seq} (${report.first_bad.reason})` : ''}: ${what}`);
      } else spin.fail(`cannot verify ${file}`);
      if (error) process.stderr.write(`svc-node: ${error}\n`);
      else process.stdout.write(`${JSON.stringify(report)}\n`);
      process.exit(code);
    });
}
