// The mesh host's libp2p settings that tests can see from outside: the component logger it hands libp2p (libp2p's own
// account of a node's connections, what the mesh simulation reads to follow a dial on both sides), and the inbound
// handshakes it takes at once.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ComponentLogger, Logger } from '@libp2p/interface';
import { ManualClock, TICK_NS } from '../../src/kernel/clock.js';
import { startNode, type TestNode } from './helpers.js';
import { waitUntil } from '../helpers/wait.js';

/** A component logger that keeps every line as "component message", arguments in place of the format's %-tokens. */
function recordingLogger(lines: string[]): ComponentLogger {
  const make = (name: string): Logger => {
    const write = (fmt: unknown, ...args: unknown[]): void => {
      let i = 0;
      lines.push(`${name} ${String(fmt).replace(/%[a-zA-Z]/g, () => String(args[i++]))}`);
    };
    return Object.assign(write, { error: write, trace: () => undefined, enabled: true, newScope: (n: string) => make(`${name}:${n}`) });
  };
  return { forComponent: make };
}

describe('MeshHost libp2p settings', () => {
  const nodes: TestNode[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    for (const n of nodes.splice(0)) await n.stop();
  });

  it("receives libp2p's log of the node's listener and of an inbound connection", async () => {
    const clock = new ManualClock(BigInt(1_900_000_000) * TICK_NS);
    const lines: string[] = [];
    const a = await startNode({ clock, extra: { libp2pLogger: recordingLogger(lines) } });
    nodes.push(a);
    const port = a.mesh.multiaddrs()[0]!.split('/tcp/')[1]!.split('/')[0]!;
    expect(lines.some((l) => l.startsWith('libp2p:tcp:listener listening on'))).toBe(true);
    const b = await startNode({ clock, bootstrap: a.mesh.multiaddrs() });
    nodes.push(b);
    await waitUntil(() => a.mesh.p2p!.isConnected(b.mesh.p2p!.peerId), 'B connected to A');
    // The connection B opened is logged by A's listener and upgraded by A's upgrader; B's dial is B's, not in A's log.
    expect(lines.some((l) => l.startsWith('libp2p:tcp:listener new inbound connection /ip4/127.0.0.1/tcp/'))).toBe(true);
    expect(lines.some((l) => /^libp2p:tcp:connection:inbound:\S+ successfully upgraded inbound connection/.test(l))).toBe(true);
    expect(lines.some((l) => l.includes(`dialing /ip4/127.0.0.1/tcp/${port}`))).toBe(false);
  });

  it("takes more inbound handshakes at once than libp2p's 10: a joiner gets in past 15 that stall", async () => {
    const clock = new ManualClock(BigInt(1_900_000_000) * TICK_NS);
    const lines: string[] = [];
    const a = await startNode({ clock, extra: { libp2pLogger: recordingLogger(lines) } });
    nodes.push(a);
    const port = Number(a.mesh.multiaddrs()[0]!.split('/tcp/')[1]!.split('/')[0]);
    // 15 connections that never say a word: each holds one of A's inbound handshake slots until libp2p's 10-s timeout.
    for (let i = 0; i < 15; i++) sockets.push(connect(port, '127.0.0.1').on('error', () => undefined));
    await waitUntil(() => lines.filter((l) => l.startsWith('libp2p:tcp:listener new inbound connection')).length >= 15, 'A accepted the 15');
    const b = await startNode({ clock, bootstrap: a.mesh.multiaddrs() });
    nodes.push(b);
    // With libp2p's 10 B's first dial is refused, and so is every retry until the stalled ones time out (10 s).
    await waitUntil(() => b.mesh.p2p!.isConnected(a.mesh.p2p!.peerId), 'B connected to A', 3_000);
    expect(lines.some((l) => l.includes('refused - incomingPendingConnections exceeded'))).toBe(false);
  });
});
