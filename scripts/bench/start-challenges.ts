// Node start with many settled challenges (ChallengeService.load + resumeEffects, as src/node/consensus.ts runs them), and
// GET /api/contribute/status's read of one bond's verdicts, on a real LevelDB store. Runs against any version of the
// service (an unindexed one reads every stored challenge at start; an indexed one the open ones and the owed effects only): the
// entries are written as a store of that version holds them, so the first start of a version that indexes them runs
// its one-time passes (firstStartMs); the next start is the steady state (startMs).
// Prints ONE JSON line. Usage: npx tsx scripts/bench/start-challenges.ts [--settled 20000] [--open 20] [--bonds 100]
import '../../src/polyfill.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Store, type Json, type Op, type Sublevel } from '../../src/store/db.js';
import { ChallengeService, type ChallengeEntry } from '../../src/consensus/challenges.js';
import type { BondService } from '../../src/consensus/bonds.js';
// The consensus tests' small policy: this bench opens no challenge, only loads stored ones.
import { TEST_POLICY } from '../../test/consensus/helpers.js';
import { numberArg } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

const SETTLED = numberArg('settled', 20_000);
const OPEN = numberArg('open', 20);
const BONDS = numberArg('bonds', 100);
const ME = 'node_bench';

/** A stored entry about the size of a real one (committee of 3, two votes, the request). */
function entryOf(j: number, settled: boolean): ChallengeEntry {
  const id = `chl_${j.toString(16).padStart(32, '0')}`;
  const bondId = `bond_${(j % BONDS).toString(16).padStart(24, '0')}`;
  const committee = ['node_a', 'node_b', 'node_c'];
  const sig = 'S'.repeat(88);
  const vote = (voter: string) => ({ vote: { challenge_id: id, voter, digest: 'e'.repeat(64), svcond: 1000 + j }, signature: sig });
  return {
    challenge: {
      challenge: {
        challenge_id: id,
        result_id: `res_${j}_${'0'.repeat(16)}`,
        challenger: 'zid_challenger',
        challenger_home: 'node_home',
        claimed_digest: 'c'.repeat(64),
        executor_digest: 'e'.repeat(64),
        executed_by: { node: 'node_exec', bond_id: bondId, svcond: 900, request_digest: 'r'.repeat(64), signature: sig },
        request: { kind: 'solver', solver: 'zeta', inputs: { n: j, pad: 'x'.repeat(600) } },
        stamp_svcond: 990 + j,
        svcond: 1000 + j,
        deadline_svcond: settled ? 1010 + j : 10_000_000,
        committee_size: 3,
        quorum: 2,
        eligible: [...committee, 'node_d', 'node_e'],
        committee,
      },
      signature: sig,
    },
    state: settled ? 'rejected' : 'opened',
    votes: settled ? [vote('node_a'), vote('node_b')] : [],
    non_member_votes: 0,
    refused_votes: 0,
    verdict: settled
      ? {
          challenge_id: id,
          outcome: 'rejected',
          deciding_digest: 'e'.repeat(64),
          tally: { ['e'.repeat(64)]: 2 },
          equivocators: [],
          non_member_votes: 0,
          late_votes: 0,
          decided_svcond: 1005 + j,
          ticks_taken: 5,
          rests_on_votes: 2,
        }
      : null,
    stake: null,
    received_svcond: 1000 + j,
  } as unknown as ChallengeEntry;
}

/** Counts the stored challenges read through the store (get, getMany, range, iterators of the sublevel). */
function countReads(store: Store, sub: Sublevel): { n: number; stop: () => void } {
  const counter = { n: 0, stop: () => {} };
  const get = store.get.bind(store);
  const getMany = store.getMany.bind(store);
  const range = store.range.bind(store);
  store.get = (async (s: Sublevel, k: string) => {
    const v = await get(s, k);
    if (s === sub && v !== undefined) counter.n++;
    return v;
  }) as Store['get'];
  store.getMany = (async (s: Sublevel, ks: string[]) => {
    const v = await getMany(s, ks);
    if (s === sub) counter.n += v.filter((x) => x !== undefined).length;
    return v;
  }) as Store['getMany'];
  store.range = (async (s: Sublevel, o?: object) => {
    const v = await range(s, o);
    if (s === sub) counter.n += v.length;
    return v;
  }) as Store['range'];
  counter.stop = () => {
    store.get = get;
    store.getMany = getMany;
    store.range = range;
  };
  return counter;
}

async function start(store: Store): Promise<{ ms: number; read: number; svc: ChallengeService }> {
  const svc = new ChallengeService({
    store,
    policy: TEST_POLICY,
    bonds: { ofNode: () => null, get: () => null } as unknown as BondService,
    nodeId: () => ME,
    nowSvcond: () => 1000 + SETTLED + OPEN + 1,
    sign: () => 'sig',
    verify: () => true,
    lookup: async () => null,
    candidates: () => [],
    // No intake in the bench: no draw event is ever needed.
    tickEvents: () => [],
    holdStake: async () => {
      throw new Error('no stake in the bench');
    },
  });
  svc.onVerdict(() => undefined); // slashing.ts's listener: nothing to do at a node neither home nor executor
  const reads = countReads(store, store.sub('challenges'));
  const t = performance.now();
  await svc.load();
  await svc.resumeEffects();
  const ms = performance.now() - t;
  reads.stop();
  return { ms, read: reads.n, svc };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-chl-'));
  const store = await Store.open(dir, { sync: false });
  try {
    const sub = store.sub('challenges');
    const total = SETTLED + OPEN;
    for (let i = 0; i < total; i += 1000) {
      const ops: Op[] = [];
      for (let j = i; j < Math.min(total, i + 1000); j++) {
        const e = entryOf(j, j < SETTLED);
        ops.push({ type: 'put', sub, key: e.challenge.challenge.challenge_id, value: e as unknown as Json });
      }
      await store.commit(ops);
    }
    const first = await start(store);
    const runs: number[] = [];
    let read = 0;
    let svc = first.svc;
    for (let r = 0; r < 3; r++) {
      const s = await start(store);
      runs.push(s.ms);
      read = s.read;
      svc = s.svc;
    }
    // One bond's verdicts (GET /api/contribute/status): the by-bond index where there is one, else every challenge.
    const bondId = `bond_${'0'.repeat(24)}`;
    const byIndex = typeof (svc as unknown as { ofBond?: unknown }).ofBond === 'function';
    const t = performance.now();
    const verdicts = byIndex
      ? await (svc as unknown as { ofBond: (b: string) => Promise<ChallengeEntry[]> }).ofBond(bondId)
      : (await (svc as unknown as { stored: () => Promise<ChallengeEntry[]> }).stored()).filter((e) => e.challenge.challenge.executed_by.bond_id === bondId);
    const bondMs = performance.now() - t;
    runs.sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        settled: SETTLED,
        open: OPEN,
        firstStartMs: +first.ms.toFixed(1),
        firstStartRead: first.read,
        startMs: +runs[1]!.toFixed(1),
        startMsRuns: runs.map((x) => +x.toFixed(1)),
        startRead: read,
        inMemory: svc.memory(),
        bondVerdictsMs: +bondMs.toFixed(2),
        bondVerdicts: verdicts.length,
        bondVerdictsBy: byIndex ? 'index' : 'full read',
      }),
    );
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
