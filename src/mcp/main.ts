import { isSessionDbError, openSessionDb } from '../db/connection.js';
import { isSessionConfigError } from '../db/config-file.js';
import { createLogger, errorMessage } from '../shared/log.js';
import { startTracing } from '../shared/tracing.js';
import { loadMcpConfig } from './config.js';
import { createPincerServer } from './server.js';
import { LIMIT, LimitedStdioServerTransport, mib } from './stdio-transport.js';

/**
 * `pincer mcp`: the Pincer MCP server on stdio, started by the provider (SPEC §1). Finds its session like the runner
 * (PINCER_WORKSPACE, default /workspace) and opens its own connection to the session DB. Serves until the client
 * closes stdin or SIGTERM/SIGINT; open questions are abandoned then. Returns the exit code: 0 after a clean stop, 2 for
 * bad configuration (one clear line on stderr). stdout carries only the protocol; logs go to stderr as `[mcp] …`.
 */
export async function runMcpServer(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const log = createLogger('mcp');
  let setup;
  try {
    const config = loadMcpConfig(env);
    setup = { config, db: openSessionDb(config.paths.db) };
  } catch (err) {
    if (isSessionConfigError(err) || isSessionDbError(err)) {
      log.error(err.message);
      return 2;
    }
    throw err;
  }
  const { config, db } = setup;
  const shutdown = new AbortController();
  const blocking = new Set<Promise<unknown>>();
  // Each span is exported as it ends: the provider may kill this process between two calls.
  const tracing = await startTracing('pincer-mcp', env, { immediate: true });
  const server = createPincerServer({ db, config, log, shutdown: shutdown.signal, blocking, tracing });
  const transport = new LimitedStdioServerTransport();
  transport.onoversized = (m) =>
    log.warn(`refused a ${mib(m.bytes)} message (${[m.method ?? 'unknown method', m.tool].filter(Boolean).join(' ')}): over the ${LIMIT} limit`);
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => {
      shutdown.abort();
      resolve();
    };
    process.stdin.once('end', stop);
    process.stdin.once('close', stop);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    transport.onclose = stop;
  });
  try {
    await server.connect(transport);
    log.debug(`serving session ${config.paths.root} (pid ${process.pid})`);
    await stopped;
    // Open questions end on the abort and put runner_state back; they need the DB for that.
    await Promise.allSettled(blocking);
    await server.close();
  } catch (err) {
    log.error(`server failed: ${errorMessage(err)}`);
    return 1;
  } finally {
    await tracing.shutdown().catch(() => undefined);
    db.close();
  }
  return 0;
}
