// Store operations per sealed compute, by sublevel: what each seal writes and what for. One in-process node
// (durable writes), an identity computing fresh chains (every request a chain the node has not seen). The store's
// commit is wrapped here, in the bench, not in the node: each op handed to it is counted by its sublevel.
// `given` counts the ops seals hand to the store; `written` what the store wrote (a rewritten record, such as a
// wallet or counter, is written once per batch); `perSealWritten` at the given concurrency.
// Usage: npx tsx scripts/bench/seal-ops.ts [--seals 2000] [--concurrency 50] [--profile FILE]
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { Op } from '../../src/store/db.js';
import { callerOf, inFlight, numberArg, registerV3, startInProcessNode } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const seals = Math.max(1, Math.floor(numberArg('seals', 2000)));
const concurrency = Math.max(1, Math.floor(numberArg('concurrency', 50)));
const profileAt = process.argv.indexOf('--profile');
const profileFile = profileAt >= 0 ? process.argv[profileAt + 1] : undefined;

let freshCount = 0;
const freshChain = () => ({
  domain: 'mechanics',
  operators: ['KO42', 'MECH_KINETIC_ENERGY'],
  inputs: { mass_kg: 1 + ++freshCount / 1e6, velocity_m_s: 3 + (freshCount % 1000) / 1000 },
});

const { node, stop } = await startInProcessNode();
try {
  const caller = await callerOf(node, (await registerV3(node.url, 'seal-ops')).adminKey)();

  const run = (n: number, at: number): Promise<void> => inFlight(n, at, () => node.compute.compute(caller, freshChain()));
  await run(200, concurrency);

  // Counted from here: every op handed to the store, by sublevel (its prefix, e.g. !results!).
  const given = new Map<string, number>();
  const store = node.store;
  const commit = store.commit.bind(store);
  store.commit = (ops: Op[]) => {
    for (const op of ops) given.set(op.sub.prefix, (given.get(op.sub.prefix) ?? 0) + 1);
    return commit(ops);
  };
  const before = { ...store.stats };
  const session = profileFile ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(seals, concurrency);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(profileFile!, JSON.stringify(profile));
    session.disconnect();
  }
  const perSeal = (n: number) => Math.round((n / seals) * 100) / 100;
  const bySublevel: Record<string, number> = {};
  for (const [sub, n] of [...given].sort((a, b) => b[1] - a[1])) bySublevel[sub] = perSeal(n);
  console.log(
    JSON.stringify({
      seals,
      concurrency,
      givenPerSeal: perSeal([...given.values()].reduce((a, b) => a + b, 0)),
      writtenPerSeal: perSeal(store.stats.ops - before.ops),
      sealsPerBatch: Math.round((seals / (store.stats.batches - before.batches)) * 10) / 10,
      sealedPerSec: Math.round(seals / seconds),
      cpuUsPerSeal: Math.round((cpu.user + cpu.system) / seals),
      bySublevel,
    }),
  );
} finally {
  await stop();
}
