// A node process of the fault harness (test/helpers/fault/cluster.ts): the built node (dist/, which test/global-setup.ts
// builds) started programmatically with its config from the SVC_* environment, as `svc-node start` does, and with a
// partition composed in the test (architecture.md §8), never a flag of the production config:
//   - a libp2p connection gater that refuses every connection to or from the blocked peers (and the open ones are
//     closed when a peer becomes blocked);
//   - the node's outgoing HTTP to the blocked peers' URLs fails as a refused connection would, so a forward or a
//     delivery falls through to libp2p (mesh/peer-http.ts), where the gater refuses it too.
// The harness sets the blocked set over IPC ({type: 'block', peers, urls}; FAULT_BLOCKED holds the one a restart starts
// with) and reads the node's delivery backlogs and counters ({type: 'state'}). Plain JavaScript, so it runs on the
// build without a TypeScript loader.
import process from 'node:process';
import { URL } from 'node:url';
import '../../dist/polyfill.js';
import { loadConfig } from '../../dist/config/load.js';
import { SvcNode } from '../../dist/node/node.js';

const initial = JSON.parse(process.env.FAULT_BLOCKED ?? '{"peers":[],"urls":[]}');
let blockedPeers = new Set(initial.peers);
let blockedOrigins = new Set(initial.urls.map((u) => new URL(u).origin));

const refused = (peerId) => blockedPeers.has(peerId.toString());
const gater = {
  denyDialPeer: async (peerId) => refused(peerId),
  denyInboundEncryptedConnection: async (peerId) => refused(peerId),
  denyOutboundEncryptedConnection: async (peerId) => refused(peerId),
};

const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (blockedOrigins.has(new URL(url).origin)) {
    const cause = Object.assign(new Error(`connect ECONNREFUSED ${url} (partitioned by the fault harness)`), { code: 'ECONNREFUSED' });
    return Promise.reject(new TypeError('fetch failed', { cause }));
  }
  return realFetch(input, init);
};

/** Set once the node serves; the harness may send a new blocked set while it starts (kept, applied by the gater). */
let node = null;

async function block(peers, urls) {
  blockedPeers = new Set(peers);
  blockedOrigins = new Set(urls.map((u) => new URL(u).origin));
  // The gater refuses new connections; the open ones are closed here, on the libp2p node the mesh host holds (a
  // private field: this composition reaches in, as a test may).
  const libp2p = node?.mesh.p2p?.node;
  if (!libp2p) return;
  for (const conn of libp2p.getConnections()) {
    if (blockedPeers.has(conn.remotePeer.toString())) await conn.close().catch(() => conn.abort(new Error('partitioned')));
  }
}

process.on('message', (msg) => {
  const reply = (body) => process.send?.({ id: msg.id, ...body });
  if (msg.type === 'block') {
    block(msg.peers, msg.urls).then(
      () => reply({ ok: true }),
      (err) => reply({ ok: false, error: String(err) }),
    );
  } else if (msg.type === 'state') {
    if (!node) return reply({ ok: false, error: 'starting' });
    reply({
      ok: true,
      backlogs: { transfers: node.transferDelivery.queued, settlements: node.chargeSettlement.queued },
      counters: Object.fromEntries(['sealed_total', 'charged_total', 'burned_total', 'foundation_total'].map((n) => [n, node.counters.get(n)])),
      connected: node.mesh.p2p?.connectedPeers() ?? [],
    });
  }
});
// The harness ends a node with SIGKILL (a crash) or SIGTERM (the end of a run): SIGTERM stops it cleanly. So does the
// end of the harness's process (its IPC channel closes), however it ended: no node outlives the test that started it.
let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  if (!node) process.exit(0);
  node.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
}
process.on('SIGTERM', stop);
process.once('disconnect', stop);
const config = loadConfig({});
// Quick redials: a restarted or healed peer is found again within a second or two instead of the default 10 s.
const starting = new SvcNode(config, { mesh: { connectionGater: gater, redialMinMs: 100, redialMaxMs: 1_000 } });
await starting.start();
node = starting;
await block([...blockedPeers], [...blockedOrigins]);
process.send?.({ type: 'ready', url: node.url, nodeId: node.nodeId, multiaddrs: node.mesh.multiaddrs() });
