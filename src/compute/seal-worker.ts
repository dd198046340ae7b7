// Worker-thread entry of the seal worker: builds a sealed result's body and serialises it (canonical JSON as
// UTF-8 with slots for the ledger's members and the proofs), so the main thread keeps HTTP and the ledger.
// Jobs are answered in the order they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { prepareBody, type BodyJob } from './sealed-body.js';

const receiptKey = Buffer.from(workerData.receiptKey as Uint8Array);

parentPort!.on('message', (message: string) => {
  // `<id>\n<job as JSON>` (see WorkerSealer.prepare).
  const cut = message.indexOf('\n');
  const id = Number(message.slice(0, cut));
  try {
    const job = JSON.parse(message.slice(cut + 1)) as BodyJob;
    const { bytes, slots } = prepareBody(receiptKey, job);
    // Its own ArrayBuffer (small Buffers share a pool), moved to the main thread rather than copied.
    const own = new Uint8Array(bytes.length);
    own.set(bytes);
    parentPort!.postMessage({ id, ok: true, bytes: own, slots }, [own.buffer]);
  } catch (err) {
    parentPort!.postMessage({ id, ok: false, message: (err as Error)?.message ?? String(err) });
  }
});
// Loaded: the sealer counts a worker that dies before this as one that cannot start (worker-starts.ts).
parentPort!.postMessage({ ready: true });
