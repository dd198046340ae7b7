// N real node processes on 127.0.0.1 that the fault harness can crash, restart and partition. Each runs
// test/helpers/fault-node.mjs (the build, started with a connection gater the harness drives over IPC), with its own
// data dir, fixed HTTP and libp2p ports (a restarted node keeps its URL, multiaddr and peer id: the node key is in the
// data dir) and durable writes (an acknowledged write survives a SIGKILL). Logs go to <dataDir>/node.log.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../free-port.js';

const ENTRY = join(import.meta.dirname, '..', 'fault-node.mjs');
/** Starts of a node refused EADDRINUSE before that is its failure (startNode). */
const PORT_BUSY_TRIES = 5;
const ROOT = join(import.meta.dirname, '..', '..', '..');
/** How long a node may take to start (and say so over IPC) before the harness gives up on it: its import of the build alone takes seconds when the cores are busy. */
const START_WITHIN_MS = 90_000;
/** How long an IPC question may wait for its answer. */
const ASK_WITHIN_MS = 10_000;

export interface FaultNodeSpec {
  index: number;
  dataDir: string;
  port: number;
  p2pPort: number;
}

/** What a node process says of itself over IPC ({type: 'state'}). */
export interface NodeProcessState {
  backlogs: { transfers: number; settlements: number };
  counters: { sealed_total: number; charged_total: number; burned_total: number; foundation_total: number };
  connected: string[];
}

interface Running {
  child: ChildProcess;
  asks: Map<number, (answer: Record<string, unknown>) => void>;
  /** It has said it serves. */
  ready: boolean;
}

export interface FaultClusterOptions {
  nodes: number;
  meshSecret?: string;
  /** Extra SVC_* variables of every node. */
  env?: Record<string, string>;
  /**
   * Whom each node is bootstrapped to: 'star', every other node it knows the id of (the first node, at the first
   * start); 'line', only the node before it (the ends reach each other only through the middle).
   */
  topology?: 'star' | 'line';
}

/** The end of a node's log (what a node that would not start said last). */
/** What a node's log says from byte `from` on. */
function logSince(dataDir: string, from: number): string {
  try {
    return readFileSync(join(dataDir, 'node.log')).subarray(from).toString('utf8');
  } catch {
    return '';
  }
}

export function logTail(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, 'node.log'), 'utf8').slice(-2000);
  } catch {
    return '(no log)';
  }
}

export class FaultCluster {
  readonly specs: FaultNodeSpec[] = [];
  /** Peer id of each node (known once it has started once; stable across restarts). */
  readonly nodeIds: string[] = [];
  private readonly running: (Running | null)[] = [];
  /** The nodes each node refuses (indexes), as the partition stands. */
  private blocked: Set<number>[] = [];
  private askSeq = 0;
  /** Nodes that exited while serving without being killed or stopped, with the end of their log. */
  readonly unexpectedExits: { node: number; code: number | null; signal: NodeJS.Signals | null; log: string }[] = [];

  private constructor(private readonly o: Required<FaultClusterOptions>) {}

  static async start(options: FaultClusterOptions): Promise<FaultCluster> {
    const c = new FaultCluster({ meshSecret: 'fault-harness-mesh-secret-0123456789abcdef', env: {}, topology: 'star', ...options });
    for (let i = 0; i < options.nodes; i++) {
      c.specs.push({ index: i, dataDir: await mkdtemp(join(tmpdir(), `svc-fault-${i}-`)), port: await freePort(), p2pPort: await freePort() });
      c.blocked.push(new Set());
      c.running.push(null);
    }
    try {
      // The first node, then the others: in a star at once, each bootstrapped to the first (they meet the rest through
      // it); in a line one after another, each bootstrapped to the one before it.
      await c.startNode(0);
      if (c.o.topology === 'line') for (const s of c.specs.slice(1)) await c.startNode(s.index);
      else await Promise.all(c.specs.slice(1).map((s) => c.startNode(s.index)));
    } catch (err) {
      await c.destroy();
      throw err;
    }
    return c;
  }

