// Contribution policy: config defaults (spec part 8: a bond is 1000 envelopes), SVC_CONTRIBUTION_* overrides, the
// quorum and term arithmetic, and GET /api/contribute/policy and /status over HTTP on a real node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { daysRemaining, quorumOf, ticksPerDays } from '../../src/consensus/policy.js';
import { bearer, call, expectError, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';

describe('contribution config', () => {
  it('defaults to the spec numbers', () => {
    const c = loadConfig({ env: {} }).contribution;
    expect(c).toEqual({
      bondEnvelopes: 1000,
      committeeSize: 3,
      settleTicks: 8,
      deadlineTicks: 32,
      liveTicks: 32,
      challengeStake: 50,
      bondTermDays: 30,
      offload: 'never',
      operator: null,
    });
  });

  it('takes SVC_CONTRIBUTION_* from the environment, and refuses bad values with a reason', () => {
    const c = loadConfig({
      env: {
        SVC_CONTRIBUTION_BOND_ENVELOPES: '5',
        SVC_CONTRIBUTION_OFFLOAD: 'when-busy',
        SVC_CONTRIBUTION_COMMITTEE_SIZE: '5',
        SVC_CONTRIBUTION_CHALLENGE_STAKE: '7',
        SVC_CONTRIBUTION_SETTLE_TICKS: '2',
        SVC_CONTRIBUTION_DEADLINE_TICKS: '9',
        SVC_CONTRIBUTION_LIVE_TICKS: '12',
        SVC_CONTRIBUTION_BOND_TERM_DAYS: '1',
        SVC_CONTRIBUTION_OPERATOR: 'zid_0123456789abcdef0123456789abcdef',
      },
    }).contribution;
    expect(c).toEqual({
      bondEnvelopes: 5,
      committeeSize: 5,
      settleTicks: 2,
      deadlineTicks: 9,
      liveTicks: 12,
      challengeStake: 7,
      bondTermDays: 1,
      offload: 'when-busy',
      operator: 'zid_0123456789abcdef0123456789abcdef',
    });
    expect(() => loadConfig({ env: { SVC_CONTRIBUTION_OFFLOAD: 'sometimes' } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { SVC_CONTRIBUTION_BOND_ENVELOPES: '0' } })).toThrow(/contribution\.bondEnvelopes/);
    expect(() => loadConfig({ env: { SVC_CONTRIBUTION_BOND_ENVELOPES: 'many' } })).toThrow(/must be an integer/);
    expect(() => loadConfig({ env: { SVC_CONTRIBUTION_LIVE_TICKS: '0' } })).toThrow(/contribution\.liveTicks/);
  });
});

describe('policy arithmetic', () => {
  it('quorum is a strict majority, ⌊k/2⌋ + 1', () => {
    expect([1, 2, 3, 4, 5, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4]);
  });

  it('days remaining of a 30-day term count down by whole days from the bond tick', () => {
    // One day is 86400 / 0.777000777 = 111196.80… ticks; 30 days ⌊2592000 / 0.777000777⌋ = 3 335 904 (exact rationals).
    expect(ticksPerDays(1)).toBe(111_196);
    const p = { bondTermDays: 30 };
    expect(daysRemaining(p, 1_000, 1_000)).toBe(30);
    expect(daysRemaining(p, 1_000, 1_000 + Math.floor(1.5 * 111_196.8))).toBe(29);
    expect(daysRemaining(p, 1_000, 1_000 + 29 * 111_197)).toBe(1);
    expect(daysRemaining(p, 1_000, 1_000 + 30 * 111_197)).toBe(0);
    expect(daysRemaining(p, 1_000, 1_000 + 40 * 111_197)).toBe(0);
  });
});

describe('GET /api/contribute/policy and /status on a node', () => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode({
      solverThreads: 0,
      contribution: { bondEnvelopes: 5, committeeSize: 3, settleTicks: 4, deadlineTicks: 12, challengeStake: 20, bondTermDays: 30, offload: 'never' },
    });
  }, 60_000);
  afterAll(async () => {
    await n?.destroy();
  });

  it('policy is keyless and states the numbers and the arithmetic', async () => {
    const r = await call(n.url, 'GET', '/api/contribute/policy');
    expect(r.status, r.text).toBe(200);
    expect(r.body.bond).toMatchObject({ envelopes: 5, term_days: 30, term_ticks: 3_335_904 });
    expect(r.body.bond.words).toContain('5 envelopes');
    expect(r.body.committee).toMatchObject({ size: 3, quorum: 2, settle_ticks: 4, settle_seconds: 3.108 });
    expect(r.body.challenge).toMatchObject({ stake: 20, deadline_ticks: 12, deadline_seconds: 9.324 });
    expect(r.body.modes.values).toEqual(['idle', 'contributing']);
    expect(Object.keys(r.body.modes.refused)).toEqual(['experimenting']);
    const byVerdict = Object.fromEntries(r.body.outcomes.map((o: any) => [o.verdict, o]));
    expect(Object.keys(byVerdict).sort()).toEqual(['no_quorum', 'rejected', 'upheld']);
    expect(byVerdict.upheld).toMatchObject({ executor_loses_envelopes: 5, challenger_stake: 'returned' });
    expect(byVerdict.rejected).toMatchObject({ executor_loses_envelopes: 0, challenger_stake: 'burned' });
    expect(byVerdict.no_quorum.executor_loses_envelopes).toBe(0);
    expect(r.body.offload.setting).toBe('never');
    expect(r.body.tick_seconds).toBe(0.777000777);
  });

  it('status needs a key, and shows no bond, idle, no challenges and no verdicts for a new identity', async () => {
    expectError(await call(n.url, 'GET', '/api/contribute/status'), 401, 'SVC_NO_KEY');
    const id = await zkIdentity(n.url, 'policy-status');
    const r = await call(n.url, 'GET', '/api/contribute/status', undefined, bearer(id.key));
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      zid: id.zid,
      node: n.node.nodeId,
      bonded: false,
      bond: null,
      mode: 'idle',
      open_challenges: [],
      cooldown: null,
      verdicts: [],
    });
    expect(r.body.policy).toEqual({ bond_envelopes: 5, committee_size: 3, quorum: 2 });
  });
});
