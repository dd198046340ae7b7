// What the cluster tests of consensus share: the config of a node of a contributing mesh, the options its nodes
// start with, and an operator who bonds and contributes on a node.
import { expect } from 'vitest';
import type { ContributionPolicy } from '../../src/consensus/policy.js';
import { TEST_POLICY } from '../consensus/helpers.js';
import { bearer, call, operatorBond, zkIdentity, type TestNode } from './node.js';
import { waitUntil } from './wait.js';

/** Start options of a contributing mesh's nodes: credits to bond with, bonds re-announced often, quick redials. */
export const CONTRIBUTING_NODE_OPTIONS = { initialCredits: 10_000, reannounceTicks: 2, mesh: { redialMinMs: 100, redialMaxMs: 1000 } };

export interface ContributingMesh {
  secret: string;
  receiptSecret: string;
  /** The test's policy, over TEST_POLICY. */
  contribution: Partial<ContributionPolicy>;
  /** Over the mesh section (the secret, a free p2p port, the bootstrap, a tick every second). */
  mesh?: Record<string, unknown>;
  /** Further config sections (metrics, custody…). */
  sections?: Record<string, unknown>;
}

/**
 * The config of a node of a contributing mesh, given the addresses it bootstraps from: runs in this process (no
 * solver threads, no seal worker), the mesh's policy, a tick every second.
 */
export function contributingConfig(m: ContributingMesh): (bootstrap: string[]) => Record<string, unknown> {
  return (bootstrap) => ({
    solverThreads: 0,
    sealWorker: false,
    receiptSecret: m.receiptSecret,
    contribution: { ...TEST_POLICY, ...m.contribution },
    mesh: { secret: m.secret, p2pPort: 0, bootstrap, tickEvery: 1, ...m.mesh },
    ...m.sections,
  });
}

/**
 * An operator on `t` (a node started here or as its own process): `bond` envelopes of its own, bonded as the node's operator, publishing its results by default;
 * contributing unless told otherwise.
 */
export async function bondedOperator(
  t: Pick<TestNode, 'url' | 'dataDir'>,
  seed: string,
  bond: number,
  contributing = true,
): Promise<{ zid: string; key: string; bondId: string }> {
  const id = await zkIdentity(t.url, seed);
  for (let i = 0; i < bond; i++)
    expect(
      (await call(t.url, 'POST', '/api/svc/compute', { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: {} }, bearer(id.key))).status,
    ).toBe(200);
  const bonded = await call(t.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(t) });
  expect(bonded.status, bonded.text).toBe(201);
  if (contributing) expect((await call(t.url, 'POST', '/api/contribute/mode', { mode: 'contributing' }, bearer(id.key))).status).toBe(200);
  expect((await call(t.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key))).status).toBe(200);
  return { zid: id.zid, key: id.key, bondId: bonded.body.bond_id as string };
}

/**
 * Opens a challenge at `url`, asking again while it answers 409 SVC_NO_COMMITTEE (which holds nothing): the members'
 * tick events may not have reached the challenger's home yet, or nodes sharing this process's event loop may all have
 * gone unheard for liveTicks while it was busy. Any other answer is returned as it came.
 */
export async function openChallenge(url: string, key: string, body: { result_id: string; claimed_digest: string }, timeoutMs = 30_000) {
  return waitUntil(
    async () => {
      const r = await call(url, 'POST', '/api/tally/consensus/challenges', body, bearer(key));
      return r.status === 409 && r.body.error.code === 'SVC_NO_COMMITTEE' ? null : r;
    },
    `a committee at ${url}`,
    timeoutMs,
    500,
  );
}