  get size(): number {
    return this.specs.length;
  }

  url(i: number): string {
    return `http://127.0.0.1:${this.specs[i]!.port}`;
  }

  /** Is node i running (serving, or starting)? */
  isUp(i: number): boolean {
    return this.running[i] !== null;
  }

  /** Indexes of the nodes that serve now. */
  up(): number[] {
    return this.specs.flatMap((s) => (this.running[s.index]?.ready ? [s.index] : []));
  }

  private multiaddr(i: number): string {
    return `/ip4/127.0.0.1/tcp/${this.specs[i]!.p2pPort}/p2p/${this.nodeIds[i]}`;
  }

  /**
   * Start node i (its first start, or a restart on the same data dir and ports); resolves once it serves. A port can
   * be held for a moment by another listener on the machine (a test's probe for a free port binds it briefly): a
   * start refused EADDRINUSE is tried again after a second, a few times.
   */
  async startNode(i: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(i);
      } catch (err) {
        if (attempt >= PORT_BUSY_TRIES || !String(err).includes('EADDRINUSE')) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  private async startOnce(i: number): Promise<void> {
    if (this.running[i]) throw new Error(`node ${i} is running`);
    const spec = this.specs[i]!;
    const bootstrap =
      this.o.topology === 'line'
        ? i > 0
          ? [this.multiaddr(i - 1)]
          : []
        : this.specs.filter((s) => s.index !== i && this.nodeIds[s.index]).map((s) => this.multiaddr(s.index));
    const log = openSync(join(spec.dataDir, 'node.log'), 'a');
    const logStart = fstatSync(log).size;
    const child = spawn(process.execPath, [ENTRY], {
      cwd: ROOT,
      env: {
        ...process.env,
        SVC_HOST: '127.0.0.1',
        SVC_PORT: String(spec.port),
        SVC_P2P_PORT: String(spec.p2pPort),
        SVC_DATA_DIR: spec.dataDir,
        SVC_SYNC_WRITES: 'true',
        SVC_LOG_LEVEL: 'warn',
        SVC_INITIAL_CREDITS: '0',
        SVC_MESH_SECRET: this.o.meshSecret,
        SVC_MESH_TICK_EVERY: '1',
        SVC_MESH_FORWARD_TIMEOUT_MS: '3000',
        SVC_BOOTSTRAP: bootstrap.join(','),
        SVC_RECEIPT_SECRET: 'fa'.repeat(32),
        SVC_SOLVER_THREADS: '0',
        FAULT_BLOCKED: JSON.stringify(this.blockedOf(i)),
        ...this.o.env,
      },
      stdio: ['ignore', log, log, 'ipc'],
    });
    closeSync(log);
    const run: Running = { child, asks: new Map(), ready: false };
    const ready = new Promise<{ nodeId: string }>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`node ${i} did not start within ${START_WITHIN_MS} ms (see ${spec.dataDir}/node.log)`));
      }, START_WITHIN_MS);
      child.on('message', (m: Record<string, unknown>) => {
        if (m.type === 'ready') {
          clearTimeout(timer);
          resolve(m as { nodeId: string });
        } else if (typeof m.id === 'number') {
          run.asks.get(m.id)?.(m);
          run.asks.delete(m.id);
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        for (const answer of run.asks.values()) answer({ ok: false, error: 'the node exited' });
        run.asks.clear();
        // Still listed: nobody killed or stopped it. A node that ends by itself is a finding of the run.
        if (this.running[i] === run) {
          this.running[i] = null;
          if (run.ready) this.unexpectedExits.push({ node: i, code, signal, log: logTail(spec.dataDir) });
        }
        // A port taken meanwhile is said early in the log of this start, before the stack traces of its tail.
        const busy = logSince(spec.dataDir, logStart).includes('EADDRINUSE') ? ' (EADDRINUSE: a port was taken)' : '';
        reject(new Error(`node ${i} exited with ${code ?? signal}${busy}; its log ends with: ${logTail(spec.dataDir)}`));
      });
    });
    this.running[i] = run;
    const { nodeId } = await ready;
    if (this.nodeIds[i] !== undefined && this.nodeIds[i] !== nodeId) throw new Error(`node ${i} came back as ${nodeId}, not ${this.nodeIds[i]}`);
    this.nodeIds[i] = nodeId;
    run.ready = true;
    // The partition may have changed while it started (it started with the blocked set of its spawn).
    await this.ask(i, { type: 'block', ...this.blockedOf(i) });
  }

  /** SIGKILL node i (a crash: no shutdown, no flush beyond what was durable); resolves once it has exited. */
  async kill(i: number): Promise<void> {
    const run = this.running[i];
    if (!run) return;
    this.running[i] = null;
    const exited = new Promise<void>((r) => (run.child.exitCode !== null || run.child.signalCode !== null ? r() : run.child.once('exit', () => r())));
    run.child.kill('SIGKILL');
    await exited;
  }

  /**
   * Partition the nodes into `groups` (indexes; a node in no group is cut off from every other): a node reaches only
   * the nodes of its own group. Running nodes apply it at once; a node started later starts with it.
   */
  async partition(groups: number[][]): Promise<void> {
    const groupOf = new Map<number, number>();
    groups.forEach((g, k) => g.forEach((i) => groupOf.set(i, k)));
    const together = (a: number, b: number) => groupOf.has(a) && groupOf.get(a) === groupOf.get(b);
    this.blocked = this.specs.map((s) => new Set(this.specs.filter((o) => o.index !== s.index && !together(s.index, o.index)).map((o) => o.index)));
    // A node that goes down meanwhile starts again with its blocked set (FAULT_BLOCKED).
    await Promise.all(this.up().map((i) => this.ask(i, { type: 'block', ...this.blockedOf(i) }).catch(() => undefined)));
  }

  /** Every node reaches every other again. */
  heal(): Promise<void> {
    return this.partition([this.specs.map((s) => s.index)]);
  }

  private blockedOf(i: number): { peers: string[]; urls: string[] } {
    const b = [...(this.blocked[i] ?? [])];
    return { peers: b.flatMap((j) => (this.nodeIds[j] ? [this.nodeIds[j]!] : [])), urls: b.map((j) => this.url(j)) };
  }

  /** The node's delivery backlogs, counters and connections (null when it is down or does not answer). */
  async state(i: number): Promise<NodeProcessState | null> {
    const a = await this.ask(i, { type: 'state' }).catch(() => null);
    return a && a.ok ? (a as unknown as NodeProcessState) : null;
  }

  private ask(i: number, msg: Record<string, unknown>): Promise<Record<string, unknown>> {
    const run = this.running[i];
    if (!run) return Promise.reject(new Error(`node ${i} is down`));
    const id = ++this.askSeq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        run.asks.delete(id);
        reject(new Error(`node ${i} did not answer ${String(msg.type)} within ${ASK_WITHIN_MS} ms`));
      }, ASK_WITHIN_MS);
      run.asks.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      run.child.send({ id, ...msg });
    });
  }

  /** SIGTERM every running node and wait for it to exit (SIGKILL after 10 s). */
  async stop(): Promise<void> {
    await Promise.all(
      this.running.map(async (run, i) => {
        if (!run) return;
        this.running[i] = null;
        const exited = new Promise<void>((r) => (run.child.exitCode !== null || run.child.signalCode !== null ? r() : run.child.once('exit', () => r())));
        run.child.kill('SIGTERM');
        const timer = setTimeout(() => run.child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /** Stop every node and remove the data dirs (kept when `keep`: their node.log files tell what happened). */
  async destroy(keep = false): Promise<void> {
    await this.stop();
    if (!keep) for (const s of this.specs) await rm(s.dataDir, { recursive: true, force: true });
  }
}
