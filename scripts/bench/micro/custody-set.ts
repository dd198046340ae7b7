// What a ledger write pays for its identity's custody set on a node with custody on (R ≥ 2): Replicator.setOf, kept
// while the members' view is the same list, against computing it every write (a SHA-256 of zid | peer id per member,
// then a sort). One line per mesh size (3, 100 and 1000 members); the identities cycle over `--identities` zids (4096:
// the sets kept), as writes of many identities do. A second line per size has the members change every
// `--writes-per-change` writes (64), a member joining or leaving each time, as on a mesh with churn: the set kept is
// shifted by the change (a SHA-256 per member that joined), against ranking every member again.
// Usage: npx tsx scripts/bench/micro/custody-set.ts [--identities 4096] [--writes-per-change 64] [--fresh-cpu-us N]
import { custodySetOf } from '../../../src/custody/custody-set.js';
import { LedgerOpsReader } from '../../../src/custody/ledger-ops.js';
import { DebitCertificates } from '../../../src/custody/debit-certificate.js';
import { Replicator } from '../../../src/custody/replicator.js';
import { Store } from '../../../src/store/db.js';
import { numberArg } from '../lib.js';
import { compare, report } from './lib.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const identities = numberArg('identities', 4096);
const writesPerChange = numberArg('writes-per-change', 64);
const zids = Array.from({ length: identities }, (_, i) => `zid_${i.toString(16).padStart(32, '0')}`);
// Peer ids as the members list holds them (only their text is hashed).
const self = `12D3KooW${'S'.repeat(44)}`;
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-custody-set-'));
const store = await Store.open(dir, { sync: false });
/** A home's replicator (no mesh: sets only) over the members `members` reads. */
const replicatorOver = (members: () => string[]) =>
  new Replicator({
    store,
    reader: new LedgerOpsReader(store),
    nodeId: () => self,
    replicas: 3,
    members,
    send: null,
    verify: () => false,
    sign: () => '',
    certificates: new DebitCertificates(store),
    timeoutMs: 5000,
  });
try {
  for (const size of [3, 100, 1000]) {
    const members = [self, ...Array.from({ length: size - 1 }, (_, i) => `12D3KooW${i.toString(36).padStart(44, 'A')}`)];
    const replicator = replicatorOver(() => members);
    // Every identity's set computed once, as the writes before the measured ones would have.
    for (const zid of zids) replicator.setOf(zid);
    let i = 0;
    let j = 0;
    const iterations = size >= 1000 ? 200 : 4000;
    // The members change every writesPerChange writes: a new node joins, and the one that joined before leaves.
    let current = members;
    let changes = 0;
    const churn = (writes: number) => {
      if (writes % writesPerChange !== 0) return;
      changes++;
      current = changes % 2 === 1 ? [...members, `12D3KooW${`J${changes}`.padStart(44, 'B')}`] : members.slice();
    };
    const churned = replicatorOver(() => current);
    for (const zid of zids) churned.setOf(zid);
    let k = 0;
    let l = 0;
    report(
      `custody-set-${size}-churn`,
      compare(
        () => (churn(++k), churned.setOf(zids[k % zids.length]!)),
        () => (churn(++l), custodySetOf(zids[l % zids.length]!, self, current, 3)),
        { iterations, rounds: 9 },
      ),
      {
        optimised: 'Replicator.setOf, the set kept shifted by the change of the members',
        plain: 'custodySetOf every write',
        members: size,
        writesPerChange,
        perFreshSeal: 1,
        where: 'main thread, each ledger write of a node whose custody sets have other members, on a mesh with churn',
      },
    );
    report(
      `custody-set-${size}`,
      compare(
        () => replicator.setOf(zids[i++ % zids.length]!),
        () => custodySetOf(zids[j++ % zids.length]!, self, members, 3),
        { iterations, rounds: 9 },
      ),
      {
        optimised: 'Replicator.setOf, kept while the members are the same list',
        plain: 'custodySetOf every write',
        members: size,
        perFreshSeal: 1,
        where: 'main thread, each ledger write of a node whose custody sets have other members',
      },
    );
  }
} finally {
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
