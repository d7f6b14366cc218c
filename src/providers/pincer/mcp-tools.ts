import type { AgentTool } from '@mariozechner/pi-agent-core';
import type { TSchema } from '@mariozechner/pi-ai';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { McpClientSettings } from '../mcp-settings.js';
import type { LinkedMcpServer, McpServerConfig } from '../types.js';
import { McpServerConnection, seconds, type OpenedTransport } from './mcp-connection.js';
import { toModelContent } from './mcp-results.js';
import { LimitedStdioClientTransport } from './mcp-transport.js';

/**
 * The MCP servers the runner configures (Pincer's own first), reached through the official MCP client: over stdio to a
 * child process, over Streamable HTTP, or, for a server the runner can serve in its own process (Pincer's, `linked`),
 * over the MCP SDK's in-memory transport pair. Each server's tools become agent tools named as Claude names them,
 * `mcp__<server>__<tool>`, with the server's JSON schema as parameters.
 *
 * All servers start at once. A required one (Pincer's) is waited for, and its failure fails the query (the host retries
 * it): without it the agent could not send messages or files. The user's get `startMs`: one that is not up by then is
 * left out of the turn, and the chat gets one notice naming it (with the first line of its stderr); one that comes up
 * later joins from the next turn on. The servers live until the runner stops (`close()`).
 */

/** `ask_user_question` may legitimately wait for days; Pincer's server enforces its own timeout. */
const QUESTION_TIMEOUT_MS = 8 * 24 * 3600 * 1000;
/** stderr lines per server process logged at info level (a start failure's cause); the rest at debug */
const STDERR_INFO_LINES = 20;

export interface McpToolsOptions {
  settings: McpClientSettings;
  maxOutputChars: number;
  log: Logger;
}

interface Entry {
  connection: McpServerConnection;
  tools: AgentTool[] | undefined;
}

export class McpConnections {
  private readonly entries: Entry[] = [];
  private readonly notices: string[] = [];

  private constructor(private readonly options: McpToolsOptions) {}

  static async connect(servers: Record<string, McpServerConfig>, linked: Record<string, LinkedMcpServer>, options: McpToolsOptions): Promise<McpConnections> {
    const connections = new McpConnections(options);
    const { log, settings } = options;
    const started = Date.now();
    const joined = (name: string, entry: Entry, tools: Tool[]): void => {
      entry.tools = tools.map((tool) => toAgentTool(name, entry.connection, tool, options));
      log.info(`MCP server ${name}: ${tools.length} tools in ${Date.now() - started} ms`);
    };
    try {
      await Promise.all(
        Object.entries(servers).map(async ([name, server]) => {
          const own = Object.hasOwn(linked, name);
          const required = own || (server.type !== 'http' && server.required === true);
          const entry = connections.add(name, own ? openLinked(linked[name]!) : opener(name, server, options), required);
          if (required) {
            try {
              joined(name, entry, await entry.connection.start());
            } catch (err) {
              throw new Error(`MCP server ${name} could not start: ${errorMessage(err)}`);
            }
            return;
          }
          const outcome = await entry.connection.startWithin(settings.startMs);
          if (outcome.up) return joined(name, entry, outcome.tools);
          if (outcome.late) {
            connections.notice(
              `The MCP server "${name}" did not start within ${seconds(settings.startMs)}; this turn goes on without its tools` +
                (outcome.stderr ? ` (the first line of its stderr: "${outcome.stderr}")` : '') +
                '.',
            );
            outcome.later.then(
              (tools) => {
                joined(name, entry, tools);
                log.info(`MCP server ${name} started late; its tools are there from the next turn`);
              },
              (err: unknown) => log.warn(`MCP server ${name} could not start: ${errorMessage(err)}`),
            );
            return;
          }
          log.warn(`MCP server ${name} could not start: ${outcome.error}`);
          connections.notice(`The MCP server "${name}" could not start: ${outcome.error}. This turn goes on without its tools.`);
        }),
      );
    } catch (err) {
      await connections.close();
      throw err;
    }
    return connections;
  }

  /** The tools of every server up now (a late server's join from the next turn). */
  tools(): AgentTool[] {
    return this.entries.flatMap((entry) => entry.tools ?? []);
  }

  /** Notices for the chat not yet given (each is given once). */
  takeNotices(): string[] {
    return this.notices.splice(0);
  }

  async close(): Promise<void> {
    await Promise.all(this.entries.splice(0).map((entry) => entry.connection.close()));
  }

  private add(name: string, open: () => Promise<OpenedTransport>, required: boolean): Entry {
    const callMs = this.options.settings.callMs;
    const timeout = required ? (tool: string) => (tool === 'ask_user_question' ? QUESTION_TIMEOUT_MS : callMs) : () => callMs;
    const entry: Entry = { connection: new McpServerConnection(name, open, this.options.log, timeout), tools: undefined };
    this.entries.push(entry);
    return entry;
  }

  private notice(text: string): void {
    this.notices.push(text);
  }
}

function openLinked(server: LinkedMcpServer): () => Promise<OpenedTransport> {
  return async () => {
    const connection = await server.connect();
    return { transport: connection.transport, release: () => connection.close() };
  };
}

/** How the built-in runtime opens a user server (also `pincer doctor`'s start check). */
export function opener(name: string, server: McpServerConfig, options: McpToolsOptions): () => Promise<OpenedTransport> {
  if (server.type === 'http') {
    // Loaded on first use: the HTTP transport (and its SSE parser and OAuth helpers) is not part of a runner's start.
    return async () => {
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      return { transport: new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } }) };
    };
  }
  return () => {
    let lines = 0;
    const transport = new LimitedStdioClientTransport(server, options.settings.resultBytes, (line) => {
      lines += 1;
      if (lines <= STDERR_INFO_LINES) options.log.info(`[mcp ${name}] ${line}`);
      else options.log.debug(`[mcp ${name}] ${line}`);
    });
    return Promise.resolve({ transport, stderr: transport.stderrLines, lastStderr: () => transport.lastStderrLine });
  };
}

function toAgentTool(server: string, connection: McpServerConnection, tool: Tool, options: McpToolsOptions): AgentTool {
  const limits = { maxChars: options.maxOutputChars, imageBytes: options.settings.imageBytes };
  return {
    name: `mcp__${server}__${tool.name}`,
    label: `${server}: ${tool.name}`,
    description: tool.description ?? tool.name,
    // pi-ai validates arguments against plain JSON schema as well as TypeBox schemas.
    parameters: tool.inputSchema as unknown as TSchema,
    execute: async (_id, params, signal) => {
      const result = await connection.call(tool.name, params as Record<string, unknown>, signal);
      const content = toModelContent(result, limits);
      if (result.isError) throw new Error(content.map((c) => (c.type === 'text' ? c.text : '')).join('\n') || `${tool.name} failed`);
      return { content, details: {} };
    },
  };
}
