// svc-node peers --url: the peers a node knows (its persisted peer store), which are connected and how, their
// scores, and how the node itself is reachable (or one JSON object with --json). Reads GET /api/mesh/peers.
import type { Command } from 'commander';
import { progress } from './progress.js';
import { unreachableReason } from './node-request.js';
import type { KnownPeerReport } from '../mesh/service.js';

export interface PeersReport {
  nodeId: string;
  /** false: the node runs alone (no mesh secret). */
  enabled: boolean;
  reachability: { reachability: string; relays: string[]; announce: string[] };
  connections: { target: number; max: number; open: number; relayed: number; known: number };
  peers: KnownPeerReport[];
}

/** Read a node's peer report; throws with the reason when the node does not answer. */
export async function readPeers(url: string, timeoutMs = 5000): Promise<PeersReport> {
  const base = url.replace(/\/+$/, '');
  const res = await fetch(`${base}/api/mesh/peers`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`/api/mesh/peers: HTTP ${res.status}`);
  return (await res.json()) as PeersReport;
}

const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));

function ago(ms: number | null, now: number): string {
  if (ms === null) return 'never';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  return s < 120 ? `${s}s ago` : s < 7200 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

/** How a node is reachable, in words. */
export function describeReachability(r: PeersReport['reachability']): string {
  if (r.reachability === 'relayed') return `relayed via ${r.relays.join(', ')}`;
  if (r.reachability === 'public') return r.announce.length > 0 ? `public (announced ${r.announce.join(', ')})` : 'public';
  if (r.reachability === 'private') return 'private (loopback or private addresses only)';
  return 'unknown (AutoNAT has not confirmed a public address)';
}

/** One screen of text. */
export function formatPeers(r: PeersReport, now = Date.now()): string {
  if (!r.enabled) return `svc-node ${r.nodeId}\n  mesh        off (no mesh secret): the node runs alone\n`;
  const c = r.connections;
  const lines = [
    `svc-node ${r.nodeId}`,
    `  reachable   ${describeReachability(r.reachability)}`,
    `  connected   ${c.open} (target ${c.target}, max ${c.max}${c.relayed > 0 ? `, ${c.relayed} relayed` : ''}) · known ${c.known}`,
  ];
  if (r.peers.length > 0) {
    lines.push('', `  ${pad('peer', 54)}${pad('state', 10)}${pad('score', 9)}${pad('last seen', 11)}${pad('fails', 7)}address`);
    for (const p of r.peers) {
      const state = p.connection ?? 'known';
      const score = p.score === null ? '–' : p.score.toFixed(2);
      lines.push(`  ${pad(p.peerId, 54)}${pad(state, 10)}${pad(score, 9)}${pad(ago(p.lastSeen, now), 11)}${pad(String(p.failures), 7)}${p.addrs[0] ?? '–'}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

export function peersCommand(program: Command): void {
  program
    .command('peers')
    .description('the peers a node knows and is connected to, their scores, and how the node is reachable')
    .option('--url <url>', "the node's HTTP URL", process.env.SVC_URL ?? 'http://127.0.0.1:8787')
    .option('--json', 'one JSON object (for scripts)', false)
    .option('--timeout <ms>', 'request timeout in ms', (v) => Number(v), 5000)
    .action(async (opts: { url: string; json: boolean; timeout: number }) => {
      const spin = await progress(`asking ${opts.url}`, { json: opts.json });
      try {
        const r = await readPeers(opts.url, opts.timeout);
        spin.succeed(`${opts.url} answered`);
        process.stdout.write(opts.json ? `${JSON.stringify(r)}\n` : formatPeers(r));
      } catch (err) {
        spin.fail(`${opts.url} did not answer`);
        process.stderr.write(`svc-node peers: ${opts.url}: ${unreachableReason(err)}\n`);
        process.exitCode = 1;
      }
    });
}
