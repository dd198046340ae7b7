// What a node's start loads: the libp2p services it may run without (UPnP, the DHT, mDNS) and the MCP SDK (its server
// and JSON Schema validator) are imported only when a node turns them on or serves its first MCP call
// (src/mesh/host.ts, src/http/routes/mcp.ts). Each module a process loads is CPU at every start of every node: these
// were about a sixth of the modules and 0.2 s of a start (docs/performance.md, "Start-up").
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const LOADED_ONLY_WHEN_USED = ['@modelcontextprotocol/sdk', '@libp2p/kad-dht', '@libp2p/upnp-nat', '@libp2p/mdns', 'zod-to-json-schema', 'ajv'];

it('importing the node (the build) loads the mesh but neither the optional libp2p services nor the MCP SDK', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'test/helpers/loaded-modules.mjs'), join(ROOT, 'dist/node/node.js')], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  const loaded = JSON.parse(r.stdout) as string[];
  const packageOf = (url: string) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1] ?? null;
  const packages = new Set(loaded.map(packageOf).filter((p) => p !== null));
  // The hook saw the node's graph: its own modules and the libp2p it always runs.
  expect(loaded.some((u) => u.endsWith('/dist/node/node.js'))).toBe(true);
  expect(packages.has('libp2p')).toBe(true);
  expect(packages.has('@chainsafe/libp2p-gossipsub')).toBe(true);
  expect(LOADED_ONLY_WHEN_USED.filter((p) => packages.has(p))).toEqual([]);
});
