import type { McpServers } from '../db/mcp-servers.js';
import type { McpClientSettings } from '../providers/mcp-settings.js';
import { McpServerConnection, seconds } from '../providers/pincer/mcp-connection.js';
import { opener } from '../providers/pincer/mcp-tools.js';
import { resolveUserMcpServers } from '../runner/mcp-servers.js';
import type { Logger } from '../shared/log.js';

/**
 * `pincer doctor`'s start check of an agent group's own MCP servers: each is started once, here, as a plain process
 * of the doctor (not inside a runner's sandbox), through the same client and start deadline as the built-in
 * runtime's, asked for its tools and stopped. All servers of all groups start at once, so the check takes about the
 * slowest server's start, at most the deadline.
 */
export type McpStartResult = { ok: true; tools: number; ms: number } | { ok: false; error: string };

export interface McpStartTarget {
  /** the group's folder: a relative `cwd` is resolved against it, as against the agent's folder in a session */
  agentDir: string;
  servers: McpServers;
}

const QUIET: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

export async function startMcpServers(
  target: McpStartTarget,
  context: { env: NodeJS.ProcessEnv; secret: (name: string) => string | undefined; settings: McpClientSettings },
): Promise<Map<string, McpStartResult>> {
  const { servers, leftOut } = resolveUserMcpServers(target.servers, { agentDir: target.agentDir, env: context.env, secret: context.secret });
  const results = new Map<string, McpStartResult>(leftOut.map((l) => [l.name, { ok: false, error: l.reason }]));
  const options = { settings: context.settings, maxOutputChars: 1000, log: QUIET };
  await Promise.all(
    Object.entries(servers).map(async ([name, server]) => {
      const connection = new McpServerConnection(name, opener(name, server, options), QUIET, () => context.settings.callMs);
      const started = Date.now();
      try {
        const outcome = await connection.startWithin(context.settings.startMs);
        if (outcome.up) results.set(name, { ok: true, tools: outcome.tools.length, ms: Date.now() - started });
        else if (outcome.late) {
          const stderr = outcome.stderr ? ` (its stderr: "${outcome.stderr}")` : '';
          results.set(name, { ok: false, error: `did not list its tools within ${seconds(context.settings.startMs)}${stderr}` });
        } else results.set(name, { ok: false, error: outcome.error });
      } finally {
        await connection.close();
      }
    }),
  );
  return results;
}
