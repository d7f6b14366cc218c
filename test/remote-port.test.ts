import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteSessionPort } from '../src/host/session/remote-port.js';
import { EPOCH_HEADER } from '../src/host/session/serve-protocol.js';

/**
 * The session port's HTTP client over kept-alive connections: a connection the session process dropped while it was
 * idle is retried once on a fresh one; a fresh connection that fails is `unavailable`, and another epoch is `fenced`.
 */
const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse, connection: number) => void): Promise<string> {
  let connections = 0;
  const server = http.createServer();
  server.on('connection', (socket) => ((socket as unknown as { n: number }).n = ++connections));
  server.on('request', (req, res) => handler(req, res, (req.socket as unknown as { n: number }).n));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const port = (url: string, epoch = 1) => new RemoteSessionPort({ sessionId: 's-1', url, token: 'tok', epoch, filesDir: os.tmpdir() });

describe('RemoteSessionPort', () => {
  it('retries once on a fresh connection when a kept-alive one was dropped', async () => {
    const seen: number[] = [];
    const url = await serve((req, res, connection) => {
      seen.push(connection);
      // the second request on the first connection: the process dropped it (as an idle timeout races a new call)
      if (connection === 1 && seen.filter((c) => c === 1).length === 2) return req.socket.destroy();
      res.setHeader(EPOCH_HEADER, '1');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ result: ['line'] }));
    });
    const remote = port(url);
    expect(await remote.logTail(1)).toEqual(['line']);
    expect(await remote.logTail(1)).toEqual(['line']);
    expect(seen).toEqual([1, 1, 2]);
    await remote.close();
  });

  it('is unavailable when nothing answers, and fenced when another epoch does', async () => {
    const url = await serve((_req, res) => {
      res.setHeader(EPOCH_HEADER, '2');
      res.end(JSON.stringify({ result: [] }));
    });
    await expect(port(url).logTail(1)).rejects.toMatchObject({ reason: 'fenced' });
    const gone = await serve((req) => req.socket.destroy());
    await expect(port(gone).logTail(1)).rejects.toMatchObject({ reason: 'unavailable' });
  });

  it("turns the session process's own refusal into its error", async () => {
    const url = await serve((_req, res) => {
      res.statusCode = 404;
      res.setHeader(EPOCH_HEADER, '1');
      res.end(JSON.stringify({ error: 'no task "t-9"', code: 'not-found' }));
    });
    await expect(port(url).logTail(1)).rejects.toMatchObject({ code: 'not-found', message: 'no task "t-9"' });
  });
});
