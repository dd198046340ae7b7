// What the mesh simulation's coordinator (mesh.ts) and its worker processes (mesh-worker.ts) say to each other.

/** A tick event a node published: [node index, tick, wall ms, the peers gossipsub sent it to]. */
export type Send = [number, number, number, number];
/**
 * A tick event received: [sender index, tick, receiving node indexes (in one worker), the node each got it from (its
 * gossipsub propagation source; -1 unknown), wall ms of each receipt].
 */
export type Receipt = [number, number, number[], number[], number[]];
/** A tick event that reached a node's validator: [sender index, tick, receiving node index, the verdict (and code)]. */
export type Verdict = [number, number, number, string];

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
      verdicts: Verdict[];
      histogram: [number, number][];
      /** CPU time since the process started, ms. */
      cpuMs: number;
      /** Memory above the process's own at start (before any node). */
      rssBytes: number;
      heapBytes: number;
      /** Event-loop delay since the previous flush: p50, p99, max (ms). */
      loopDelayMs: [number, number, number];
      /**
       * Each node: the peer ids it holds a connection to, those in its gossipsub mesh for tick events; after the
       * closing census its known peers and log tallies too.
       */
      nodes: {
        index: number;
        peers: string[];
        meshPeers: string[];
        /** Mesh peers gossipsub holds no open outbound stream to. */
        unwritable: number;
        known?: number;
        logged?: Record<string, number>;
        /** What gossipsub logged, by message (peer ids and numbers as P and N). */
        gossipLog?: Record<string, number>;
      }[];
    }
  | { op: 'error'; message: string };
