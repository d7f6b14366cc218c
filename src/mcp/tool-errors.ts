import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { toolErrorText } from '../shared/error-edges.js';

/**
 * The MCP edge of the error vocabulary: whatever a tool handler throws becomes a tool result with `isError: true`
 * and the text of `toolErrorText` (a `PincerError`'s message, written for the model, saying when trying again can
 * help; anything else is an internal error). Installed after tracing, so the tool's span sees the error result.
 */
export function translateToolErrors(server: McpServer): void {
  const register = server.registerTool.bind(server) as (name: string, config: unknown, handler: (...args: unknown[]) => unknown) => unknown;
  const translated = (name: string, config: unknown, handler: (...args: unknown[]) => unknown): unknown =>
    register(name, config, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (err) {
        return { content: [{ type: 'text', text: toolErrorText(err) }], isError: true };
      }
    });
  (server as unknown as { registerTool: typeof translated }).registerTool = translated;
}
