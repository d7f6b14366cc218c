import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { openSessionDb } from '../db/connection.js';
import type { Logger } from '../shared/log.js';
import { startTracing } from '../shared/tracing.js';
import { loadMcpConfig } from './config.js';
import { createPincerServer } from './server.js';
import type { McpConfig } from './types.js';

/**
 * The Pincer MCP server of one session, before it is connected to a transport: the same set-up whether it serves a
 * provider's child process over stdio (`pincer mcp`, main.ts) or the built-in runtime inside the runner (linked.ts).
 * It finds its session from `env` exactly as the runner does and opens its own connection to the session DB.
 */
export interface PincerServerHandle {
  server: McpServer;
  config: McpConfig;
  /**
   * Stop serving: blocking tools (open questions) are aborted and finish — they put runner_state back, so they need
   * the DB — then the server, its tracing and its DB connection close. Call once.
   */
  close(): Promise<void>;
}

/** Throws a SessionConfigError or SessionDbError (one clear line) for bad configuration or an unusable DB. */
export async function openPincerServer(env: NodeJS.ProcessEnv, log: Logger): Promise<PincerServerHandle> {
  const config = loadMcpConfig(env);
  const db = openSessionDb(config.paths.db);
  const shutdown = new AbortController();
  const blocking = new Set<Promise<unknown>>();
  // Each span is exported as it ends: a child server may be killed between two calls.
  const tracing = await startTracing('pincer-mcp', env, { immediate: true });
  const server = createPincerServer({ db, config, log, shutdown: shutdown.signal, blocking, tracing });
  return {
    server,
    config,
    close: async () => {
      shutdown.abort();
      try {
        await Promise.allSettled(blocking);
        await server.close();
      } finally {
        await tracing.shutdown().catch(() => undefined); // spans not exported at exit are lost; the tool calls are not
        db.close();
      }
    },
  };
}
