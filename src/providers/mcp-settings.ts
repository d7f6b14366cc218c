import type { McpServerConfig, McpStdioServerConfig } from './types.js';
import { settingOrDefault } from '../shared/settings-load.js';

/**
 * How long the user's MCP servers get, the same for every provider wherever Pincer controls it: a start deadline after
 * which the turn goes on without a server, and a per-call timeout (only Pincer's own `ask_user_question` waits longer:
 * its server enforces its own timeout). Plus the size limits of one result in the built-in runtime's client.
 */
export interface McpClientSettings {
  /** PINCER_MCP_START_MS: how long a server may take to start and list its tools */
  startMs: number;
  /** PINCER_MCP_CALL_MS: how long one tool call may take */
  callMs: number;
  /** PINCER_MCP_RESULT_BYTES: the largest result message read; a larger one is a tool error, the connection stays */
  resultBytes: number;
  /** PINCER_MCP_IMAGE_BYTES: the largest image (decoded) passed to the model; a larger one is replaced by a note */
  imageBytes: number;
}

/** The settings (each one's default is the registry's, src/shared/settings.ts); a bad value means the default. */
export function mcpClientSettings(env: Record<string, string | undefined>): McpClientSettings {
  return {
    startMs: settingOrDefault(env, 'PINCER_MCP_START_MS'),
    callMs: settingOrDefault(env, 'PINCER_MCP_CALL_MS'),
    resultBytes: settingOrDefault(env, 'PINCER_MCP_RESULT_BYTES'),
    imageBytes: settingOrDefault(env, 'PINCER_MCP_IMAGE_BYTES'),
  };
}

export const MCP_SETTING_DEFAULTS: McpClientSettings = mcpClientSettings({});

/**
 * A stdio server with a working directory, for an SDK whose configuration has none (Claude Code, OpenCode): the
 * server is started through `sh`, which changes into the directory and then becomes the server (`exec`).
 */
export function withoutCwd(server: McpStdioServerConfig): McpStdioServerConfig {
  if (!server.cwd) return server;
  return {
    command: '/bin/sh',
    args: ['-c', 'cd -- "$0" && exec "$@"', server.cwd, server.command, ...server.args],
    env: server.env,
    ...(server.secretKeys ? { secretKeys: server.secretKeys } : {}),
  };
}

export function isHttpServer(server: McpServerConfig): server is Extract<McpServerConfig, { type: 'http' }> {
  return server.type === 'http';
}
