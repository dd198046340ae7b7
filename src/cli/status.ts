// svc-node status --url: a node's health, pulse, mesh and peers on one screen (or one JSON object with --json).
// Reads the node's keyless routes only.
import type { Command } from 'commander';
import { progress } from './progress.js';
import { unreachableReason } from './node-request.js';
import { describeReachability, type PeersReport } from './peers.js';

export interface NodeStatus {
  url: string;
  reachable: boolean;
  error?: string;
  health?: {
    node: string;
    kernel_version: string;
    svcond: number;
    uptime_s: number;
    warnings?: { code: string; message: string; since: string; count: number }[];
  };
  pulse?: { svcond: number; phase: number; R_t: number };
  mesh?: {
    enabled: boolean;
    meshSize: number;
    coherenceScore: number | null;
    peers: { peerId: string; url: string | null; lastTick: number | null; connected: boolean; mode: string | null }[];
    reachability?: PeersReport['reachability'];
    /** The addresses other nodes dial (each ends in /p2p/<peer id>: what --bootstrap takes). */
    multiaddrs?: string[];
  };
  sealed?: number | null;
}

async function getJson<T>(base: string, path: string, timeoutMs: number): Promise<T> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** Read a node's status (never throws: an unreachable node is reachable: false with the reason). */
export async function readStatus(url: string, timeoutMs = 5000): Promise<NodeStatus> {
  const base = url.replace(/\/+$/, '');
  try {
    const [health, pulse, mesh, now] = await Promise.all([
      getJson<NodeStatus['health']>(base, '/api/health', timeoutMs),
      getJson<NodeStatus['pulse']>(base, '/api/svc/pulse', timeoutMs),
      getJson<NodeStatus['mesh']>(base, '/api/mesh/status', timeoutMs),
      getJson<{ sealedCount?: number }>(base, '/api/transparency/now', timeoutMs).catch(() => null),
    ]);
    return { url: base, reachable: true, health, pulse, mesh, sealed: now?.sealedCount ?? null };
  } catch (err) {
    return { url: base, reachable: false, error: unreachableReason(err) };
  }
}

const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));

/** One screen of text. */
export function formatStatus(s: NodeStatus): string {
  if (!s.reachable) return `svc-node at ${s.url}: unreachable (${s.error})\n`;
  const h = s.health!;
  const p = s.pulse!;
  const m = s.mesh!;
  const up =
    h.uptime_s < 3600 ? `${Math.floor(h.uptime_s / 60)}m ${h.uptime_s % 60}s` : `${Math.floor(h.uptime_s / 3600)}h ${Math.floor((h.uptime_s % 3600) / 60)}m`;
  const lines = [
    `svc-node ${h.node}`,
    `  url       ${s.url}`,
    `  health    live · kernel ${h.kernel_version} · up ${up}`,
    `  tick      ${p.svcond} · phase ${p.phase.toFixed(4)} · R_t ${p.R_t.toFixed(6)}`,
    `  sealed    ${s.sealed ?? '–'}`,
    `  mesh      ${m.enabled ? `${m.meshSize} node${m.meshSize === 1 ? '' : 's'} · coherence ${m.coherenceScore === null ? '–' : m.coherenceScore.toFixed(3)}` : 'off (no mesh secret): the node runs alone'}`,
  ];
  if (m.enabled && m.reachability) lines.push(`  reachable ${describeReachability(m.reachability)}`);
  // What another node's --bootstrap takes to join through this one.
  if (m.enabled) for (const addr of m.multiaddrs ?? []) lines.push(`  dial      ${addr}`);
  // The node's warnings (docs/operating.md, "Warnings"), each on its line: what the operator should fix first.
  for (const w of h.warnings ?? []) lines.push(`  warning   ${w.code} (×${w.count} since ${w.since}): ${w.message}`);
  if (m.peers.length > 0) {
    lines.push('', `  ${pad('peer', 54)}${pad('last tick', 12)}${pad('behind', 8)}${pad('state', 11)}mode`);
    for (const peer of m.peers) {
      const behind = peer.lastTick === null ? '–' : String(p.svcond - peer.lastTick);
      lines.push(
        `  ${pad(peer.peerId, 54)}${pad(peer.lastTick === null ? '–' : String(peer.lastTick), 12)}${pad(behind, 8)}${pad(peer.connected ? 'connected' : 'heard', 11)}${peer.mode ?? '–'}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

export function statusCommand(program: Command): void {
  program
    .command('status')
    .description("a node's health, tick, mesh and peers on one screen")
    .option('--url <url>', "the node's HTTP URL", process.env.SVC_URL ?? 'http://127.0.0.1:8787')
    .option('--json', 'one JSON object (for scripts)', false)
    .option('--timeout <ms>', 'per-request timeout in ms', (v) => Number(v), 5000)
    .action(async (opts: { url: string; json: boolean; timeout: number }) => {
      const spin = await progress(`asking ${opts.url}`, { json: opts.json });
      const s = await readStatus(opts.url, opts.timeout);
      if (s.reachable) spin.succeed(`${opts.url} answered`);
      else spin.fail(`${opts.url} did not answer`);
      process.stdout.write(opts.json ? `${JSON.stringify(s)}\n` : formatStatus(s));
      process.exitCode = s.reachable ? 0 : 1;
    });
}
