import type { McpServerConfig as ClaudeMcpServerConfig, Options } from '@anthropic-ai/claude-agent-sdk';
import { mcpClientSettings, withoutCwd } from '../mcp-settings.js';
import type { Logger } from '../../shared/log.js';
import type { McpServerConfig, QueryInput } from '../types.js';
import { claudeProcessEnv, type ClaudeSettings } from './config.js';
import { claudeHooks } from './hooks.js';
import { claudeSpawner } from './spawn.js';

/** The tools the agent may use without asking (the allow-list of docs/providers.md), plus every tool of each MCP server given. */
export const CLAUDE_TOOL_ALLOWLIST = [
  'Bash',
  'Read',
  'Write',
  'Edit',
  'Glob',
  'Grep',
  'NotebookEdit',
  'WebSearch',
  'WebFetch',
  'Task',
  'TaskOutput',
  'TaskStop',
  'TodoWrite',
  'ToolSearch',
  'Skill',
  'SendMessage',
  'Monitor',
] as const;

/**
 * Built-in tools that would live and die with one Claude Code process or need a terminal user; Pincer's MCP tools
 * (`ask_user_question`, `schedule_task`) are the durable versions.
 */
export const CLAUDE_DISALLOWED_TOOLS = ['AskUserQuestion', 'CronCreate', 'CronDelete', 'CronList', 'ScheduleWakeup'] as const;

/**
 * The SDK options of one query: resume point, Claude Code's system prompt with the runner's
 * appended, the MCP servers, extra directories, the environment, the tool allow-list, bypassed permissions, hooks.
 */
export function claudeOptions(input: QueryInput, settings: ClaudeSettings, log: Logger, onStderr: (data: string) => void): Options {
  const mcpServers = toClaudeMcpServers(input.mcpServers, mcpClientSettings(input.env).callMs);
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

/**
 * Pincer's normalised MCP servers as Claude Code's, always loaded (not hidden behind ToolSearch). The user's get the
 * per-call timeout; Pincer's own keeps Claude Code's (its `ask_user_question` enforces its own).
 */
export function toClaudeMcpServers(servers: Record<string, McpServerConfig>, callMs: number): Record<string, ClaudeMcpServerConfig> {
  return Object.fromEntries(
    Object.entries(servers).map(([name, server]): [string, ClaudeMcpServerConfig] => {
      if (server.type === 'http') return [name, { type: 'http', url: server.url, headers: server.headers, alwaysLoad: true, timeout: callMs }];
      const stdio = withoutCwd(server);
      return [
        name,
        { type: 'stdio', command: stdio.command, args: stdio.args, env: stdio.env, alwaysLoad: true, ...(server.required ? {} : { timeout: callMs }) },
      ];
    }),
  );
}
