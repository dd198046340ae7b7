// The node's HTTP server. Node's parser refuses a malformed request (a header block over its limit, bare LF line
// ends, Content-Length with Transfer-Encoding, two Content-Lengths) with a bare status line and no body; here those
// answers carry the part-7 JSON of every other error, wherever the socket can still take an answer.
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ErrorCode } from '../kernel/errors.js';
import { errorBody } from './errors.js';
import { traceIdSource } from './trace.js';

/** Node's parser error codes → status and part-7 code (the same statuses Node's default handler sends). */
function classifyParseError(code: string | undefined): { status: number; code: ErrorCode; message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'SVC_HEADERS_TOO_LARGE', message: 'the request line and headers are too large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, code: 'SVC_PAYLOAD_TOO_LARGE', message: 'chunk extensions are too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'SVC_REQUEST_TIMEOUT', message: 'the request did not arrive in time' };
    default:
      return { status: 400, code: 'SVC_BAD_REQUEST', message: 'malformed HTTP request' };
  }
}

type InFlight = {
  writableEnded: boolean;
  headersSent: boolean;
  req?: { complete: boolean };
  once(event: 'finish' | 'close', listener: () => void): unknown;
};

/** The response a connection is answering now, if any (Node keeps it on the socket). */
const inFlightOn = (socket: Socket): InFlight | null | undefined => (socket as Socket & { _httpMessage?: InFlight | null })._httpMessage;

/**
 * The clientError handler: a JSON answer, then the socket closes. A malformed request pipelined behind a request still
 * being answered waits for that answer to finish (the earlier request keeps its response). When the error is the
 * request being answered — its body cut short by the client closing its side, or not arriving within the request
 * timeout — that answer can never finish: answered now (Node's own handler does the same), or the socket closed when
 * the response has begun.
 */
export function clientErrorHandler(logger: Logger): (err: Error & { code?: string; reason?: string }, socket: Socket) => void {
  const traceId = traceIdSource();
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const e = classifyParseError(err.code);
    const id = traceId();
    const detail = err.reason ?? err.message;
    const text = JSON.stringify(errorBody(id, e.status, e.code, `${e.message}${detail ? ` (${detail})` : ''}`));
    logger.info({ trace_id: id, status: e.status, code: err.code }, 'malformed request refused');
    const head = [
      `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(text)}`,
      `X-Trace-Id: ${id}`,
      'Connection: close',
    ].join('\r\n');
    let answered = false;
    const answer = (): void => {
      answered = true;
      if (socket.writable) socket.end(`${head}\r\n\r\n${text}`, () => socket.destroy());
      else socket.destroy();
    };
    const current = inFlightOn(socket);
    if (current && !current.writableEnded && current.req?.complete === false) {
      if (current.headersSent) socket.destroy();
      else answer();
      return;
    }
    if (current && !current.writableEnded) {
      current.once('finish', answer);
      current.once('close', () => answered || socket.destroy());
      return;
    }
    answer();
  };
}

export interface HttpServer {
  server: Server;
  /**
   * Stops accepting and resolves when every connection has closed: idle ones at once, those answering a request when
   * their answer is sent; those whose request has not arrived whole (a body still on its way) are closed now, since
   * nothing was done for them yet and a client that stalls would otherwise hold the stop.
   */
  close(): Promise<void>;
}

/**
 * The server for the app's request listener. Node's own Host check is off: it answers with an empty 400 before the
 * app sees the request; the app refuses an HTTP/1.1 request without Host itself, in the part-7 shape (app.ts).
 */
export function createHttpServer(listener: RequestListener, logger: Logger): HttpServer {
  const server = createServer({ requireHostHeader: false }, listener);
  server.on('clientError', clientErrorHandler(logger));
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        for (const socket of sockets) if (inFlightOn(socket)?.req?.complete === false) socket.destroy();
      }),
  };
}
