// Prints (one JSON array on stdout) the URL of every ES module that importing the module given as the first argument
// loads, through a module load hook on the loader's thread (test/node/start-imports.test.ts).
import { register } from 'node:module';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { isMainThread, MessageChannel } from 'node:worker_threads';

let port = null;
export function initialize(data) {
  port = data.port;
}
export async function load(url, context, next) {
  port?.postMessage(url);
  return next(url, context);
}

if (isMainThread) {
  const { port1, port2 } = new MessageChannel();
  const loaded = [];
  port1.on('message', (url) => loaded.push(url));
  register(import.meta.url, { data: { port: port2 }, transferList: [port2] });
  await import(process.argv[2]);
  // The hook thread's last messages arrive after the import has settled.
  await sleep(200);
  port1.close();
  process.stdout.write(JSON.stringify(loaded) + '\n');
}
