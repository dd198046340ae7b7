// Worker-thread entry: runs one solver job at a time off the main event loop, so a long run neither stalls the
// HTTP API and the mesh nor escapes the tier time limit (the pool terminates a worker that overruns).
import { parentPort } from 'node:worker_threads';
import { defaultRegistry } from '../solvers/registry.js';
import { ServiceError } from '../kernel/errors.js';

interface Job {
  id: number;
  solverId: string;
  inputs: Record<string, unknown>;
  state: unknown;
}

const registry = defaultRegistry();
// Loaded: jobs are sent only now, so a job's time limit never counts the worker's start-up.
parentPort!.postMessage({ ready: true });

parentPort!.on('message', (job: Job) => {
  try {
    const solver = registry.get(job.solverId);
    if (!solver) throw new Error(`unknown solver ${job.solverId}`);
    const output = solver.run(job.inputs, job.state);
    parentPort!.postMessage({ id: job.id, ok: true, output });
  } catch (err) {
    const e = err as Error;
    const error =
      err instanceof ServiceError
        ? { service: true, status: err.status, code: err.code, message: err.message, extra: err.extra, details: err.details }
        : { service: false, message: e?.message ?? String(err), stack: e?.stack };
    parentPort!.postMessage({ id: job.id, ok: false, error });
  }
});
