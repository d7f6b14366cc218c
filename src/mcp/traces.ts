import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type Database from 'better-sqlite3';
import { readRunnerTrace } from '../db/state.js';
import { errorMessage } from '../shared/log.js';
import type { Tracing } from '../shared/tracing.js';

/**
 * One `execute_tool <name>` span per tool call (GenAI semantic conventions), child of the runner's turn span, whose
 * traceparent the runner keeps in `runner_state` while the turn runs. Installed only when tracing is on: it wraps
 * every handler registered after it, so the tool files stay free of tracing.
 */
export function traceToolCalls(server: McpServer, tracing: Tracing, db: Database.Database): void {
  if (!tracing.enabled) return;
  const register = server.registerTool.bind(server) as (name: string, config: unknown, handler: (...args: unknown[]) => unknown) => unknown;
  const traced = (name: string, config: unknown, handler: (...args: unknown[]) => unknown): unknown =>
    register(name, config, async (...args: unknown[]) => {
      let parent: string | null = null;
      try {
        parent = readRunnerTrace(db);
      } catch {
        // a locked or older DB: the span starts its own trace rather than failing the tool
      }
      const span = tracing.start(`execute_tool ${name}`, {
        parent,
        attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.type': 'function' },
      });
      try {
        const result = (await handler(...args)) as { isError?: boolean } | undefined;
        span.end(result?.isError ? 'the tool reported an error' : undefined);
        return result;
      } catch (err) {
        span.end(errorMessage(err));
        throw err;
      }
    });
  (server as unknown as { registerTool: typeof traced }).registerTool = traced;
}
