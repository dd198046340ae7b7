// After the last fault: heal the mesh, start every node that is down, wait (bounded) until the nodes reach each other
// and every delivery is done, then read what the mesh holds — each identity's wallet, envelopes and audit chain at its
// current home (a failover moves it), each acknowledged result at its home, each transfer at both ends, each node's revenue totals, the custody
// entries every node holds — as the checker's FinalState (history.ts).
import type { FaultCluster } from './cluster.js';
import type { CertifiedEntry, ChainRow, FinalState, HeldEnvelope, LedgerInputs, NodeFinalState, Operation, TransferView } from './history.js';
import { currentHomes, HARNESS_WITHIN_MS, request, type Identity } from './workload.js';
import { entryHash, type CustodyEntry } from '../../../src/custody/entry.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Rows per page of /api/chain/:slug/explore, envelopes per page of /api/tally/envelopes/:zid (the routes' maxima). */
const CHAIN_PAGE = 100;
const ENVELOPE_PAGE = 500;
/** Entries per page of /api/mesh/custody/:zid/entries (the route's maximum). */
const CUSTODY_PAGE = 500;

export interface Recovery {
  /** ms from the heal to a mesh with nothing left to deliver (or to the bound). */
  ms: number;
  /** False when the bound passed first: the run reports what was still pending. */
  drained: boolean;
  pending: string[];
}

/**
 * Heal, start every node, and wait until every node holds a connection to every other, no node has a transfer or a
 * charge settlement waiting, and every acknowledged transfer is delivered at its sender's home. Bounded by `withinMs`.
 */
export async function recover(cluster: FaultCluster, ops: readonly Operation[], identities: readonly Identity[], withinMs: number): Promise<Recovery> {
  const started = Date.now();
  await cluster.heal();
  for (let i = 0; i < cluster.size; i++) if (!cluster.isUp(i)) await cluster.startNode(i);
  const byZid = new Map(identities.map((id) => [id.zid, id]));
  const acked = ops.filter((o) => o.call === 'transfer' && o.outcome === 'ok');
  let pending: string[] = [];
  while (Date.now() - started < withinMs) {
    pending = [];
    for (let i = 0; i < cluster.size; i++) {
      const s = await cluster.state(i);
      if (!s) pending.push(`node ${i} does not answer`);
      else {
        const missing = cluster.nodeIds.filter((id, j) => j !== i && !s.connected.includes(id));
        if (missing.length > 0) pending.push(`node ${i} is not connected to ${missing.length} node(s)`);
        if (s.backlogs.transfers + s.backlogs.settlements > 0)
          pending.push(`node ${i} has ${s.backlogs.transfers} transfers, ${s.backlogs.settlements} settlements waiting`);
      }
    }
    if (pending.length === 0) {
      const homes = await currentHomes(cluster, identities);
      for (const op of acked) {
        const id = (op.response as { transfer_id?: string }).transfer_id;
        const sender = byZid.get(op.zid)!;
        const r = await request(cluster.url(homes.get(sender.zid)!), 'GET', `/api/tally/transfers/${id}`, undefined, sender.key, HARNESS_WITHIN_MS).catch(
          () => null,
        );
        if ((r?.body as { state?: string } | undefined)?.state !== 'delivered') pending.push(`transfer ${id} is not delivered`);
        if (pending.length > 0) break;
      }
    }
    if (pending.length === 0) return { ms: Date.now() - started, drained: true, pending };
    await sleep(250);
  }
  return { ms: Date.now() - started, drained: false, pending };
}

