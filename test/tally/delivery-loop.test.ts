// The shared delivery loop (tally/delivery-loop.ts) beyond what the transfers' tests cover: an item is first due after
// the source's first delay, unless nudged (soon), and an answered item is not sent again.
import { describe, expect, it } from 'vitest';
import { DeliveryLoop, type DeliveryLogger, type Sender } from '../../src/tally/delivery-loop.js';
import { waitUntil } from '../helpers/wait.js';

interface Item {
  id: string;
  home: string;
  attempts: number;
  done: boolean;
}

function loopOver(
  items: Item[],
  firstDelayMs: number,
  send: Sender<{ id: string }, { id: string }>,
  logger: DeliveryLogger = { info: () => undefined, warn: () => undefined },
) {
  const byId = new Map(items.map((i) => [i.id, i]));
  return new DeliveryLoop<Item, { id: string }, { id: string }>({
    source: {
      onPending: () => undefined,
      pending: async () => items.filter((i) => !i.done),
      loadMany: async (ids) => ids.map((id) => byId.get(id)),
      settle: async (outcomes) => {
        for (const o of outcomes) {
          const i = byId.get(o.id)!;
          i.attempts = o.attempts;
          if (o.ack) i.done = true;
        }
      },
      idOf: (i) => i.id,
      homeOf: (i) => i.home,
      isPending: (i) => !i.done,
      attemptsOf: (i) => i.attempts,
      urlHint: () => 'http://127.0.0.1:1',
      deliveryOf: (i) => ({ id: i.id }),
    },
    send,
    peerUrl: () => null,
    logger,
    what: 'test item',
    idField: 'item_id',
    maxBatch: 8,
    firstDelayMs,
  });
}

describe('the delivery loop', () => {
  it('waits its first delay, goes at once when nudged, and sends an answered item once', async () => {
    const sent: string[][] = [];
    const items: Item[] = [
      { id: 'a', home: 'h', attempts: 0, done: false },
      { id: 'b', home: 'h', attempts: 0, done: false },
    ];
    const loop = loopOver(items, 60_000, async (_home, _url, ds) => {
      sent.push(ds.map((d) => d.id));
      return ds.map((d) => ({ ack: { id: d.id } }));
    });
    expect(await loop.start()).toBe(2);
    await new Promise((r) => setTimeout(r, 50));
    expect(sent).toEqual([]);
    loop.soon('a', 'h');
    const end = Date.now() + 5_000;
    while (!items[0]!.done && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    expect(sent).toEqual([['a']]);
    expect(items[1]!.done).toBe(false);
    loop.soon('a', 'h');
    await new Promise((r) => setTimeout(r, 50));
    expect(sent).toEqual([['a']]);
    expect(loop.queued).toBe(1);
    await loop.stop();
  });

  it('names a failed item in its warning by the id field of its kind', async () => {
    const warned: object[] = [];
    const items: Item[] = [{ id: 'x', home: 'h', attempts: 0, done: false }];
    const loop = loopOver(items, 0, async (_home, _url, ds) => ds.map(() => ({ error: 'refused' })), {
      info: () => undefined,
      warn: (o) => warned.push(o),
    });
    await loop.start();
    await waitUntil(() => warned.length > 0, 'a warning');
    expect(warned[0]).toMatchObject({ item_id: 'x', err: 'refused' });
    expect(warned[0]).not.toHaveProperty('id');
    await loop.stop();
  });

  it('sends again an item made due while a request held it, when that request left it out', async () => {
    // A and B go in one request to H; A was answered meanwhile (its request leaves it out), then is pending again (a
    // home that takes the identity over writes its outbox again) and made due while the request for B is under way.
    const items: Item[] = [
      { id: 'a', home: 'h', attempts: 0, done: false },
      { id: 'b', home: 'h', attempts: 0, done: false },
    ];
    const sent: string[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const loop = loopOver(items, 0, async (_home, _url, ds) => {
      sent.push(ds.map((d) => d.id));
      if (sent.length === 1) await gate;
      return ds.map((d) => ({ ack: { id: d.id } }));
    });
    await loop.start();
    items[0]!.done = true;
    await waitUntil(async () => sent.length === 1, 'the first request', 5_000, 5);
    expect(sent).toEqual([['b']]);
    items[0]!.done = false;
    loop.soon('a', 'h');
    release();
    await waitUntil(async () => items[0]!.done, 'A sent again', 5_000, 5);
    expect(sent).toEqual([['b'], ['a']]);
    expect(loop.queued).toBe(0);
    await loop.stop();
  });
});
