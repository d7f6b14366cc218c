import type { McpStdioServerConfig, Options } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from '../../shared/log.js';
import type { McpServerConfig, QueryInput } from '../types.js';
import { claudeProcessEnv, type ClaudeSettings } from './config.js';
import { claudeHooks } from './hooks.js';
import { claudeSpawner } from './spawn.js';

/** The tools the agent may use without asking (the seed's allow-list), plus every tool of each MCP server given. */
export const CLAUDE_TOOL_ALLOWLIST = [
  'Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep', 'NotebookEdit', 'WebSearch', 'WebFetch',
  'Task', 'TaskOutput', 'TaskStop', 'TodoWrite', 'ToolSearch', 'Skill', 'SendMessage', 'Monitor',
] as const;

/**
 * Built-in tools that would live and die with one Claude Code process or need a terminal user; Pincer's MCP tools
 * (`ask_user_question`, `schedule_task`) are the durable versions.
 */
export const CLAUDE_DISALLOWED_TOOLS = ['AskUserQuestion', 'CronCreate', 'CronDelete', 'CronList', 'ScheduleWakeup'] as const;

/**
 * The SDK options of one query (seed "Claude Provider"): resume point, Claude Code's system prompt with the runner's
 * appended, the MCP servers, extra directories, the environment, the tool allow-list, bypassed permissions, hooks.
 */
export function claudeOptions(
  input: QueryInput,
  settings: ClaudeSettings,
  log: Logger,
  onStderr: (data: string) => void,
): Options {
  const mcpServers = toClaudeMcpServers(input.mcpServers);
  return {
    cwd: input.cwd,
    resume: input.sessionId,
    resumeSessionAt: input.sessionId ? input.resumeAt : undefined,
    systemPrompt: { type: 'preset', preset: 'claude_code', ...(input.systemPrompt ? { append: input.systemPrompt } : {}) },
    // The runner gives the whole system prompt (global + agent CLAUDE.md); no settings or CLAUDE.md from disk.
    settingSources: [],
    mcpServers,
    strictMcpConfig: true,
    // Over stdin, so MCP server env (database paths, tokens) stays off the command line.
    mcpServersDelivery: 'initialize',
    additionalDirectories: input.additionalDirectories,
    env: claudeProcessEnv(input.env),
    model: settings.model,
    allowedTools: [...CLAUDE_TOOL_ALLOWLIST, ...Object.keys(mcpServers).map((name) => `mcp__${name}__*`)],
    disallowedTools: [...CLAUDE_DISALLOWED_TOOLS],
    permissionMode: 'bypassPermissions',
    allowDangerouslySkipPermissions: true,
    // Partial messages keep the deadline honest while a long answer streams.
    includePartialMessages: true,
    hooks: claudeHooks(input.cwd, input.env, log),
    stderr: onStderr,
    spawnClaudeCodeProcess: claudeSpawner(input.env, onStderr),
  };
}

/** Pincer's normalised MCP servers as Claude Code stdio servers, always loaded (not hidden behind ToolSearch). */
export function toClaudeMcpServers(servers: Record<string, McpServerConfig>): Record<string, McpStdioServerConfig> {
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      { type: 'stdio', command: server.command, args: server.args, env: server.env, alwaysLoad: true },
    ]),
  );
}
