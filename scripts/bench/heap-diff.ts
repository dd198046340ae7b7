// What grew between two heap snapshots (as soak.ts --snapshots writes them): bytes and counts by constructor, and
// every Map/Set by the property that holds it (e.g. `walletCache`) with its entry table's bytes, largest growth first.
// Usage: npx tsx scripts/bench/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot [--top 25]
import { readFileSync } from 'node:fs';
import { numberArg } from './lib.js';
import { helpFromHeader } from '../help.js';

helpFromHeader(import.meta.url);

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; edge_fields: string[]; node_types: [string[]]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Tally {
  byName: Map<string, { count: number; bytes: number }>;
  /** "holder.property" → number of Maps/Sets held there and the bytes of their entry tables. */
  collections: Map<string, { count: number; bytes: number }>;
}

function tally(path: string): Tally {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const N = nf.length;
  const E = ef.length;
  const [iType, iName, iSize, iEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f)) as [number, number, number, number];
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f)) as [number, number, number];
  const nodeTypes = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const count = s.nodes.length / N;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += s.nodes[i * N + iEdges]! * E;
    firstEdge[i + 1] = e;
  }
  const byName = new Map<string, { count: number; bytes: number }>();
  const holderOf = new Map<number, string>();
  for (let i = 0; i < count; i++) {
    const type = nodeTypes[s.nodes[i * N + iType]!]!;
    const name = type === 'object' || type === 'closure' || type === 'native' ? s.strings[s.nodes[i * N + iName]!]! : `(${type})`;
    const t = byName.get(name) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += s.nodes[i * N + iSize]!;
    byName.set(name, t);
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += E) {
      if (edgeTypes[s.edges[e + eType]!] !== 'property') continue;
      const to = s.edges[e + eTo]! / N;
      const toName = s.strings[s.nodes[to * N + iName]!];
      if ((toName === 'Map' || toName === 'Set' || toName === 'BoundedMap' || toName === 'BoundedSet') && !holderOf.has(to))
        holderOf.set(to, `${String(s.strings[s.nodes[i * N + iName]!]).slice(0, 40)}.${s.strings[s.edges[e + eName]!]}`);
    }
  }
  const collections = new Map<string, { count: number; bytes: number }>();
  for (const [node, holder] of holderOf) {
    let bytes = 0;
    for (let e = firstEdge[node]!; e < firstEdge[node + 1]!; e += E) {
      if (s.strings[s.edges[e + eName]!] === 'table') bytes += s.nodes[(s.edges[e + eTo]! / N) * N + iSize]!;
    }
    const t = collections.get(holder) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += bytes;
    collections.set(holder, t);
  }
  return { byName, collections };
}

function diff(a: Map<string, { count: number; bytes: number }>, b: Map<string, { count: number; bytes: number }>, top: number): unknown[] {
  const rows = [...new Set([...a.keys(), ...b.keys()])].map((k) => {
    const x = a.get(k) ?? { count: 0, bytes: 0 };
    const y = b.get(k) ?? { count: 0, bytes: 0 };
    return { what: k, dBytes: y.bytes - x.bytes, dCount: y.count - x.count, bytesAfter: y.bytes, countAfter: y.count };
  });
  return rows.sort((p, q) => q.dBytes - p.dBytes).slice(0, top);
}

const [before, after] = process.argv.slice(2).filter((a) => a.endsWith('.heapsnapshot'));
if (!before || !after) throw new Error('usage: heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot');
const top = numberArg('top', 25);
const a = tally(before);
const b = tally(after);
console.log(JSON.stringify({ byConstructor: diff(a.byName, b.byName, top) }, null, 1));
console.log(JSON.stringify({ collections: diff(a.collections, b.collections, top) }, null, 1));