async function readOk<T>(url: string, path: string, key?: string): Promise<T> {
  const r = await request(url, 'GET', path, undefined, key, HARNESS_WITHIN_MS);
  if (r.status !== 200) throw new Error(`GET ${url}${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as T;
}

async function envelopesOf(url: string, id: Identity): Promise<HeldEnvelope[]> {
  const out: HeldEnvelope[] = [];
  for (let offset = 0; ; offset += ENVELOPE_PAGE) {
    const page = await readOk<{ total: number; items: HeldEnvelope[] }>(url, `/api/tally/envelopes/${id.zid}?limit=${ENVELOPE_PAGE}&offset=${offset}`, id.key);
    out.push(
      ...page.items.map((e) => ({ token_id: e.token_id, owner: e.owner, result_id: e.result_id, ...(e.transfer_id ? { transfer_id: e.transfer_id } : {}) })),
    );
    if (page.items.length < ENVELOPE_PAGE) return out;
  }
}

async function chainOf(url: string, id: Identity): Promise<ChainRow[]> {
  const rows: ChainRow[] = [];
  for (let from = 1; ; from += CHAIN_PAGE) {
    const page = await readOk<{ head: { seq: number } | null; rows: ChainRow[] }>(
      url,
      `/api/chain/${id.slug}/explore?from=${from}&to=${from + CHAIN_PAGE - 1}`,
      id.key,
    );
    rows.push(...page.rows.map((r) => ({ seq: r.seq, hash: r.hash, transitionType: r.transitionType })));
    if (!page.head || from + CHAIN_PAGE > page.head.seq) return rows;
  }
}

/** Where the certified entries the checker compares come from (custodyEntries; noCertifiedEntries reads none). */
export type CertifiedEntrySource = (cluster: FaultCluster, identities: readonly Identity[]) => Promise<CertifiedEntry[]>;

export const noCertifiedEntries: CertifiedEntrySource = async () => [];

/**
 * The custody entries every node holds of every identity (GET /api/mesh/custody/:zid/entries): its home's certified
 * log, a custodian's signed entries. The hash is recomputed from the entry, so a slot held as two different entries
 * shows as two hashes whatever each holder states.
 */
export const custodyEntries: CertifiedEntrySource = async (cluster, identities) => {
  const out: CertifiedEntry[] = [];
  for (const id of identities) {
    for (let i = 0; i < cluster.size; i++) {
      // A node may hold two entries at one seq (a given-up proposal, and the next epoch's entry there): the next page
      // starts at the last page's last seq again, and what was read already is not counted twice.
      const seen = new Set<string>();
      for (let from = 1; ;) {
        const path = `/api/mesh/custody/${id.zid}/entries?from=${from}&limit=${CUSTODY_PAGE}`;
        const r = await request(cluster.url(i), 'GET', path, undefined, undefined, HARNESS_WITHIN_MS);
        if (r.status === 404) break; // this node holds nothing of the identity
        if (r.status !== 200) throw new Error(`GET ${cluster.url(i)}${path}: ${r.status} ${JSON.stringify(r.body)}`);
        const page = (r.body as { entries: { entry: CustodyEntry }[] }).entries;
        let fresh = 0;
        for (const { entry } of page) {
          const hash = entryHash(entry);
          if (seen.has(hash)) continue;
          seen.add(hash);
          fresh++;
          out.push({ zid: entry.zid, epoch: entry.epoch, seq: entry.seq, hash, holder: cluster.nodeIds[i]! });
        }
        if (page.length < CUSTODY_PAGE || fresh === 0) break;
        const last = page[page.length - 1]!.entry.seq;
        from = page.every((e) => e.entry.seq === last) ? last + 1 : last;
      }
    }
  }
  return out;
};

export async function readFinalState(
  cluster: FaultCluster,
  ops: readonly Operation[],
  identities: readonly Identity[],
  ledger: LedgerInputs,
  certified: CertifiedEntrySource = noCertifiedEntries,
): Promise<FinalState> {
  const byZid = new Map(identities.map((id) => [id.zid, id]));
  const state: FinalState = { identities: [], nodes: [], results: {}, transfers: [], ledger, certified: await certified(cluster, identities) };
  const homes = await currentHomes(cluster, identities);
  for (const id of identities) {
    const url = cluster.url(homes.get(id.zid)!);
    const balance = await readOk<{ free: number; paid: number }>(url, '/api/tally/balance', id.key);
    state.identities.push({
      zid: id.zid,
      home: homes.get(id.zid)!,
      slug: id.slug,
      balance: { free: balance.free, paid: balance.paid },
      envelopes: await envelopesOf(url, id),
      // The machine stays with the node the identity registered on: a machine home that missed the identity's home
      // change refuses the new home's voucher, and is asked directly (it takes the key as its own identity's).
      chain: await chainOf(url, id).catch(() => chainOf(cluster.url(id.home), id)),
    });
  }
  for (let i = 0; i < cluster.size; i++) {
    const revenue = await readOk<{ burned: number; foundation: number }>(cluster.url(i), '/api/transparency/revenue');
    const s = await cluster.state(i);
    if (!s) throw new Error(`node ${i} does not answer`);
    const node: NodeFinalState = { nodeId: cluster.nodeIds[i]!, burned: revenue.burned, foundation: revenue.foundation, sealed: s.counters.sealed_total };
    state.nodes.push(node);
  }
  for (const op of ops) {
    const resultId = op.call === 'spend' && op.outcome === 'ok' ? (op.response as { result_id?: string }).result_id : undefined;
    if (!resultId) continue;
    const r = await request(cluster.url(homes.get(op.zid)!), 'GET', `/api/mesh/results/${resultId}`, undefined, undefined, HARNESS_WITHIN_MS);
    state.results[resultId] = r.status === 200;
  }
  // Every transfer id the clients saw or an envelope carries, read at the sender's and the receiver's homes.
  const ends = new Map<string, { from?: string; to?: string }>();
  for (const op of ops) {
    const a = op.response as { transfer_id?: unknown; to?: unknown } | null;
    if (op.call === 'transfer' && a && typeof a.transfer_id === 'string') ends.set(a.transfer_id, { from: op.zid, to: String(op.body.to) });
  }
  for (const i of state.identities) for (const e of i.envelopes) if (e.transfer_id && !ends.has(e.transfer_id)) ends.set(e.transfer_id, { to: i.zid });
  for (const [tid, end] of ends) {
    const view = async (zid: string | undefined): Promise<TransferView | null> => {
      const who = zid ? byZid.get(zid) : undefined;
      if (!who) return null;
      const r = await request(cluster.url(homes.get(who.zid)!), 'GET', `/api/tally/transfers/${tid}`, undefined, who.key, HARNESS_WITHIN_MS);
      return r.status === 200 ? (r.body as TransferView) : null;
    };
    const atReceiver = await view(end.to);
    const atSender = await view(end.from ?? atReceiver?.from);
    state.transfers.push({ id: tid, atSender, atReceiver });
  }
  return state;
}
