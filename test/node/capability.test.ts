// The node's capabilities (src/node/capability.ts): listeners are registered before anything starts, capabilities
// start in list order and stop last-started first; one tick loop runs each ticker at its own rate.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BEATS_PER_TICK, beatsOf, Capabilities, Port, TickLoop, type Capability, type Listeners } from '../../src/node/capability.js';
import { TICK_MS } from '../../src/util/time.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const noListeners: Listeners = { gossip: () => undefined, stream: () => undefined };

describe('the tick loop', () => {
  it('runs a ticker every N ticks and a per-tick ticker at its rate, from one beat counter', () => {
    let beat = 0;
    const at: Record<string, number[]> = { tick: [], three: [], pump: [] };
    const loop = new TickLoop([
      { name: 'each tick', run: () => at.tick!.push(beat) },
      { name: 'every 3', everyTicks: 3, run: () => at.three!.push(beat) },
      { name: 'pump', perTick: 4, run: () => at.pump!.push(beat) },
    ]);
    for (beat = 1; beat <= 3 * BEATS_PER_TICK; beat++) loop.beat();
    expect(at.pump).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    // A ticker of N ticks first runs N ticks after the start.
    expect(at.tick).toEqual([4, 8, 12]);
    expect(at.three).toEqual([12]);
  });

  it('a ticker that throws or rejects is dropped for that beat; the others still run', async () => {
    let ran = 0;
    const loop = new TickLoop([
      {
        name: 'throws',
        run: () => {
          throw new Error('sync');
        },
      },
      { name: 'rejects', run: () => Promise.reject(new Error('async')) },
      { name: 'counts', run: () => ran++ },
    ]);
    for (let i = 0; i < BEATS_PER_TICK; i++) loop.beat();
    await Promise.resolve();
    expect(ran).toBe(1);
  });

  it('beats are a quarter tick: every N ticks is 4N beats, 4 a tick is every beat; other rates are refused', () => {
    expect(beatsOf({ name: 'a', run: () => undefined })).toBe(BEATS_PER_TICK);
    expect(beatsOf({ name: 'b', everyTicks: 64, run: () => undefined })).toBe(64 * BEATS_PER_TICK);
    expect(beatsOf({ name: 'c', perTick: 4, run: () => undefined })).toBe(1);
    expect(beatsOf({ name: 'd', perTick: 2, run: () => undefined })).toBe(2);
    expect(() => beatsOf({ name: 'e', perTick: 3, run: () => undefined })).toThrow(/e:/);
    expect(() => beatsOf({ name: 'f', everyTicks: 0.5, run: () => undefined })).toThrow(/f:/);
  });

  it('one unref’d timer at a quarter tick drives every ticker; stop clears it', () => {
    vi.useFakeTimers();
    const setSpy = vi.spyOn(globalThis, 'setInterval');
    const runs = { a: 0, b: 0 };
    const loop = new TickLoop([
      { name: 'a', run: () => runs.a++ },
      { name: 'b', everyTicks: 2, run: () => runs.b++ },
    ]);
    loop.start();
    loop.start();
    expect(setSpy).toHaveBeenCalledTimes(1);
    expect(setSpy.mock.calls[0]![1]).toBeCloseTo(TICK_MS / BEATS_PER_TICK);
    const timer = setSpy.mock.results[0]!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    vi.advanceTimersByTime(TICK_MS * 4 + 1);
    expect(runs).toEqual({ a: 4, b: 2 });
    loop.stop();
    vi.advanceTimersByTime(TICK_MS * 4);
    expect(runs).toEqual({ a: 4, b: 2 });
  });
});

describe('capabilities', () => {
  const recorder = () => {
    const log: string[] = [];
    const cap = (name: string, extra: Partial<Capability> = {}): Capability => ({
      name,
      start: () => void log.push(`start ${name}`),
      stop: async () => {
        await Promise.resolve();
        log.push(`stop ${name}`);
      },
      ...extra,
    });
    return { log, cap };
  };

  it('registers every gossip row and stream protocol before the first start, then starts in list order', async () => {
    const { log, cap } = recorder();
    const listeners: Listeners = {
      gossip: (row) => void log.push(`row ${row.type}`),
      stream: (p) => void log.push(`protocol ${p.protocol}`),
    };
    const row = { type: 'x.event', body: { parse: (b: unknown) => b } as never, handle: () => undefined };
    const list = new Capabilities([
      cap('store'),
      cap('mesh'),
      cap('consensus', { gossip: [row], streams: [{ protocol: '/svc/exec/1.0.0', handle: () => undefined }] }),
    ]);
    await list.start(listeners);
    expect(log).toEqual(['row x.event', 'protocol /svc/exec/1.0.0', 'start store', 'start mesh', 'start consensus']);
    await list.stop();
  });

  it('stops in reverse start order, each stop awaited before the next, once', async () => {
    const { log, cap } = recorder();
    const list = new Capabilities([cap('store'), { name: 'no hooks' }, cap('mesh'), cap('http')]);
    await list.start(noListeners);
    log.length = 0;
    await list.stop();
    expect(log).toEqual(['stop http', 'stop mesh', 'stop store']);
    await list.stop();
    expect(log).toHaveLength(3);
  });

  it('a start that fails leaves the capabilities started so far (and the failed one) to stop', async () => {
    const { log, cap } = recorder();
    const failing = cap('mesh', { start: () => Promise.reject(new Error('port in use')) });
    const list = new Capabilities([cap('store'), failing, cap('http')]);
    await expect(list.start(noListeners)).rejects.toThrow('port in use');
    await list.stop();
    expect(log).toEqual(['start store', 'stop mesh', 'stop store']);
  });

  it('the tick loop stops before the first capability stops', async () => {
    vi.useFakeTimers();
    let ticks = 0;
    let ticksAtStop = -1;
    const list = new Capabilities([{ name: 'ticks', tickers: [{ name: 't', run: () => ticks++ }], stop: () => void (ticksAtStop = ticks) }]);
    await list.start(noListeners);
    vi.advanceTimersByTime(TICK_MS * 2 + 1);
    const stopping = list.stop();
    vi.advanceTimersByTime(TICK_MS * 2);
    await stopping;
    expect(ticks).toBe(2);
    expect(ticksAtStop).toBe(2);
  });
});

describe('ports', () => {
  it('read undefined until bound, the bound value after; bound once', () => {
    const port = new Port<() => number>('answer');
    expect(port.get()).toBeUndefined();
    port.bind(() => 42);
    expect(port.get()?.()).toBe(42);
    expect(() => port.bind(() => 0)).toThrow(/answer/);
  });
});
