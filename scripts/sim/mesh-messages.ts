// What the mesh simulation's coordinator (mesh.ts) and its worker processes (mesh-worker.ts) say to each other.

/** A tick event a node published: [node index, tick, wall ms, the peers gossipsub sent it to]. */
export type Send = [number, number, number, number];
/** A tick event received: [sender index, tick, receiving node indexes (in one worker)]. */
export type Receipt = [number, number, number[]];

export type ToWorker =
  | { op: 'known'; peers: [string, number][] }
  | { op: 'start'; index: number; bootstrap: string[] }
  | { op: 'stop'; index: number }
  /** census: also each node's count of known peers (its peer store), taken once at the end. */
  | { op: 'flush'; census?: boolean }
  | { op: 'exit' };

export type FromWorker =
  | { op: 'ready' }
  | { op: 'started'; index: number; nodeId: string; addrs: string[] }
  | { op: 'stopped'; index: number }
  | {
      op: 'figures';
      sends: Send[];
      receipts: Receipt[];
      histogram: [number, number][];
      /** CPU time since the process started, ms. */
      cpuMs: number;
      /** Memory above the process's own at start (before any node). */
      rssBytes: number;
      heapBytes: number;
      /** Event-loop delay since the previous flush: p50, p99, max (ms). */
      loopDelayMs: [number, number, number];
      /**
       * Each node: the peer ids it holds a connection to, how many of them are in its gossipsub mesh for tick events;
       * after the closing census its known peers and log tally too.
       */
      nodes: { index: number; peers: string[]; meshPeers: number; known?: number; logged?: Record<string, number> }[];
    }
  | { op: 'error'; message: string };
