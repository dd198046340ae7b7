// An in-memory byte stream for tests of the stream protocols (no libp2p).

/** An async queue of byte chunks: one direction of a stream pair. */
export class Pipe implements AsyncIterable<{ subarray(): Uint8Array }> {
  private readonly chunks: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private done: Error | true | null = null;
  push(c: Uint8Array): void {
    this.chunks.push(c);
    this.wake?.();
  }
  end(err?: Error): void {
    this.done = err ?? true;
    this.wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<{ subarray(): Uint8Array }> {
    for (;;) {
      while (this.chunks.length > 0) yield this.chunks.shift()!;
      if (this.done instanceof Error) throw this.done;
      if (this.done) return;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = null;
    }
  }
}
