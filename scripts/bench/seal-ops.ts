// Store operations per sealed compute, by sublevel: what each seal writes and what for. One in-process node
// (durable writes), an identity computing fresh chains (every request a chain the node has not seen). The store's
// commit is wrapped here, in the bench, not in the node: each op handed to it is counted by its sublevel.
// `given` counts the ops seals hand to the store; `written` what the store wrote (a rewritten record, such as a
// wallet or counter, is written once per batch); `perSealWritten` at the given concurrency.
// With --peer the node has a mesh and one peer, a node of its own process (the built CLI: npm run build first), as a
// contributing node has: what the mesh adds to a seal (its announcement), and `peerCpuUsPerSeal`, what the peer spends
// on what it hears of them.
// Usage: npx tsx scripts/bench/seal-ops.ts [--seals 2000] [--concurrency 50] [--profile FILE] [--peer]
import '../../src/polyfill.js';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import type { Op } from '../../src/store/db.js';
import { callerOf, inFlight, numberArg, processCpuMs, registerV3, startInProcessNode, startNodeProcess, type BenchNode } from './lib.js';
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

const MESH_SECRET = 'seal-ops-bench-mesh-secret';
const peer: BenchNode | null = process.argv.includes('--peer') ? await startNodeProcess({ secret: MESH_SECRET, bootstrap: [], env: {} }) : null;
const { node, stop } = await startInProcessNode(
  peer ? { receiptSecret: 'ef'.repeat(32), mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap: [peer.multiaddr], tickEvery: 1 } } : {},
);
try {
  if (peer) {
    for (let i = 0; i < 300 && !node.mesh.peers().some((p) => p.peerId === peer.nodeId && p.lastTick !== null); i++)
      await new Promise((r) => setTimeout(r, 100));
    if (!node.mesh.peers().some((p) => p.peerId === peer.nodeId)) throw new Error('the peer was not heard within 30 s');
  }
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
  const peerCpu0 = peer ? processCpuMs(peer.pid) : null;
  const t0 = performance.now();
  await run(seals, concurrency);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const peerCpu1 = peer ? processCpuMs(peer.pid) : null;
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
      ...(peer ? { peer: true, peerCpuUsPerSeal: peerCpu0 !== null && peerCpu1 !== null ? Math.round(((peerCpu1 - peerCpu0) * 1000) / seals) : null } : {}),
      bySublevel,
    }),
  );
} finally {
  await stop();
  await peer?.stop();
}
