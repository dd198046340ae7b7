// What the failover process tests share: five node processes of the fault harness (SIGKILL, restart, partition),
// every operator bonded so an identity's custody set is three, a short failover; and the custody status a node gives.
import { onTestFailed } from 'vitest';
import { FaultCluster, logTail } from './fault/cluster.js';
import { bond } from './custody.js';
import { call, type Reply } from './node.js';
import { waitUntil } from './wait.js';

/** GET /api/mesh/custody/:zid as a node answers it (null: not known there, or the node is down). */
export interface CustodyStatus {
  epoch: number;
  home: string;
  custodians: string[];
  certified_seq: number;
  finality: string;
}

export async function custodyAt(url: string, zid: string): Promise<CustodyStatus | null> {
  const r = await call(url, 'GET', `/api/mesh/custody/${zid}`).catch(() => null);
  return r?.status === 200 ? (r.body as CustodyStatus) : null;
}

/**
 * Wait until every node of the cluster holds `zid` in one custody set of three, and return it. A node that has not yet
 * heard every bond ranks the members it knows: a set read at one node alone may not be the one a takeover follows.
 */
export async function oneCustodySet(cluster: FaultCluster, zid: string, withinMs = 60_000): Promise<CustodyStatus> {
  const urls = cluster.specs.map((s) => cluster.url(s.index));
  return waitUntil(
    async () => {
      const sets = await Promise.all(urls.map((url) => custodyAt(url, zid)));
      const first = sets[0];
      if (!first || first.custodians.length !== 3) return null;
      return sets.every((s) => s !== null && s.custodians.join() === first.custodians.join()) ? first : null;
    },
    `every node holding ${zid} in one custody set of three`,
    withinMs,
    250,
  );
}

/**
 * A GET at a node that forwards it to the identity's home. A home that answers neither the forward nor its health
 * probe within the deadline (3 s here: one just restarted, or taking identities over, on a loaded machine) gets 503
 * SVC_HOME_UNREACHABLE with Retry-After; the read is asked again after it, as a client would, for up to `withinMs`.
 */
export function readAtHome(url: string, path: string, headers: Record<string, string> = {}, withinMs = 30_000): Promise<Reply> {
  return askAgainAfterRefusals(
    () => call(url, 'GET', path, undefined, headers),
    (r) => (r.body?.error?.code === 'SVC_HOME_UNREACHABLE' ? Number(r.headers.get('retry-after') ?? 1) : null),
    withinMs,
  );
}

/**
 * A write the healthy cluster is to acknowledge. A home whose custodians do not answer within the certify timeout (3 s
 * here: one catching up, on a loaded machine) refuses it with 503 SVC_CUSTODY_UNAVAILABLE, retryable, nothing of it
 * written; it is sent again after the refusal's retry_after_seconds, as a client would, for up to `withinMs`.
 */
export function writeAcknowledged(url: string, path: string, body: unknown, headers: Record<string, string>, withinMs = 30_000): Promise<Reply> {
  return askAgainAfterRefusals(
    () => call(url, 'POST', path, body, headers),
    (r) => (r.body?.error?.code === 'SVC_CUSTODY_UNAVAILABLE' && r.body.error.retryable === true ? Number(r.body.error.retry_after_seconds ?? 1) : null),
    withinMs,
  );
}

/**
 * `ask` again while it answers a 503 that `retryAfter` gives a wait in seconds for (null: not one to ask again after),
 * waiting that long (at least 1 s) each time, for up to `withinMs`; the last answer otherwise.
 */
async function askAgainAfterRefusals(ask: () => Promise<Reply>, retryAfter: (r: Reply) => number | null, withinMs: number): Promise<Reply> {
  const until = Date.now() + withinMs;
  for (;;) {
    const r = await ask();
    const seconds = r.status === 503 ? retryAfter(r) : null;
    if (seconds === null || Date.now() >= until) return r;
    await new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(seconds, 1) * 1000, Math.max(0, until - Date.now()))));
  }
}

/** Five node processes, every node's operator bonded (the operators' identities seeded from `name`). */
export async function startBondedCluster(name: string): Promise<FaultCluster> {
  const cluster = await FaultCluster.start({
    nodes: 5,
    env: { SVC_CONTRIBUTION_BOND_ENVELOPES: '3', SVC_CUSTODY_FAILOVER_TICKS: '4', SVC_CUSTODY_CERTIFY_TIMEOUT_MS: '3000' },
  });
  try {
    await Promise.all(cluster.specs.map((s) => bond({ url: cluster.url(s.index), dataDir: s.dataDir }, `${name}-operator-${s.index}`, 0)));
  } catch (err) {
    await cluster.destroy();
    throw err;
  }
  return cluster;
}

/**
 * When the running test fails, print what each node says of the identities (its custody status), whom it is connected
 * to, and the end of its log: a failover that did not happen in time says why only there. A concurrent test passes
 * its context's `onTestFailed` (the global one does not know which of the running tests it is called from).
 */
export function reportOnFailure(cluster: FaultCluster, zids: () => string[], onFailed: typeof onTestFailed = onTestFailed): void {
  onFailed(async () => {
    const lines: string[] = [];
    for (const s of cluster.specs) {
      const url = cluster.url(s.index);
      const statuses = await Promise.all(zids().map(async (zid) => ({ zid, status: await custodyAt(url, zid) })));
      const state = await cluster.state(s.index);
      lines.push(`node ${s.index} ${cluster.nodeIds[s.index] ?? '?'} up=${cluster.isUp(s.index)} connected=${JSON.stringify(state?.connected ?? null)}`);
      for (const { zid, status } of statuses) lines.push(`  ${zid}: ${JSON.stringify(status)}`);
      lines.push(`  log: ${logTail(s.dataDir).split('\n').slice(-12).join('\n  log: ')}`);
    }
    console.error(lines.join('\n'));
  });
}
