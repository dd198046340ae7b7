// Start-time reads and listings served from indexes, on a real LevelDB store:
// - slug losses at start: the full pass (every machine read, one directory lookup each) against the owed markers
//   (SlugLosses.reconcile with nothing owed: the marker sublevel only);
// - a challenge listing (50 newest): every stored challenge read and sorted, against one page of the tick index
//   (ChallengeIndex.page: its total from the counts kept since load, or, before a load, from the index's keys).
// Node start with settled challenges: scripts/bench/start-challenges.ts.
// Prints ONE JSON line. Usage: npx tsx scripts/bench/start-indexes.ts [--machines 20000] [--challenges 20000]
import '../../src/polyfill.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Store, type Op } from '../../src/store/db.js';
import { ChainService, type MachineRecord } from '../../src/chain/service.js';
import { SlugLosses } from '../../src/chain/slug-loss.js';
import { ChallengeIndex } from '../../src/consensus/challenge-index.js';
import { STATES } from '../../src/consensus/challenge-lifecycle.js';
import { numberArg } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const MACHINES = numberArg('machines', 20_000);
const CHALLENGES = numberArg('challenges', 20_000);

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-idx-'));
  const store = await Store.open(dir, { sync: false });
  try {
    const chain = new ChainService(store);
    const directory = store.sub('mesh-machines');
    const base: Omit<MachineRecord, 'slug' | 'key_digest'> = {
      owner: 'zid_bench',
      genesis_svcond: 1,
      is_public: false,
      roles: {},
      inject_agent_rail: false,
      inject_pulse_orb: false,
      home: 'self',
      created_unix_ms: 0,
    };
    for (let i = 0; i < MACHINES; i += 1000) {
      const ops: Op[] = [];
      for (let j = i; j < Math.min(MACHINES, i + 1000); j++) {
        const slug = `bench-${j}`;
        ops.push(...chain.machineOps({ ...base, slug, key_digest: String(j) }));
        ops.push({ type: 'put', sub: directory, key: slug, value: { slug, home: 'self', created_unix_ms: 0 } });
      }
      await store.commit(ops);
    }
    const winnerOf = async (slug: string) => (await store.get<{ home: string }>(directory, slug))?.home ?? null;
    // The full pass: every machine, one lookup each.
    let t = performance.now();
    let owed = 0;
    for await (const [, m] of store.sub('machines').iterator()) {
      const rec = m as MachineRecord;
      if (rec.home !== 'self' || rec.lost) continue;
      const w = await winnerOf(rec.slug);
      if (w !== null && w !== 'self') owed++;
    }
    const scanMs = performance.now() - t;
    const losses = new SlugLosses({
      store,
      chain,
      ledger: { wallet: async () => ({}), creditOps: () => ({ ops: [], rollback: () => {} }) },
      identity: { revokeDigestOps: async () => null },
      nodeId: () => 'self',
      nowMs: () => 0,
      winnerOf,
    });
    t = performance.now();
    await losses.reconcile(); // the first start of this version: the one-time pass over machines
    const firstStartMs = performance.now() - t;
    t = performance.now();
    const stats = await losses.reconcile();
    const markersMs = performance.now() - t;

    const entries = store.sub('challenges');
    const index = new ChallengeIndex(store, STATES);
    for (let i = 0; i < CHALLENGES; i += 1000) {
      const ops: Op[] = [];
      for (let j = i; j < Math.min(CHALLENGES, i + 1000); j++) {
        const id = `chl_${j.toString(16).padStart(32, '0')}`;
        // About the size of a stored challenge with its votes (~2 KiB).
        const e = {
          state: STATES[j % STATES.length]!,
          challenge: { challenge: { challenge_id: id, svcond: 1000 + (j % 997), executed_by: { bond_id: `bond_${j % 100}` }, pad: 'x'.repeat(2000) } },
        };
        ops.push({ type: 'put', sub: entries, key: id, value: e }, ...index.ops(e));
      }
      await store.commit(ops);
    }
    t = performance.now();
    const all = (await store.range<{ challenge: { challenge: { svcond: number; challenge_id: string } } }>(entries)).map((x) => x.value);
    all.sort((a, b) => b.challenge.challenge.svcond - a.challenge.challenge.svcond);
    const fullListMs = performance.now() - t;
    t = performance.now();
    const counted = await index.page(undefined, 50, 0);
    await store.getMany(entries, counted.ids);
    const keyCountListMs = performance.now() - t;
    await index.count(); // what ChallengeService.load does: the by-state index's keys counted once
    t = performance.now();
    const page = await index.page(undefined, 50, 0);
    await store.getMany(entries, page.ids);
    const indexListMs = performance.now() - t;
    console.log(
      JSON.stringify({
        machines: MACHINES,
        owed,
        scanAtStartMs: +scanMs.toFixed(1),
        firstStartPassMs: +firstStartMs.toFixed(1),
        markersAtStartMs: +markersMs.toFixed(2),
        markersRead: stats.markers,
        challenges: CHALLENGES,
        listingFullReadMs: +fullListMs.toFixed(1),
        listingIndexPageKeyCountMs: +keyCountListMs.toFixed(1),
        listingIndexPageMs: +indexListMs.toFixed(2),
        indexTotal: page.total,
      }),
    );
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
