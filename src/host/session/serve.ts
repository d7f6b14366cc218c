import { createAdaptorServer } from '@hono/node-server';
import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { describeIssues } from '../../db/content.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { httpReply } from '../../shared/error-edges.js';
import { isPincerError } from '../../shared/errors.js';
import { RunnerSupervisor } from './runners.js';
import type { HostConfig } from '../types.js';
import { SessionEngine } from './engine.js';
import { LocalSessionPort } from './local-port.js';
import { CALLS, EPOCH_HEADER, isCallName, type LaunchDocument } from './serve-protocol.js';

/**
 * `pincer session-serve`: one process owning one session folder on its own machine. It runs the session's engine
 * (sweep, recurrence, runner supervision: the same code the host runs for a local session) and serves the session
 * port over HTTP to the host that launched it, with the launch's bearer and epoch. A request with another epoch gets
 * 409 (another launch owns the session); nothing is stored without the bearer. It stops writing and exits by itself
 * when the host has not been heard from for `orphanMs`, so a lost host never leaves two writers.
 */

/** File systems SQLite's WAL is not safe on (`statfs` f_type): NFS, CIFS/SMB, FUSE (and virtiofs on it), 9p. */
export const REFUSED_FILESYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x6969, 'NFS'],
  [0xff534d42, 'CIFS'],
  [0xfe534d42, 'SMB2'],
  [0x65735546, 'FUSE (or virtiofs)'],
  [0x01021997, '9p'],
]);

/** Why `folder` cannot hold a served session (a network or FUSE file system), or undefined when it can. */
export function unsafeFilesystem(folder: string, refused: ReadonlyMap<number, string> = REFUSED_FILESYSTEMS): string | undefined {
  const type = fs.statfsSync(folder).type;
  const name = refused.get(type);
  return name
    ? `${folder} is on ${name} (statfs type 0x${type.toString(16)}): SQLite's write-ahead log is not safe there; put sessions on a local disk or a block volume`
    : undefined;
}

export interface ServedSession {
  url: string;
  /** resolves once the server is closed and the engine stopped. */
  closed: Promise<void>;
  /** drain (the runner finishes its query), stop serving, close. */
  stop(why: string): Promise<void>;
}

export async function serveSession(folder: string, doc: LaunchDocument, log: Logger): Promise<ServedSession> {
  const runners = doc.runners as unknown as HostConfig['runners'];
  const sweep = doc.sweep as unknown as HostConfig['sweep'];
  const exits: { engine?: SessionEngine } = {};
  const supervisor = new RunnerSupervisor(
    runners,
    log,
    (exit) => exits.engine?.onRunnerExit(exit),
    undefined,
    {
      // The host's credential proxy gave this launch its placeholders already (in `runners.env`).
      runnerEnv: (_id, env) => env,
      revoke: () => undefined,
      socketPath: () => doc.credentialProxySocket,
    },
    doc.traceRelay && { socketPath: () => doc.traceRelay!.socket, port: () => doc.traceRelay!.port },
  );
  const engine = new SessionEngine({ session: { id: doc.sessionId, folder }, config: { runners, sweep }, supervisor, launch: doc.launch, log, durable: true });
  exits.engine = engine;
  const port = new LocalSessionPort(engine, doc.epoch);
  engine.run();

  let lastHeard = Date.now();
  const expected = Buffer.from(`Bearer ${doc.token}`);
  const app = new Hono();
  app.use('*', async (c, next) => {
    await next();
    c.header(EPOCH_HEADER, String(doc.epoch));
  });
  app.get('/v1/health', (c) => c.json({ ok: true, sessionId: doc.sessionId, epoch: doc.epoch }));
  app.use('/v1/sessions/*', async (c, next) => {
    const given = Buffer.from(c.req.header('authorization') ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return c.json({ error: 'unauthorized: wrong or missing bearer' }, 401);
    const epoch = Number(c.req.header(EPOCH_HEADER));
    if (epoch !== doc.epoch) return c.json({ error: `epoch ${c.req.header(EPOCH_HEADER) ?? '(none)'} is not this launch's (${doc.epoch})` }, 409);
    if (c.req.param('id' as never) !== undefined && c.req.param('id' as never) !== doc.sessionId) return c.json({ error: 'no such session' }, 404);
    lastHeard = Date.now();
    await next();
  });
  app.post('/v1/sessions/:id/call/:method', async (c) => {
    if (c.req.param('id') !== doc.sessionId) return c.json({ error: `no session "${c.req.param('id')}" here` }, 404);
    const method = c.req.param('method');
    if (!isCallName(method)) return c.json({ error: `unknown call "${method}"` }, 404);
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      // the reply says the body is not JSON
      return c.json({ error: 'the body is not JSON', code: 'invalid-input' }, 400);
    }
    const args = CALLS[method].safeParse((body as { args?: unknown } | null)?.args);
    if (!args.success) return c.json({ error: `invalid ${method}: ${describeIssues(args.error)}`, code: 'invalid-input' }, 400);
    try {
      const call = port[method] as (...a: unknown[]) => Promise<unknown>;
      const result = await call.apply(port, args.data as unknown[]);
      return c.json({ result: result ?? null });
    } catch (err) {
      if (isPincerError(err)) {
        const reply = httpReply(err);
        return c.json(reply.body, reply.status as ContentfulStatusCode);
      }
      log.error(`${method} failed: ${errorMessage(err)}`);
      return c.json({ error: errorMessage(err), code: 'internal' }, 500);
    }
  });
  app.get('/v1/sessions/:id/files/:row/:name', async (c) => {
    if (c.req.param('id') !== doc.sessionId) return c.json({ error: `no session "${c.req.param('id')}" here` }, 404);
    try {
      const file = await port.outboxFile(c.req.param('row'), c.req.param('name'));
      return c.body(fs.readFileSync(file.path), 200, { 'content-type': 'application/octet-stream' });
    } catch (err) {
      if (isPincerError(err)) {
        const reply = httpReply(err);
        return c.json(reply.body, reply.status as ContentfulStatusCode);
      }
      throw err;
    }
  });
  app.notFound((c) => c.json({ error: 'no such route' }, 404));

  const server = createAdaptorServer({ fetch: app.fetch }) as http.Server;
  const [host, portText] = splitListen(doc.listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(portText), host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  let stopping: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const orphanCheck = setInterval(
    () => {
      if (Date.now() - lastHeard > doc.orphanMs) void stop(`no word from the host for ${Date.now() - lastHeard} ms`);
    },
    Math.min(1000, doc.orphanMs),
  );
  orphanCheck.unref();
  const stop = (why: string): Promise<void> => {
    stopping ??= (async () => {
      log.info(`stopping (${why})`);
      clearInterval(orphanCheck);
      await engine.drain().catch((err: unknown) => log.warn(`drain: ${errorMessage(err)}`));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await engine.close();
      resolveClosed();
    })();
    return stopping;
  };
  log.info(`serving session ${doc.sessionId} (epoch ${doc.epoch}) on ${url}`);
  return { url, closed, stop };
}

function splitListen(listen: string): [string, string] {
  const at = listen.lastIndexOf(':');
  return [listen.slice(0, at).replace(/^\[|\]$/g, ''), listen.slice(at + 1)];
}
