import { settingsSchema } from '../shared/settings.js';
import { describeIssues } from '../db/content.js';
import { loadSessionConfig, SessionConfigError } from '../db/config-file.js';
import type { McpStdioServerConfig } from '../providers/types.js';
import { CLI_ENTRY, SESSION_NODE_FLAGS } from '../shared/cli-entry.js';
import type { McpConfig } from './types.js';

/** The name models see the tools under: `mcp__pincer__send_message` (Claude), `pincer_send_message` (OpenCode). */
export const MCP_SERVER_NAME = 'pincer';

const EnvSchema = settingsSchema(['PINCER_MAX_FILE_BYTES']);

/**
 * The MCP server finds its session exactly as the runner does (PINCER_WORKSPACE, TZ, config.json), so both read the
 * same folder and time zone. Bad configuration throws a SessionConfigError with one clear line.
 */
export function loadMcpConfig(env: NodeJS.ProcessEnv): McpConfig {
  const session = loadSessionConfig(env);
  const own = EnvSchema.safeParse(env);
  if (!own.success) throw new SessionConfigError('env', `bad environment: ${describeIssues(own.error)}`);
  return {
    paths: session.paths,
    timeZone: session.timeZone,
    wake: session.wake,
    fallbackMs: session.pollIdleMs,
    maxFileBytes: own.data.PINCER_MAX_FILE_BYTES,
  };
}

/**
 * How a provider starts `pincer mcp` for a session (a normalised `{command, args, env}`). SDKs do not pass
 * their own environment on to MCP servers, so the server's environment is spelled out: the workspace, the time zone,
 * and the runner's own PINCER_* settings (log level, wake mode, limits).
 */
export function pincerMcpServer(workspace: string, timeZone: string, env: NodeJS.ProcessEnv): McpStdioServerConfig {
  const serverEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    // OTEL_*: the server's tool spans join the turn's trace when tracing is on.
    if ((key.startsWith('PINCER_') || key.startsWith('OTEL_')) && value !== undefined) serverEnv[key] = value;
  }
  serverEnv.PINCER_WORKSPACE = workspace;
  serverEnv.TZ = timeZone;
  return { command: process.execPath, args: [...SESSION_NODE_FLAGS, CLI_ENTRY, 'mcp'], env: serverEnv, required: true };
}
