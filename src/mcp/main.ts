// first, before any schema is built (see the module)
import '../shared/zod-jitless.js';
import { isSessionDbError } from '../db/connection.js';
import { isSessionConfigError } from '../db/config-file.js';
import { createLogger, errorMessage } from '../shared/log.js';
import { openPincerServer, type PincerServerHandle } from './session-server.js';
import { LimitedStdioServerTransport, refusedLogLine } from './stdio-transport.js';

/**
 * `pincer mcp`: the Pincer MCP server on stdio, started by the provider. Finds its session like the runner
 * (PINCER_WORKSPACE, default /workspace) and opens its own connection to the session DB. Serves until the client
 * closes stdin or SIGTERM/SIGINT; open questions are abandoned then. Returns the exit code: 0 after a clean stop, 2 for
 * bad configuration (one clear line on stderr). stdout carries only the protocol; logs go to stderr as `[mcp] …`.
 */
export async function runMcpServer(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const log = createLogger('mcp');
  let handle: PincerServerHandle;
  try {
    handle = await openPincerServer(env, log);
  } catch (err) {
    if (isSessionConfigError(err) || isSessionDbError(err)) {
      log.error(err.message);
      return 2;
    }
    throw err;
  }
  const transport = new LimitedStdioServerTransport();
  transport.onoversized = (m) => log.warn(refusedLogLine(m));
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.stdin.once('end', stop);
    process.stdin.once('close', stop);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    transport.onclose = stop;
  });
  let code = 0;
  try {
    await handle.server.connect(transport);
    log.debug(`serving session ${handle.config.paths.root} (pid ${process.pid})`);
    await stopped;
  } catch (err) {
    log.error(`server failed: ${errorMessage(err)}`);
    code = 1;
  }
  try {
    await handle.close();
  } catch (err) {
    log.error(`server failed: ${errorMessage(err)}`);
    code = 1;
  }
  return code;
}
