// An EventSource-style client over a real HTTP connection (fetch): parses the event stream as the WHATWG spec says
// (event, id, data, retry fields; comment lines), keeps the last event id, and reconnects only when asked, sending
// Last-Event-ID like a browser's EventSource does after a drop.

export interface SseEvent {
  type: string;
  id: string;
  data: string;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  lastEventId = '';
  status = 0;
  private readonly abort = new AbortController();
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  /** Connect; resolves once the response head is in (status set). */
  async connect(lastEventId?: string): Promise<this> {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...this.headers };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const res = await fetch(this.url, { headers, signal: this.abort.signal });
    this.status = res.status;
    if (!res.body) return this;
    const reader = res.body.getReader();
    this.done = this.read(reader).catch(() => undefined);
    return this;
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    let type = '';
    let id: string | null = null;
    let data: string[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\n|\r/)) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (id !== null) this.lastEventId = id;
          if (data.length > 0) this.events.push({ type: type || 'message', id: this.lastEventId, data: data.join('\n') });
          type = '';
          id = null;
          data = [];
          continue;
        }
        if (line.startsWith(':')) {
          this.comments++;
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const v = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') type = v;
        else if (field === 'data') data.push(v);
        else if (field === 'id' && !v.includes('\0')) id = v;
      }
    }
  }

  /** The events' data parsed as JSON. */
  json<T = any>(): T[] {
    return this.events.map((e) => JSON.parse(e.data) as T);
  }

  /** Resolves when the server ends the stream (or close() does). */
  ended(): Promise<void> {
    return this.done;
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.done;
  }
}
