// The placement rule of consensus/offload.ts (pure parts, no network): which peer a request goes to under each
// policy, the rendezvous tie-break, skipping a failed peer, and the frames of /svc/exec/1.0.0.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { Offloader, rendezvous, type OffloadPeer, type OffloadPolicy } from '../../src/consensus/offload.js';
import { encodeFrame, FrameError, readFrame } from '../../src/consensus/exec-protocol.js';

const DIGEST = 'ab'.repeat(32);
const peer = (id: string, over: Partial<OffloadPeer> = {}): OffloadPeer => ({
  peerId: id,
  mode: 'contributing',
  bondId: `bond_${id}`,
  freeSlots: 1,
  connected: true,
  ...over,
});

function offloader(policy: OffloadPolicy, peers: OffloadPeer[], opts: { free?: number; bonds?: Record<string, string | null>; now?: () => number } = {}) {
  return new Offloader({
    policy,
    selfId: () => 'self',
    peers: () => peers,
    bondOf: (n) => (opts.bonds && n in opts.bonds ? opts.bonds[n]! : `bond_${n}`),
    freeSlots: () => opts.free ?? 1,
    meshSecret: 's',
    open: () => Promise.reject(new Error('unreachable in this test')),
    verify: () => false,
    skipPeerMs: 1000,
    ...(opts.now ? { now: opts.now } : {}),
  });
}

describe('choosing the executor', () => {
  it('never: no peer, whatever is offered', () => {
    expect(offloader('never', [peer('p1', { freeSlots: 8 })]).choose(DIGEST)).toBeNull();
  });

  it('always: the contributing peer with the most free slots', () => {
    const o = offloader('always', [peer('p1', { freeSlots: 1 }), peer('p2', { freeSlots: 3 }), peer('p3', { freeSlots: 2 })]);
    expect(o.choose(DIGEST)?.peerId).toBe('p2');
  });

  it('ties go to the highest SHA-256(request digest | peer id), so different requests spread over equal peers', () => {
    const ids = ['p1', 'p2', 'p3', 'p4'];
    const o = offloader(
      'always',
      ids.map((id) => peer(id)),
    );
    const chosen = new Set<string>();
    for (let i = 0; i < 64; i++) {
      const digest = createHash('sha256').update(String(i)).digest('hex');
      const expected = [...ids].sort((x, y) => (rendezvous(digest, y) > rendezvous(digest, x) ? 1 : -1))[0];
      expect(o.choose(digest)?.peerId).toBe(expected);
      chosen.add(o.choose(digest)!.peerId);
    }
    expect(chosen.size).toBe(4);
    expect(rendezvous(DIGEST, 'p1')).toBe(createHash('sha256').update(`${DIGEST}|p1`).digest('hex'));
  });

  it('only contributing, connected peers whose advertised bond the registry confirms, never itself', () => {
    const o = offloader(
      'always',
      [
        peer('self', { freeSlots: 9 }),
        peer('idle', { mode: 'idle', freeSlots: 9 }),
        peer('away', { connected: false, freeSlots: 9 }),
        peer('nobond', { bondId: null, freeSlots: 9 }),
        peer('forged', { bondId: 'bond_other', freeSlots: 9 }),
        peer('released', { freeSlots: 9 }),
        peer('ok', { freeSlots: 0 }),
      ],
      { bonds: { released: null } },
    );
    expect(o.choose(DIGEST)?.peerId).toBe('ok');
  });

  it('when-busy: none while this node has a free slot; then only peers with a free slot', () => {
    expect(offloader('when-busy', [peer('p1', { freeSlots: 4 })], { free: 1 }).choose(DIGEST)).toBeNull();
    expect(offloader('when-busy', [peer('p1', { freeSlots: 4 })], { free: 0 }).choose(DIGEST)?.peerId).toBe('p1');
    expect(offloader('when-busy', [peer('p1', { freeSlots: 0 })], { free: 0 }).choose(DIGEST)).toBeNull();
  });

  it('a peer that failed is skipped for skipPeerMs, then chosen again', async () => {
    let now = 1_000;
    const o = offloader('always', [peer('p1', { freeSlots: 4 }), peer('p2', { freeSlots: 1 })], { now: () => now });
    // The first placement fails (the peer cannot be reached): counted, skipped, and the run is left to the home.
    expect(await o.offload({ solverId: 'zeta', inputs: {}, requestDigest: DIGEST, svcond: 1, timeLimitSeconds: 1 })).toBeNull();
    expect(o.stats.unreachable).toBe(1);
    expect(o.isSkipped('p1')).toBe(true);
    expect(o.choose(DIGEST)?.peerId).toBe('p2');
    now += 1_001;
    expect(o.isSkipped('p1')).toBe(false);
    expect(o.choose(DIGEST)?.peerId).toBe('p1');
  });
});

describe('frames of /svc/exec/1.0.0', () => {
  const source = (...chunks: Uint8Array[]) =>
    (async function* () {
      // Chunks as libp2p hands them (Uint8ArrayList): read through subarray().
      for (const c of chunks) yield { subarray: () => c };
    })();

  it('varint length + canonical JSON, read back whole from any split', async () => {
    const value = { b: 'é'.repeat(100), a: [1, 2.5, null] };
    const frame = encodeFrame(value);
    // 300 bytes of JSON need a two-byte varint: 300 = 0b10_0101100 → 0xac 0x02.
    const text = Buffer.from('{"a":[1,2.5,null],"b":"' + 'é'.repeat(100) + '"}', 'utf8');
    expect(frame.subarray(0, 2)).toEqual(Uint8Array.from([(text.length & 0x7f) | 0x80, text.length >> 7]));
    expect(Buffer.from(frame.subarray(2)).equals(text)).toBe(true);
    for (const cut of [1, 2, 3, 50, frame.length - 1]) {
      expect(await readFrame(source(frame.subarray(0, cut), frame.subarray(cut)), 1 << 20)).toEqual(value);
    }
  });

  it('refuses a frame over the limit, a truncated stream and text that is not JSON', async () => {
    const frame = encodeFrame({ x: 'y'.repeat(1000) });
    await expect(readFrame(source(frame), 100)).rejects.toBeInstanceOf(FrameError);
    await expect(readFrame(source(frame.subarray(0, 10)), 1 << 20)).rejects.toThrow(/ended before/);
    await expect(readFrame(source(Uint8Array.from([3, 0x7b, 0x7b, 0x7b])), 100)).rejects.toThrow(/not JSON/);
    await expect(readFrame(source(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), 100)).rejects.toBeInstanceOf(FrameError);
  });
});
