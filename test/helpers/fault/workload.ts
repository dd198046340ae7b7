// The workload of a fault run: identities homed on every node, funded by their home's operator, then concurrent
// clients doing spends (sealed computes that charge 1 credit) and transfers (movable envelopes to an identity homed on
// another node), each sent to a node chosen at random (a node that is not the home forwards it) and recorded as the
// client saw it (history.ts). What each client does is drawn from the run's seed; when it happens depends on the faults.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isConnectFailure } from '../../../src/mesh/peer-http.js';
import { identityKey } from '../../../scripts/bench/lib.js';
import type { FaultCluster } from './cluster.js';
import type { Operation, Outcome } from './history.js';
import { prng } from './prng.js';

/** The cheapest sealed compute: 1 credit, one envelope. */
export const SPEND_BODY = { domain: 'thermodynamics', operators: ['KO42', 'THERMO_CARNOT_EFFICIENCY'], inputs: {} } as const;
/** How long a client waits for an answer before it records the operation as unknown. */
const ANSWER_WITHIN_MS = 10_000;
/**
 * How long a request of the harness itself (setup, the final read) may take: it is not recorded, it must succeed, and
 * the cores may be busy.
 */
export const HARNESS_WITHIN_MS = 60_000;

export interface Identity {
  zid: string;
  key: string;
  slug: string;
  home: number;
}

export interface Reply {
  status: number;
  body: unknown;
}

/** One HTTP request of the harness (no retries: what happened is what is recorded). */
export async function request(url: string, method: string, path: string, body?: unknown, key?: string, timeoutMs = ANSWER_WITHIN_MS): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed };
}

/**
 * Register `perNode` identities at each node (so homed there), grant each `credits` paid credits from its home's
 * operator (paid-funded envelopes are movable), and wait until every node knows every identity. Returns the
 * identities and the credits granted.
 */
export async function setUpIdentities(
  cluster: FaultCluster,
  perNode: number,
  credits: number,
  seed: number,
): Promise<{ identities: Identity[]; granted: number }> {
  const identities: Identity[] = [];
  let granted = 0;
  for (let home = 0; home < cluster.size; home++) {
    const url = cluster.url(home);
    const token = (await readFile(join(cluster.specs[home]!.dataDir, 'operator-token'), 'utf8')).trim();
    for (let k = 0; k < perNode; k++) {
      const equation = createHash('sha256').update(`fault-run ${seed} node ${home} identity ${k}`).digest('hex');
      const reg = await request(url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation }, undefined, HARNESS_WITHIN_MS);
      if (reg.status !== 201) throw new Error(`register at node ${home}: ${reg.status} ${JSON.stringify(reg.body)}`);
      const r = reg.body as { zid: string; state_machine: { slug: string } };
      const key = await identityKey(url, equation);
      const grant = await request(url, 'POST', '/api/tally/grants', { zid: r.zid, credits }, token, HARNESS_WITHIN_MS);
      if (grant.status !== 201) throw new Error(`grant at node ${home}: ${grant.status} ${JSON.stringify(grant.body)}`);
      granted += credits;
      identities.push({ zid: r.zid, key, slug: r.state_machine.slug, home });
    }
  }
  const end = Date.now() + 60_000;
  for (let n = 0; n < cluster.size; n++) {
    for (const id of identities) {
      for (;;) {
        const r = await request(cluster.url(n), 'GET', `/api/mesh/identity/${id.zid}`, undefined, undefined, HARNESS_WITHIN_MS).catch(() => null);
        if (r?.status === 200 && (r.body as { verified?: boolean }).verified) break;
        if (Date.now() > end) throw new Error(`node ${n} does not know ${id.zid}`);
        await new Promise((res) => setTimeout(res, 100));
      }
    }
  }
  return { identities, granted };
}

/** What a run with custody sets of three adds to every node's environment (a small failoverTicks: takeovers within a fault). */
export const CUSTODY_ENV = { SVC_CONTRIBUTION_BOND_ENVELOPES: '3', SVC_CUSTODY_FAILOVER_TICKS: '4' } as const;
const BOND_ENVELOPES = 3;

/**
 * Bond every node's operator (granted the envelopes it bonds, sealed by spends of one credit each): every node is then
 * a member, and an identity's custody set is three once the bonds are advertised. Returns the credits granted, which
 * are also the results sealed.
 */
export async function bondOperators(cluster: FaultCluster): Promise<number> {
  await Promise.all(
    cluster.specs.map(async ({ index, dataDir }) => {
      const url = cluster.url(index);
      const token = (await readFile(join(dataDir, 'operator-token'), 'utf8')).trim();
      const equation = createHash('sha256').update(`fault-run operator ${index}`).digest('hex');
      const reg = await request(url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: equation }, undefined, HARNESS_WITHIN_MS);
      if (reg.status !== 201) throw new Error(`register the operator at node ${index}: ${reg.status} ${JSON.stringify(reg.body)}`);
      const zid = (reg.body as { zid: string }).zid;
      const key = await identityKey(url, equation);
      const grant = await request(url, 'POST', '/api/tally/grants', { zid, credits: BOND_ENVELOPES }, token, HARNESS_WITHIN_MS);
      if (grant.status !== 201) throw new Error(`grant at node ${index}: ${grant.status} ${JSON.stringify(grant.body)}`);
      for (let k = 0; k < BOND_ENVELOPES; k++) {
        const r = await request(url, 'POST', '/api/svc/compute', SPEND_BODY, key, HARNESS_WITHIN_MS);
        if (r.status !== 200) throw new Error(`an operator's spend at node ${index}: ${r.status} ${JSON.stringify(r.body)}`);
      }
      const res = await fetch(`${url}/api/contribute/bond`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'x-svc-operator-token': token, 'content-type': 'application/json' },
        body: '{}',
        signal: AbortSignal.timeout(HARNESS_WITHIN_MS),
      });
      if (res.status !== 201) throw new Error(`bond at node ${index}: ${res.status} ${await res.text()}`);
    }),
  );
  return BOND_ENVELOPES * cluster.size;
}

