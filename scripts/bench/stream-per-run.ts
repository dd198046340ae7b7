// Preloaded (--import tsx --import …) into a built node process by scripts/bench/offload.ts --compare-streams: the node
// places its offloaded runs one stream per run (/svc/exec/1.0.0) instead of one session per peer —
// NodeOptions.execStreamPerRun, which the CLI does not expose (a benchmark composition, not a setting).
import { SvcNode } from '../../dist/node.js';

const proto = SvcNode.prototype as unknown as { start: (...args: unknown[]) => Promise<unknown>; options: Record<string, unknown> };
const start = proto.start;
proto.start = function (this: { options: Record<string, unknown> }, ...args: unknown[]) {
  this.options = { ...this.options, execStreamPerRun: true };
  return start.apply(this, args);
};
