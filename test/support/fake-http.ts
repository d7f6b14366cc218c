import type http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The HTTP plumbing every fake platform server in test/support shares: JSON answers, request bodies, listening on a
 * free loopback port and closing with every connection (a test never leaves a socket open).
 */
export function replyJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

export async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Listen on 127.0.0.1 at a free port; returns `http://127.0.0.1:<port>`. */
export async function listenOnLoopback(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** A failure a fake platform server answers with instead of the real thing: its status and, for 429, the wait. */
export interface InjectedFailure {
  status: number;
  retryAfterS: number;
}

/**
 * Failures a test injects into a fake platform server (`fail(…)`): the next `count` matching requests — by API method,
 * or any with `*` — answer `status`. Each platform shapes its own error body from what `take` returns.
 */
export class FailureQueue {
  private readonly queue: { method: string; remaining: number; failure: InjectedFailure }[] = [];

  add(count: number, status: number, retryAfterS = 1, method = '*'): void {
    this.queue.push({ method, remaining: count, failure: { status, retryAfterS } });
  }

  /** The failure due for a request to `method` (one of its count used), or undefined. */
  take(method = '*'): InjectedFailure | undefined {
    const entry = this.queue.find((f) => (f.method === '*' || f.method === method) && f.remaining > 0);
    if (!entry) return undefined;
    entry.remaining -= 1;
    return entry.failure;
  }
}