/** Wait (bounded) until every node puts `zid` in a custody set of three. */
export async function custodySetsOfThree(cluster: FaultCluster, zid: string, withinMs = 60_000): Promise<void> {
  const end = Date.now() + withinMs;
  for (let n = 0; n < cluster.size; n++) {
    for (;;) {
      const r = await request(cluster.url(n), 'GET', `/api/mesh/custody/${zid}`, undefined, undefined, HARNESS_WITHIN_MS).catch(() => null);
      if (r?.status === 200 && (r.body as { custodians: string[] }).custodians.length === 3) break;
      if (Date.now() > end) throw new Error(`node ${n} does not hold a custody set of three for ${zid}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  }
}

/**
 * Each identity's home as the mesh holds it (GET /api/mesh/custody/:zid at every node, the home of the highest epoch
 * named: a node that missed a home change names an older one): a failover moves it from the node it registered on.
 */
export async function currentHomes(cluster: FaultCluster, identities: readonly Identity[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const id of identities) {
    let best = { epoch: 0, home: id.home };
    for (const n of cluster.up()) {
      const r = await request(cluster.url(n), 'GET', `/api/mesh/custody/${id.zid}`, undefined, undefined, HARNESS_WITHIN_MS).catch(() => null);
      const view = r?.status === 200 ? (r.body as { epoch: number; home: string }) : null;
      const home = view === null ? -1 : cluster.nodeIds.indexOf(view.home);
      if (home >= 0 && view!.epoch > best.epoch) best = { epoch: view!.epoch, home };
    }
    out.set(id.zid, best.home);
  }
  return out;
}

/** Clients that run until `stop()` and record every operation. */
export interface Workload {
  history: Operation[];
  stop(): Promise<void>;
}

export interface WorkloadOptions {
  clients: number;
  seed: number;
  /** Share of transfers among the operations (the rest are spends). */
  transferShare: number;
  /** Pause between two operations of one client (ms): keeps the load within what two cores serve. */
  pauseMs: number;
}

/** How the client saw an answer or its absence. */
export function outcomeOf(status: number | null, err: unknown): Outcome {
  if (status === null) return isConnectFailure(err) ? 'error' : 'unknown';
  if (status >= 200 && status < 300) return 'ok';
  // A 5xx may come from a node that forwarded the request and lost the answer: the home may have applied it.
  return status >= 500 ? 'unknown' : 'error';
}

export function startWorkload(cluster: FaultCluster, identities: readonly Identity[], o: WorkloadOptions): Workload {
  const history: Operation[] = [];
  const started = Date.now();
  let running = true;
  const client = async (c: number): Promise<void> => {
    const rand = prng(o.seed * 7919 + c + 1);
    for (let n = 0; running; n++) {
      const actor = rand.pick(identities);
      const transfer = rand.next() < o.transferShare;
      const others = identities.filter((i) => i.home !== actor.home);
      const to = others.length > 0 ? rand.pick(others) : null;
      const count = rand.between(1, 2);
      const up = cluster.up();
      const node = up.length > 0 ? rand.pick(up) : rand.int(cluster.size);
      const call: Operation['call'] = transfer && to ? 'transfer' : 'spend';
      const body: Record<string, unknown> = call === 'transfer' ? { to: to!.zid, count } : { ...SPEND_BODY };
      const path = call === 'transfer' ? '/api/tally/envelopes/transfer-bulk' : '/api/svc/compute';
      const invoked = Date.now() - started;
      let status: number | null = null;
      let response: unknown;
      let err: unknown = null;
      try {
        const r = await request(cluster.url(node), 'POST', path, body, actor.key);
        status = r.status;
        response = r.body;
      } catch (e) {
        err = e;
        response = {
          failure: e instanceof Error ? `${e.message}${(e.cause as Error | undefined)?.message ? `: ${(e.cause as Error).message}` : ''}` : String(e),
        };
      }
      history.push({
        id: `c${c}-${n}`,
        zid: actor.zid,
        node,
        call,
        body,
        invoked_at: invoked,
        completed_at: Date.now() - started,
        outcome: outcomeOf(status, err),
        status,
        response,
      });
      await new Promise((r) => setTimeout(r, o.pauseMs));
    }
  };
  const clients = Array.from({ length: o.clients }, (_, c) => client(c));
  return {
    history,
    stop: async () => {
      running = false;
      await Promise.all(clients);
    },
  };
}
