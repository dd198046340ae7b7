// Who listens to which channel, and the push of each sealed tick (spec 4.5, WS /ws/stream). A subscriber is anything
// that can send a frame and tell how much it has not sent yet (a WebSocket); the transport is the http layer's.
// Backpressure: a subscriber whose unsent bytes exceed `maxBufferedBytes` is dropped, never buffered without bound.

export interface Subscriber {
  send(data: Buffer): void;
  /** Bytes queued and not yet written to the network. */
  readonly bufferedAmount: number;
  /**
   * Close the subscriber: cut off when slow or failing (no `code`), or told with a close code when the channel or the
   * node goes (1000 the channel closed, 1001 the node stopping).
   */
  drop(reason: string, code?: 1000 | 1001): void;
}

export interface HubOptions {
  /** Unsent bytes past which a subscriber is dropped. */
  maxBufferedBytes: number;
  /** Subscribers one channel may have. */
  maxPerChannel: number;
}

export const HUB_DEFAULTS: HubOptions = { maxBufferedBytes: 1024 * 1024, maxPerChannel: 10_000 };

export class StreamHub {
  private readonly channels = new Map<string, Set<Subscriber>>();
  /** Subscribers dropped for being slow (status, tests). */
  dropped = 0;

  constructor(private readonly options: HubOptions = HUB_DEFAULTS) {}

  /** Add a subscriber; false when the channel is full. */
  add(channelId: string, s: Subscriber): boolean {
    let set = this.channels.get(channelId);
    if (!set) this.channels.set(channelId, (set = new Set()));
    if (set.size >= this.options.maxPerChannel) return false;
    set.add(s);
    return true;
  }

  remove(channelId: string, s: Subscriber): void {
    const set = this.channels.get(channelId);
    if (!set) return;
    set.delete(s);
    if (set.size === 0) this.channels.delete(channelId);
  }

  count(channelId?: string): number {
    if (channelId !== undefined) return this.channels.get(channelId)?.size ?? 0;
    let n = 0;
    for (const set of this.channels.values()) n += set.size;
    return n;
  }

  /** Send a frame to every subscriber of the channel; drop those that cannot keep up. */
  publish(channelId: string, frame: Buffer): void {
    const set = this.channels.get(channelId);
    if (!set) return;
    for (const s of [...set]) {
      if (s.bufferedAmount + frame.length > this.options.maxBufferedBytes) {
        this.remove(channelId, s);
        this.dropped++;
        s.drop('slow consumer');
        continue;
      }
      try {
        s.send(frame);
      } catch {
        // A subscriber that cannot take a frame is dropped; the tick is sealed whatever its listeners do.
        this.remove(channelId, s);
        s.drop('send failed');
      }
    }
  }

  /** Close every subscriber of a channel (it was closed: 1000; the node is stopping: 1001). */
  closeChannel(channelId: string, reason: string, code: 1000 | 1001 = 1000): void {
    const set = this.channels.get(channelId);
    if (!set) return;
    this.channels.delete(channelId);
    for (const s of set) s.drop(reason, code);
  }

  closeAll(reason: string): void {
    for (const id of [...this.channels.keys()]) this.closeChannel(id, reason, 1001);
  }
}
