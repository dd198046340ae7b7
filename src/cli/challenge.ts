// `svc-node challenge RESULT_ID --digest D --url URL --key KEY [--wait]` (architecture.md §6): challenge a published
// result at the challenger's node (the stake is taken there), print the answer as one JSON line, and with --wait
// follow the challenge until its verdict and print that too. Exit 0 when the challenge was opened (and, waiting,
// decided), 1 on a refusal (the part-7 error is printed), 2 on bad usage or an unreachable node.
import type { Command } from 'commander';
import { unreachableReason } from './node-request.js';

const DIGEST = /^[0-9a-f]{64}$/;
const POLL_MS = 500;

function usage(message: string): never {
  process.stderr.write(`svc-node: ${message}\n`);
  process.exit(2);
}

async function request(url: string, init: RequestInit): Promise<{ ok: boolean; text: string }> {
  try {
    const res = await fetch(url, init);
    return { ok: res.ok, text: (await res.text()).trim() };
  } catch (err) {
    usage(`cannot reach ${url}: ${unreachableReason(err)}`);
  }
}

export function challengeCommand(program: Command): void {
  program
    .command('challenge <result_id>')
    .description("challenge a published result with the digest you claim is right; stakes the policy's challenge stake")
    .requiredOption('--digest <digest>', 'the result digest you claim (64 hex digits)')
    .requiredOption('--url <url>', 'your node (the home of the key), e.g. http://127.0.0.1:8787')
    .requiredOption('--key <key>', 'an API key of the challenging identity')
    .option('--wait', 'follow the challenge until its verdict and print it', false)
    .option('--timeout <seconds>', 'how long --wait waits', '120')
    .action(async (resultId: string, opts: { digest: string; url: string; key: string; wait: boolean; timeout: string }) => {
      if (!DIGEST.test(opts.digest)) usage('--digest must be 64 lower-case hex digits');
      const timeout = Number(opts.timeout);
      if (!Number.isFinite(timeout) || timeout <= 0) usage('--timeout must be a positive number of seconds');
      const base = opts.url.replace(/\/+$/, '');
      const headers = { authorization: `Bearer ${opts.key}`, 'content-type': 'application/json' };
      const opened = await request(`${base}/api/tally/consensus/challenges`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ result_id: resultId, claimed_digest: opts.digest }),
      });
      process.stdout.write(`${opened.text}\n`);
      if (!opened.ok) process.exit(1);
      if (!opts.wait) process.exit(0);
      const id = (JSON.parse(opened.text) as { challenge_id: string }).challenge_id;
      const end = Date.now() + timeout * 1000;
      while (Date.now() < end) {
        const r = await request(`${base}/api/tally/consensus/${id}`, { headers });
        if (r.ok) {
          const body = JSON.parse(r.text) as { verdict: unknown; state: string; ticks_taken: number | null; stake: unknown; slashing: unknown };
          if (body.verdict) {
            process.stdout.write(`${JSON.stringify({ challenge_id: id, state: body.state, verdict: body.verdict, stake: body.stake })}\n`);
            process.exit(0);
          }
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
      usage(`no verdict for ${id} within ${timeout} s`);
    });
}
