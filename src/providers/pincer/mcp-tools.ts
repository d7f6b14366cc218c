import type { AgentTool } from '@mariozechner/pi-agent-core';
import type { ImageContent, TextContent, TSchema } from '@mariozechner/pi-ai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { LinkedMcpServer, McpServerConfig } from '../types.js';
import { truncateMiddle } from './tools/limits.js';

/**
 * The MCP servers the runner configures (Pincer's own first), reached through the official MCP client: over stdio to a
 * child process, or, for a server the runner can serve in its own process (Pincer's, `linked`), over the MCP SDK's
 * in-memory transport pair. Each server's tools become agent tools named as Claude names them,
 * `mcp__<server>__<tool>`, with the server's JSON schema as parameters. The servers start once and live until the
 * runner stops (`close()`).
 */
/** `ask_user_question` may legitimately wait for days; the server enforces its own timeout. */
const TOOL_CALL_TIMEOUT_MS = 8 * 24 * 3600 * 1000;

export class McpConnections {
  private readonly clients: { name: string; client: Client; release?: () => Promise<void> }[] = [];

  private constructor(private readonly log: Logger) {}

  /**
   * Connect every server in order. A server of the user's that fails to start is logged and left out; the others still
   * serve. Pincer's own (served in this process) is required: without it the agent would answer with no way to send
   * messages or files, so the failure is thrown and the query fails (the host retries it).
   */
  static async connect(
    servers: Record<string, McpServerConfig>,
    linked: Record<string, LinkedMcpServer>,
    log: Logger,
    maxOutputChars: number,
  ): Promise<{ connections: McpConnections; tools: AgentTool[] }> {
    const connections = new McpConnections(log);
    const tools: AgentTool[] = [];
    for (const [name, server] of Object.entries(servers)) {
      try {
        const { client, release } = await (Object.hasOwn(linked, name) ? connectLinked(linked[name]!) : connectChild(name, server, log));
        connections.clients.push({ name, client, release });
        const listed = await client.listTools();
        for (const tool of listed.tools) tools.push(toAgentTool(name, client, tool, maxOutputChars));
        log.info(`MCP server ${name}: ${listed.tools.length} tools`);
      } catch (err) {
        log.error(`MCP server ${name} could not start: ${errorMessage(err)}`);
        if (Object.hasOwn(linked, name)) {
          await connections.close();
          throw new Error(`MCP server ${name} could not start: ${errorMessage(err)}`);
        }
      }
    }
    return { connections, tools };
  }

  async close(): Promise<void> {
    await Promise.all(
      this.clients.splice(0).map(async ({ name, client, release }) => {
        try {
          await client.close();
          await release?.();
        } catch (err) {
          this.log.warn(`closing MCP server ${name}: ${errorMessage(err)}`);
        }
      }),
    );
  }
}

function newClient(): Client {
  return new Client({ name: 'pincer-builtin', version: '1.0.0' });
}

async function connectLinked(server: LinkedMcpServer): Promise<{ client: Client; release: () => Promise<void> }> {
  const connection = await server.connect();
  const client = newClient();
  try {
    await client.connect(connection.transport);
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw err;
  }
  return { client, release: () => connection.close() };
}

async function connectChild(name: string, server: McpServerConfig, log: Logger): Promise<{ client: Client; release?: () => Promise<void> }> {
  const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env, stderr: 'pipe' });
  // The server logs to stderr; its lines go to ours with its name in front.
  transport.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) log.debug(`[mcp ${name}] ${line}`);
  });
  const client = newClient();
  await client.connect(transport);
  return { client };
}

function toAgentTool(
  server: string,
  client: Client,
  tool: { name: string; description?: string; inputSchema: Record<string, unknown> },
  maxOutputChars: number,
): AgentTool {
  return {
    name: `mcp__${server}__${tool.name}`,
    label: `${server}: ${tool.name}`,
    description: tool.description ?? tool.name,
    // pi-ai validates arguments against plain JSON schema as well as TypeBox schemas.
    parameters: tool.inputSchema as unknown as TSchema,
    execute: async (_id, params, signal) => {
      const result = (await client.callTool({ name: tool.name, arguments: params as Record<string, unknown> }, undefined, {
        signal,
        timeout: TOOL_CALL_TIMEOUT_MS,
      })) as CallToolResult;
      const content = (result.content ?? []).map((block): TextContent | ImageContent => {
        if (block.type === 'text') return { type: 'text', text: truncateMiddle(block.text, maxOutputChars) };
        if (block.type === 'image') return { type: 'image', data: block.data, mimeType: block.mimeType };
        return { type: 'text', text: `[${block.type} content]` };
      });
      if (result.isError) throw new Error(content.map((c) => (c.type === 'text' ? c.text : '')).join('\n') || `${tool.name} failed`);
      return { content: content.length > 0 ? content : [{ type: 'text', text: '(no output)' }], details: {} };
    },
  };
}
