import type { HookCallback, HookCallbackMatcher, HookEvent } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from '../../shared/log.js';
import { systemTimeZone } from '../../shared/time.js';
import { CREDENTIAL_VARIABLES } from './config.js';
import { archiveClaudeTranscript } from './transcript.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * The two hooks the Claude provider registers inside the SDK (they are Claude-only, so not part of the
 * provider interface):
 * - PreCompact archives the transcript to `<cwd>/conversations/{date}-{summary}.md` (cwd is the agent folder), in
 *   the time zone of the runner (TZ);
 * - PreToolUse on Bash (and Monitor, which also runs a shell command) removes credentials from the command's
 *   environment. Claude Code needs the API key in its own environment and every command it runs inherits it, so the
 *   command is rewritten to `unset` them first.
 */

/** Names that look like credentials: `*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_CREDENTIALS`. */
const SECRET_NAME = /(^|_)(API_?KEY|ACCESS_?KEY|AUTH|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_?KEY)(_|$)/i;
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variables of `env` a Bash command must not see: the Claude credentials and anything named like a secret. */
export function secretVariableNames(env: Record<string, string | undefined>): string[] {
  const names = new Set<string>(CREDENTIAL_VARIABLES);
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && SECRET_NAME.test(name)) names.add(name);
  }
  return [...names].filter((name) => SHELL_NAME.test(name)).sort();
}

/** `unset A B 2>/dev/null; <command>`: the command runs in a shell that no longer has the secrets. */
export function scrubCommand(command: string, secretNames: string[]): string {
  if (secretNames.length === 0) return command;
  return `unset ${secretNames.join(' ')} 2>/dev/null; ${command}`;
}

export function sanitizeBashHook(secretNames: string[]): HookCallback {
  return async (input) => {
    if (input.hook_event_name !== 'PreToolUse') return {};
    const toolInput = input.tool_input;
    if (!isRecord(toolInput) || typeof toolInput.command !== 'string') return {};
    return {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        updatedInput: { ...toolInput, command: scrubCommand(toolInput.command, secretNames) },
      },
    };
  };
}

export function preCompactHook(agentDir: string, timeZone: string, log: Logger): HookCallback {
  return async (input) => {
    if (input.hook_event_name !== 'PreCompact') return {};
    try {
      const file = archiveClaudeTranscript(input.transcript_path, agentDir, timeZone);
      if (file) log.info(`archived the conversation to ${file} before ${input.trigger} compaction`);
    } catch (err) {
      // Archiving must never block compaction; the transcript itself stays in Claude Code's config dir.
      log.warn(`could not archive the transcript ${input.transcript_path}: ${(err as Error).message}`);
    }
    return {};
  };
}

export function claudeHooks(cwd: string, env: Record<string, string | undefined>, log: Logger): Partial<Record<HookEvent, HookCallbackMatcher[]>> {
  return {
    PreCompact: [{ hooks: [preCompactHook(cwd, timeZoneOf(env), log)] }],
    PreToolUse: [{ matcher: 'Bash|Monitor', hooks: [sanitizeBashHook(secretVariableNames(env))] }],
  };
}

function timeZoneOf(env: Record<string, string | undefined>): string {
  return rawSetting(env, 'TZ') || systemTimeZone();
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
