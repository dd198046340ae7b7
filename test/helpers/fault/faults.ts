// The fault scheduler: `count` faults drawn from the seed, started `gapMs` apart with at most `concurrent` in flight,
// each one of
//   kill:      SIGKILL a running node, start it again (same data dir, ports, peer id) after a delay;
//   partition: split the nodes in two groups that cannot reach each other, heal after a delay (one at a time).
// At most ⌊n/2⌋ nodes are down at once, so clients always find a node to talk to. Bounded in count and in time: past
// `deadlineMs` no fault starts, and the ones in flight end. heal() and a start of every node end the schedule.
import type { FaultCluster } from './cluster.js';
import { prng } from './prng.js';

export interface FaultRecord {
  n: number;
  kind: 'kill' | 'partition';
  /** The killed node, or the partition's groups. */
  node?: number;
  groups?: number[][];
  /** ms since the schedule started. */
  at: number;
  /** When the node served again, or the partition healed. */
  ended_at: number;
  /** Set when the restart failed (the run then reports it: a node that cannot start again is a finding). */
  error?: string;
}

export interface FaultOptions {
  count: number;
  seed: number;
  /** Between the starts of two faults (ms). */
  gapMs: number;
  /** How long a node stays down or a partition stands (ms, drawn in [lo, hi]). */
  durationMs: [number, number];
  concurrent: number;
  /** No fault starts after this many ms. */
  deadlineMs: number;
  /** Share of partitions among the faults (the rest are kills). */
  partitionShare: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** 0 … n-1 in an order drawn with `int` (Fisher–Yates). */
function shuffled(n: number, int: (n: number) => number): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = int(i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** Start a node again, a few times if its port is still held by the killed process's socket. */
async function restart(cluster: FaultCluster, i: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await cluster.startNode(i);
    } catch (err) {
      if (attempt >= 3) throw err;
      await sleep(500 * attempt);
    }
  }
}

export async function runFaults(cluster: FaultCluster, o: FaultOptions): Promise<FaultRecord[]> {
  const rand = prng(o.seed * 104_729 + 17);
  const started = Date.now();
  const since = () => Date.now() - started;
  const records: FaultRecord[] = [];
  const inFlight = new Set<Promise<void>>();
  const down = new Set<number>();
  let partitioned = false;
  const maxDown = Math.floor(cluster.size / 2);

  for (let n = 0; n < o.count && since() < o.deadlineMs; n++) {
    while (inFlight.size >= o.concurrent) await Promise.race(inFlight);
    const duration = rand.between(o.durationMs[0], o.durationMs[1]);
    const wantPartition = rand.next() < o.partitionShare;
    const candidates = cluster.up().filter((i) => !down.has(i));
    const canKill = down.size < maxDown && candidates.length > 0;
    const kind = (wantPartition && !partitioned) || !canKill ? 'partition' : 'kill';
    if (kind === 'partition' && partitioned) {
      // Neither a kill nor a second partition fits now: wait for one in flight to end and draw again.
      await Promise.race(inFlight);
      n--;
      continue;
    }
    const record: FaultRecord = { n, kind, at: since(), ended_at: 0 };
    records.push(record);
    let done: Promise<void>;
    if (kind === 'kill') {
      const i = rand.pick(candidates);
      record.node = i;
      down.add(i);
      done = (async () => {
        await cluster.kill(i);
        await sleep(duration);
        await restart(cluster, i).catch((err: unknown) => (record.error = String(err)));
        down.delete(i);
        record.ended_at = since();
      })();
    } else {
      const order = shuffled(cluster.size, rand.int);
      const cut = rand.between(1, cluster.size - 1);
      const groups = [order.slice(0, cut).sort((a, b) => a - b), order.slice(cut).sort((a, b) => a - b)];
      record.groups = groups;
      partitioned = true;
      done = (async () => {
        await cluster.partition(groups);
        await sleep(duration);
        await cluster.heal();
        partitioned = false;
        record.ended_at = since();
      })();
    }
    const tracked: Promise<void> = done.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    await sleep(o.gapMs);
  }
  await Promise.all(inFlight);
  return records;
}
