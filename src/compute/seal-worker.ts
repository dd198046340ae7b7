// Worker-thread entry of the seal worker: builds a sealed result's body and serialises it (canonical JSON as
// UTF-8 with slots for the ledger's members and the proofs), so the main thread keeps HTTP and the ledger.
// Jobs are answered in the order they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { prepareBody, type BodyJob } from './sealed-body.js';

const receiptKey = Buffer.from(workerData.receiptKey as Uint8Array);

type Answer = { id: number; ok: true; bytes: Uint8Array; slots: unknown } | { id: number; ok: false; message: string };

/** One job, `<id>\n<job as JSON>` (see WorkerSealer.prepare), answered with its body's bytes in an ArrayBuffer of its own. */
function answer(message: string, transfers: ArrayBuffer[]): Answer {
  const cut = message.indexOf('\n');
  const id = Number(message.slice(0, cut));
  try {
    const job = JSON.parse(message.slice(cut + 1)) as BodyJob;
    const { bytes, slots } = prepareBody(receiptKey, job);
    // Its own ArrayBuffer (small Buffers share a pool), moved to the main thread rather than copied.
    const own = new Uint8Array(bytes.length);
    own.set(bytes);
    transfers.push(own.buffer);
    return { id, ok: true, bytes: own, slots };
  } catch (err) {
    return { id, ok: false, message: (err as Error)?.message ?? String(err) };
  }
}

// A job alone, or the jobs of one turn of the main thread's loop, answered in one message the same way.
parentPort!.on('message', (message: string | string[]) => {
  const transfers: ArrayBuffer[] = [];
  const answers = typeof message === 'string' ? answer(message, transfers) : message.map((m) => answer(m, transfers));
  parentPort!.postMessage(answers, transfers);
});
// Loaded: the sealer counts a worker that dies before this as one that cannot start (worker-starts.ts).
parentPort!.postMessage({ ready: true });
