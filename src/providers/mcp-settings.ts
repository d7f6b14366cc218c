import type { McpServerConfig, McpStdioServerConfig } from './types.js';

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

export const MCP_SETTING_DEFAULTS: McpClientSettings = {
  startMs: 10_000,
  callMs: 300_000,
  resultBytes: 10 * 1024 * 1024,
  imageBytes: 5 * 1024 * 1024,
};

export function mcpClientSettings(env: Record<string, string | undefined>): McpClientSettings {
  const positive = (name: string, fallback: number): number => {
    const value = Number(env[name]);
    return env[name] !== undefined && Number.isInteger(value) && value > 0 ? value : fallback;
  };
  return {
    startMs: positive('PINCER_MCP_START_MS', MCP_SETTING_DEFAULTS.startMs),
    callMs: positive('PINCER_MCP_CALL_MS', MCP_SETTING_DEFAULTS.callMs),
    resultBytes: positive('PINCER_MCP_RESULT_BYTES', MCP_SETTING_DEFAULTS.resultBytes),
    imageBytes: positive('PINCER_MCP_IMAGE_BYTES', MCP_SETTING_DEFAULTS.imageBytes),
  };
}

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
