// A real HTTP receiver on 127.0.0.1 for webhook tests: records every request (headers and raw body) and answers as
// told ('ok' → 200, 'fail' → 500, 'hang' → never).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

export interface Receiver {
  url: string;
  received: Received[];
  mode: 'ok' | 'fail' | 'hang';
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const hanging = new Set<import('node:http').ServerResponse>();
  const r: Receiver = { url: '', received: [], mode: 'ok', close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      r.received.push({ headers: req.headers, body, json: JSON.parse(body) });
      if (r.mode === 'hang') {
        hanging.add(res);
        return;
      }
      res.statusCode = r.mode === 'ok' ? 200 : 500;
      res.end(r.mode === 'ok' ? 'thanks' : 'nope');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  r.close = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return r;
}

export async function until(cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
