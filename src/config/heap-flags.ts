// The V8 heap flags a node process runs with: a 64 MiB young generation, so that under sustained sealing scavenges
// run ~4× less often (docs/decisions.md). The one source: the cluster launcher, the compute bench and the worker
// reset derive from it; package.json's scripts, the CLI shebang and docker/Dockerfile cannot import, so
// test/config/heap-flags.test.ts checks that they say the same. V8 refuses --min-semi-space-size in NODE_OPTIONS,
// so the flags go on node's command line.

export const NODE_HEAP_FLAGS = ['--max-semi-space-size=64', '--min-semi-space-size=64'] as const;

/**
 * What spawnWorker sets before the first worker: V8 applies heap flags to every isolate it creates, and a fixed
 * minimum would pin a full young generation in each worker; the workers grow theirs from V8's default instead.
 */
export const WORKER_HEAP_RESET_FLAGS: readonly string[] = NODE_HEAP_FLAGS.filter((f) => f.startsWith('--min-')).map((f) => f.replace(/=\d+$/, '=0'));
