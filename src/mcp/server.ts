import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { registerAgentTools } from './agents.js';
import { MCP_SERVER_NAME } from './config.js';
import { registerFileTools } from './files.js';
import { registerMcpServerTools } from './mcp-servers.js';
import { registerMessagingTools } from './messaging.js';
import { registerQuestionTools } from './questions.js';
import { registerTaskTools } from './tasks.js';
import { translateToolErrors } from './tool-errors.js';
import { traceToolCalls } from './traces.js';
import type { ToolContext } from './types.js';

/** Version reported to MCP clients (keep with package.json). */
const SERVER_VERSION = '0.1.0';

/**
 * The Pincer MCP server: every tool of docs/architecture.md's "The agent's tools", each group in its own file, all writing only
 * to the session DB through `ctx.db`. Input is validated by zod schemas (the SDK answers invalid input); a handler
 * throws a `PincerError` written for the model, and `translateToolErrors` turns it into a tool result with
 * `isError: true`. The server keeps serving.
 */
export function createPincerServer(ctx: ToolContext): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: SERVER_VERSION });
  if (ctx.tracing) traceToolCalls(server, ctx.tracing, ctx.db);
  translateToolErrors(server);
  registerMessagingTools(server, ctx);
  registerFileTools(server, ctx);
  registerQuestionTools(server, ctx);
  registerAgentTools(server, ctx);
  registerTaskTools(server, ctx);
  registerMcpServerTools(server, ctx);
  return server;
}
