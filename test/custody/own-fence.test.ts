// A home taking its identity again (failover.ts retake) fences its own replicator before it promises itself the new
// epoch: its own signature counts in its majority, so one custodian that has not promised would otherwise certify a
// write of the old epoch after the promise, and the chain the retake takes, ending on the head the promise showed,
// would leave out an acknowledged write. A write open when the fence comes fails, the next ones are refused, and a
// restarted home reads the fence from the promise it kept. Composed in-process: the home's replicator and the
// custodians X and Y on their own stores, the home's link to them made in the test.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { custodyRequest, type SendBatch } from '../../src/custody/client.js';
import type { Custodian } from '../../src/custody/custodian.js';
import { DebitCertificates } from '../../src/custody/debit-certificate.js';
import { LedgerOpsReader } from '../../src/custody/ledger-ops.js';
import type { CustodyAnswer } from '../../src/custody/protocol.js';
import { Replicator } from '../../src/custody/replicator.js';
import { ServiceError } from '../../src/kernel/errors.js';
import { signText, verifyText } from '../../src/mesh/wire.js';
import { composedCustodian, composedSet, type ComposedNode } from '../helpers/composed-custodian.js';

const SECRET = 'own-fence-secret-0123456789abcdef';
const zid = 'zid_3456789abcdef0123456789abcdef012';
const NOW = 1000;

let dir: string;
let nodes: ComposedNode[];
let home: ComposedNode;
let x: ComposedNode;
let custodians: Map<string, Custodian>;
/** Requests to X wait until the test lets them through (`release`); Y is cut off. */
let held: boolean;
let release: () => void;
let released: Promise<void>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-own-fence-'));
  ({
    nodes,
    inSetOrder: [home, x],
  } = await composedSet(dir, zid));
  custodians = new Map(nodes.map((n) => [n.id, composedCustodian(n, { home: () => home.id, members, secret: SECRET, now: NOW })]));
  held = false;
  released = new Promise((resolve) => (release = resolve));
});

afterEach(async () => {
  await Promise.all(nodes.map((n) => n.store.close()));
  await rm(dir, { recursive: true, force: true });
});

const members = () => nodes.map((n) => n.id);

const homeSend: SendBatch = async (node, entries, records) => {
  if (node !== x.id) throw new Error('cut off');
  if (held) await released;
  return (await custodians.get(x.id)!.answer(custodyRequest(SECRET, home.id, NOW, entries, records), home.id)) as CustodyAnswer;
};

/** The home's replicator on its store (a restart: another one), with the epoch it promised itself. */
function homeReplicator(ownPromise: number): Replicator {
  const r = new Replicator({
    store: home.store,
    reader: new LedgerOpsReader(home.store),
    nodeId: () => home.id,
    replicas: 3,
    members,
    send: homeSend,
    verify: verifyText,
    sign: (text) => signText(home.key, text),
    certificates: new DebitCertificates(home.store),
    timeoutMs: 5000,
    ownPromise: () => Promise.resolve(ownPromise),
  });
  home.store.gate = r;
  return r;
}

function write(free: number, of = zid): Promise<void> {
  return home.store.commit([{ type: 'put', sub: home.store.sub('wallets', 'json', { rewritten: true }), key: of, value: { free, paid: 0 } }]);
}

async function refusal(w: Promise<void>): Promise<string> {
  const err = await w.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  expect((err as ServiceError).code).toBe('SVC_CUSTODY_UNAVAILABLE');
  return (err as ServiceError).message;
}

describe('a home that takes its identity again', () => {
  it('certifies none of its entries of the old epoch once it fenced itself', async () => {
    const replicator = homeReplicator(0);
    await write(10);
    expect((await replicator.certifiedHead(zid))?.seq).toBe(1);
    // A write in flight to X when the retake of epoch 2 begins: it fails, though X then signs it.
    held = true;
    const open = write(7);
    await new Promise((r) => setTimeout(r, 20));
    replicator.fence(zid, 2);
    release();
    expect(await refusal(open)).toContain('taking the identity again');
    expect(await refusal(write(5))).toContain('taking the identity again');
    expect((await replicator.certifiedHead(zid))?.seq).toBe(1);
    expect(await home.store.get(home.store.sub('wallets', 'json', { rewritten: true }), zid)).toEqual({ free: 10, paid: 0 });
  });

  it('is quiet once every refused write has reached its caller, even one waiting behind another identity’s write', async () => {
    const replicator = homeReplicator(0);
    const other = 'zid_9abcdef0123456789abcdef012345678';
    await write(10);
    await write(10, other);
    // The other identity's write is held first (X's answer waits), then this identity's: its refusal waits behind it.
    held = true;
    const first = write(9, other);
    await new Promise((r) => setTimeout(r, 20));
    let rolledBack = false;
    const refused = write(7).catch(() => {
      rolledBack = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    replicator.fence(zid, 2);
    let quiet = false;
    const quieted = replicator.quiet(zid).then(() => (quiet = true));
    await new Promise((r) => setTimeout(r, 100));
    expect([quiet, rolledBack]).toEqual([false, false]);
    release();
    await quieted;
    expect(rolledBack).toBe(true);
    await Promise.all([first, refused]);
  });

  it('reads the fence again after a restart from the promise it kept, and writes once its head is of that epoch', async () => {
    homeReplicator(0);
    await write(10);
    const restarted = homeReplicator(2);
    expect(await refusal(write(7))).toContain('taking the identity again');
    expect((await restarted.certifiedHead(zid))?.seq).toBe(1);
    // Without a promise of a later epoch, the same store writes on.
    homeReplicator(0);
    await write(7);
    expect(await home.store.get(home.store.sub('wallets', 'json', { rewritten: true }), zid)).toEqual({ free: 7, paid: 0 });
  });
});
