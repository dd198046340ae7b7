// Preloaded (--import) into a built node process under test: on SIGUSR2 it stops hearing svc/consensus/1 on gossipsub
// (every message of the topic is ignored unread), as a node outside the topic's mesh does after a restart or a
// partition. What reaches it then comes over the direct path (consensus/outbox.ts: the opener's challenge and verdict)
// or from its own asks. A fault composed in the test (architecture.md §8), never a flag of the production config.
import process from 'node:process';
import '../../dist/polyfill.js';
import { MeshService } from '../../dist/mesh/service.js';
import { TOPICS } from '../../dist/mesh/wire.js';

let deaf = false;
process.on('SIGUSR2', () => {
  deaf = !deaf;
  process.stdout.write(`${JSON.stringify({ msg: deaf ? 'deaf to consensus gossip' : 'hearing consensus gossip' })}\n`);
});
const proto = MeshService.prototype;
const real = proto.validateGossip;
proto.validateGossip = function (topic, ...rest) {
  if (deaf && topic === TOPICS.consensus) return Promise.resolve('ignore');
  return real.call(this, topic, ...rest);
};
