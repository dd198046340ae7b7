// A language-model provider in the test process: an HTTP server on 127.0.0.1 whose answers a test scripts (OpenAI
// chat completions or Anthropic messages), recording every request it gets and counting those whose client left
// before their answer.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export type FakeAnswer = { status?: number; body: unknown };
/** An answer, or a promise of one: a turn that is still thinking while the test does something else. */
export type FakeHandler = (req: FakeRequest) => FakeAnswer | Promise<FakeAnswer>;

export interface FakeProvider {
  url: string;
  requests: FakeRequest[];
  /** Requests whose connection closed before their answer was sent (the node gave up on them). */
  left: number;
  handle: FakeHandler;
  close(): Promise<void>;
}

export async function startFakeProvider(handle: FakeHandler): Promise<FakeProvider> {
  const fake: FakeProvider = { url: '', requests: [], left: 0, handle, close: () => Promise.resolve() };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    res.once('close', () => {
      if (!res.writableFinished) fake.left++;
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: FakeRequest = { path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') };
      fake.requests.push(request);
      void (async () => {
        let answer: FakeAnswer;
        try {
          answer = await fake.handle(request);
        } catch (err) {
          answer = { status: 500, body: { error: { message: String(err) } } };
        }
        if (res.destroyed) return;
        res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () => new Promise<void>((r) => server.close(() => r()));
  return fake;
}

/** The last user message's text (OpenAI or Anthropic request). */
export function lastUserText(body: any): string {
  const users = (body.messages as any[]).filter((m) => m.role === 'user' && typeof m.content === 'string');
  return users.at(-1)?.content ?? '';
}

/** An OpenAI chat-completions answer. */
export function openAiAnswer(content: string | null, toolCalls: { id: string; name: string; args: unknown }[] = []): unknown {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        finish_reason: toolCalls.length ? 'tool_calls' : 'stop',
        message: {
          role: 'assistant',
          content,
          ...(toolCalls.length
            ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) }
            : {}),
        },
      },
    ],
  };
}

/** An Anthropic messages answer. */
export function anthropicAnswer(text: string | null, toolUses: { id: string; name: string; input: unknown }[] = []): unknown {
  return {
    id: 'msg_test',
    type: 'message',
    role: 'assistant',
    stop_reason: toolUses.length ? 'tool_use' : 'end_turn',
    content: [...(text ? [{ type: 'text', text }] : []), ...toolUses.map((u) => ({ type: 'tool_use', id: u.id, name: u.name, input: u.input }))],
  };
}
