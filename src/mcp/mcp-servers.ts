import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { insertOutbound } from '../db/messages.js';
import { parseMcpServers, SecretRefSchema, type McpServerSpec } from '../db/mcp-servers.js';
import { batchRouting } from './routing.js';
import { label, text } from './schemas.js';
import { PincerError } from '../shared/errors.js';
import { textResult, type ToolContext } from './types.js';

/**
 * `add_mcp_server`: the agent asks for an MCP server of its own (a GitHub, database or browser server). Nothing
 * changes here: the request is a `system` row; the host validates it, asks the agent group's admin with a question
 * with buttons, records the request and the decision, and only an approved one changes the group's configuration
 * (src/host/mcp-server-requests.ts). The agent hears of the decision as a system message.
 */
const Value = z.union([z.string(), SecretRefSchema]);

export function registerMcpServerTools(server: McpServer, ctx: ToolContext): void {
  const { db } = ctx;
  server.registerTool(
    'add_mcp_server',
    {
      description:
        "Ask the agent group's admin to add an MCP server to this agent group (its tools are then yours as " +
        'mcp__<name>__<tool> from the next start of the agent). Give a stdio server (command, args, env, cwd) or a ' +
        'Streamable HTTP one (url, headers). A value in env or headers may be {"secret": "NAME"}: a secret of the ' +
        "host's secrets store, never its value. The admin is asked with buttons; you get a system message with the " +
        'decision. Returns the request id.',
      inputSchema: {
        name: label('name', 32).describe('the server name, e.g. "github" (letters, digits, "-", single "_")'),
        command: label('command').optional().describe('stdio: the command, e.g. "npx"'),
        args: z.array(z.string()).max(100).optional().describe('stdio: its arguments, e.g. ["-y", "@modelcontextprotocol/server-github"]'),
        env: z.record(z.string(), Value).optional().describe('stdio: environment variables of the server'),
        cwd: label('cwd').optional().describe("stdio: its working directory, relative to the agent's folder"),
        url: label('url', 2000).optional().describe('HTTP: the server URL, e.g. "https://mcp.example.com/mcp"'),
        headers: z.record(z.string(), Value).optional().describe('HTTP: request headers'),
        reason: text('reason', 2000, 'use a shorter one').describe('why you need it, in one or two sentences, for the admin'),
      },
    },
    ({ name, command, args, env, cwd, url, headers, reason }) => {
      if ((command === undefined) === (url === undefined))
        throw new PincerError('invalid-input', 'give either command (a stdio server) or url (an HTTP server), not both or neither');
      const spec: McpServerSpec =
        url !== undefined
          ? { type: 'http', url, ...(headers ? { headers } : {}) }
          : { command: command!, ...(args ? { args } : {}), ...(env ? { env } : {}), ...(cwd ? { cwd } : {}) };
      // The host checks again (it is the boundary); this gives the model its mistake at once.
      const parsed = parseMcpServers({ [name]: spec });
      if (!parsed.ok) throw new PincerError('invalid-input', `invalid MCP server: ${parsed.error}`);
      const { seq } = insertOutbound(db, { kind: 'system', content: { action: 'add_mcp_server', name, server: spec, reason }, routing: batchRouting(db) });
      return textResult(`Request ${seq} to add the MCP server "${name}" sent; the host asks the admin and answers with a system message.`);
    },
  );
}
