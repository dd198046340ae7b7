// The WebSocket clients of scripts/bench/push.ts, in their own process (one of `--procs`), so the bench's ticker and
// figures are not made by the process that receives the pushes. Driven over IPC by push.ts:
//   parent → {open: {url, channel, key, count}}  ⇒ opens `count` clients (50 at a time), answers {ready: n}
//   parent → {report: true}                      ⇒ answers {latenciesMs: number[], stamps: string[], received: number[]} and exits
// Arrival time: the realtime clock read as the node reads it (kernel/clock.ts: a Date.now() anchor advanced by the
// monotonic hrtime), but anchored on a millisecond edge of Date.now() so this side's anchor is exact; the node's anchor
// truncates Date.now() (0–1 ms behind), so a latency here is the true one plus at most 1 ms, never less.
import WebSocket from 'ws';
import { exactAnchorNs, tickStampOf } from './push-stamp.js';

const anchorNs = exactAnchorNs();

interface Open {
  url: string;
  channel: string;
  key: string;
  count: number;
}

// Arrival (ns since the anchor) and the raw frame's stamp, kept as they come; the arithmetic is done at the report.
const arrivals: bigint[] = [];
const stamps: string[] = [];
let received: number[] = [];
const sockets: WebSocket[] = [];

async function open(o: Open): Promise<void> {
  received = new Array<number>(o.count).fill(0);
  for (let i = 0; i < o.count; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, o.count - i) }, (_, j) => {
        const n = i + j;
        return new Promise<void>((resolve, reject) => {
          const ws = new WebSocket(`${o.url.replace(/^http/, 'ws')}/ws/stream?channel=${o.channel}&key=${o.key}`, {
            perMessageDeflate: false,
            skipUTF8Validation: true,
          });
          let hello = false;
          ws.on('message', (d) => {
            const at = process.hrtime.bigint();
            if (!hello) {
              hello = true;
              resolve();
              return;
            }
            arrivals.push(at);
            stamps.push(tickStampOf(d as Buffer));
            received[n]!++;
          });
          ws.on('error', reject);
          sockets.push(ws);
        });
      }),
    );
  }
}

process.on('message', (m: { open?: Open; report?: boolean }) => {
  if (m.open) {
    open(m.open).then(
      () => process.send!({ ready: m.open!.count }),
      (err: Error) => process.send!({ error: err.message }),
    );
  } else if (m.report) {
    for (const ws of sockets) ws.terminate();
    const latenciesMs = arrivals.map((at, i) => Number(anchorNs + at - BigInt(stamps[i]!)) / 1e6);
    process.send!({ latenciesMs, stamps, received }, () => process.exit(0));
  }
});
