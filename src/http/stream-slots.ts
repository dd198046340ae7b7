// Caps on long-lived streams opened without a key (the pulse SSE, a /ws/stream opened with a pull link's ?sig= or
// relayed here before any key is checked): at most `perAddress` open at once per caller address (caller-address.ts:
// an IPv4 address, an IPv6 /64) and `perNode` in all. A stream holds its slot until its connection closes; the
// release is idempotent, so a stream whose handlers both fire gives its slot back once. One caller can no longer hold
// thousands of sockets and timers open on a node. Counts only, in memory: they describe open sockets,
// which a restart closes. The map has one entry per address with a stream open, so it is bounded by `perNode`.
import { ServiceError } from '../kernel/errors.js';

export interface StreamCaps {
  perAddress: number;
  perNode: number;
}

/** How long a refused caller is told to wait: a slot frees only when a stream closes, so a short, fixed pause. */
export const STREAM_RETRY_SECONDS = 5;

export class StreamSlots {
  private readonly byAddress = new Map<string, number>();
  private total = 0;

  constructor(readonly caps: StreamCaps) {
    for (const [k, v] of Object.entries(caps))
      if (!(Number.isInteger(v) && v >= 1)) throw new RangeError(`stream cap ${k} must be an integer ≥ 1, got ${String(v)}`);
  }

  /**
   * A slot for `address` (already an address key) on `stream` (named in the refusal), or a 429 SVC_RATE_LIMIT naming
   * its `scope` ('address' or 'node'). Checked and counted in one synchronous turn: parallel opens cannot all pass.
   */
  take(address: string, stream: string): () => void {
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= this.caps.perAddress) throw this.refusal('address', this.caps.perAddress, mine, stream);
    if (this.total >= this.caps.perNode) throw this.refusal('node', this.caps.perNode, this.total, stream);
    this.byAddress.set(address, mine + 1);
    this.total++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.total--;
      const n = (this.byAddress.get(address) ?? 1) - 1;
      if (n > 0) this.byAddress.set(address, n);
      else this.byAddress.delete(address);
    };
  }

  /** Streams open in all, and for one address. */
  open(address?: string): number {
    return address === undefined ? this.total : (this.byAddress.get(address) ?? 0);
  }

  private refusal(scope: 'address' | 'node', limit: number, open: number, stream: string): ServiceError {
    const who = scope === 'address' ? 'per caller address (an IPv6 caller is its /64)' : 'on this node, whoever the callers';
    return new ServiceError(429, 'SVC_RATE_LIMIT', `too many keyless streams open: at most ${limit} ${who}; close one and retry`, {
      limit,
      scope,
      stream,
      open_streams: open,
      window_seconds: null,
      retry_after_seconds: STREAM_RETRY_SECONDS,
      reset_at: null,
    });
  }
}
