import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { RUNNER_DOCUMENT_SETTINGS, setting, settingsSchema, type SettingName } from '../shared/settings.js';
import { isValidTimeZone, systemTimeZone } from '../shared/time.js';
import { describeIssues } from './content.js';
import { McpServersSchema } from './mcp-servers.js';
import { ModelSettingsSchema } from './model-settings.js';
import { sessionPaths, type SessionPaths } from './layout.js';
import type { WakeMode } from './wake.js';
import { PincerError } from '../shared/errors.js';

/**
 * The session folder as every process finds it (runner, MCP server): the workspace from PINCER_WORKSPACE, the optional
 * `config.json` the host writes atomically, the time zone and the wake mode. Part of the session folder's contract,
 * shared by the host (which writes `config.json`) and the processes that read it. Bad configuration fails with one
 * clear line.
 */
export class SessionConfigError extends PincerError {
  constructor(
    /** kept apart from `code` (always `config`): which part of the folder's contract is wrong. */
    readonly reason: 'workspace' | 'config-file' | 'env',
    message: string,
  ) {
    super('config', message);
    this.name = 'SessionConfigError';
  }
}

export function isSessionConfigError(err: unknown): err is SessionConfigError {
  return err instanceof SessionConfigError;
}

/**
 * `runner`: the runner's settings as the host has them (src/shared/settings.ts RUNNER_DOCUMENT_SETTINGS), each value
 * as it would be written in the environment and valid for its parser; a runner's own environment wins over it.
 */
export const RunnerSectionSchema = z
  .record(z.string(), z.string())
  .superRefine((section, ctx) => {
    for (const [name, value] of Object.entries(section)) {
      if (!RUNNER_DOCUMENT_SETTINGS.includes(name as SettingName)) ctx.addIssue({ code: 'custom', path: [name], message: 'not a runner setting' });
      else {
        const parsed = setting(name)!.parse.safeParse(value);
        if (!parsed.success) ctx.addIssue({ code: 'custom', path: [name], message: parsed.error.issues[0]?.message ?? 'invalid' });
      }
    }
  })
  .transform((section) => section as Partial<Record<SettingName, string>>);
export type RunnerSection = z.infer<typeof RunnerSectionSchema>;

/** The keys `config.json` may hold. Unknown keys are an error, so a typo is never silently ignored. */
export const ConfigFileSchema = z.strictObject({
  sessionId: z.string().min(1).optional(),
  assistantName: z.string().optional(),
  adminUserId: z.string().optional(),
  model: z.string().optional(),
  provider: z.string().optional(),
  /** the agent group's provider policy (agent_groups.agent_provider); `provider` is the session's */
  groupProvider: z.string().optional(),
  /** model entries: a model (as written in `model`) → its runtime policy and route settings (src/runtime/model-route.ts) */
  models: z.record(z.string(), ModelSettingsSchema).optional(),
  /** provider entries: a model provider (`openai`, `anthropic`, `local`, …) → the same settings for all its models */
  modelProviders: z.record(z.string(), ModelSettingsSchema).optional(),
  timezone: z.string().optional(),
  /** the user's own MCP servers (the agent group's, with the session's overrides), besides Pincer's own (src/db/mcp-servers.ts) */
  mcpServers: McpServersSchema.optional(),
  /**
   * the conversations the agent may send to (its own, and those bound to its group): \`send_message\` refuses others
   * with a tool error. The host enforces the same list on delivery whatever this file says.
   */
  destinations: z.array(z.strictObject({ channelType: z.string().min(1), platformId: z.string().min(1) })).optional(),
  /** the runner's settings from the host (what a runner on another machine gets instead of the host's environment) */
  runner: RunnerSectionSchema.optional(),
  /** the host's configuration generation this file was published as (informational; the file is replaced whole). */
  generation: z.number().int().nonnegative().optional(),
  /** the agent group's model-runtime generation the host had published when it wrote this file (informational). */
  modelGeneration: z.number().int().positive().optional(),
});
export type ConfigFile = z.infer<typeof ConfigFileSchema>;

/** What every process of a session reads from its environment, parsed by the registry (src/shared/settings.ts). */
const EnvSchema = settingsSchema(['TZ', 'PINCER_WAKE', 'PINCER_POLL_IDLE_MS', 'PINCER_IDLE_CHECK_MS']);

export interface SessionConfig {
  paths: SessionPaths;
  file: ConfigFile;
  timeZone: string;
  wake: WakeMode;
  /** fallback wake interval when nothing changes (watch mode), or the poll interval (poll mode) */
  pollIdleMs: number;
  /** an idle runner's fallback while its waker watches: a change wakes it at once, this only covers a missed event */
  idleCheckMs: number;
}

export function loadSessionConfig(ownEnv: NodeJS.ProcessEnv): SessionConfig {
  const where = settingsSchema(['PINCER_WORKSPACE']).safeParse(ownEnv);
  if (!where.success) throw new SessionConfigError('env', `bad environment: ${describeIssues(where.error)}`);
  const workspace = path.resolve(where.data.PINCER_WORKSPACE || '/workspace');
  if (!fs.existsSync(workspace) || !fs.statSync(workspace).isDirectory()) {
    throw new SessionConfigError('workspace', `workspace not found: ${workspace} (set PINCER_WORKSPACE to a session folder)`);
  }
  const paths = sessionPaths(workspace);
  const file = readConfigFile(paths.config);
  // the host's settings for the session's runners (config.json `runner`) under this process's own environment
  const tuning = EnvSchema.safeParse(withRunnerSection(ownEnv, file));
  if (!tuning.success) throw new SessionConfigError('env', `bad environment: ${describeIssues(tuning.error)}`);
  const timeZone = tuning.data.TZ || file.timezone || systemTimeZone();
  if (!isValidTimeZone(timeZone)) throw new SessionConfigError('env', `unknown time zone "${timeZone}" (TZ)`);
  const { PINCER_WAKE: wake, PINCER_POLL_IDLE_MS: pollIdleMs, PINCER_IDLE_CHECK_MS: idleCheckMs } = tuning.data;
  return { paths, file, timeZone, wake, pollIdleMs, idleCheckMs };
}

/**
 * A runner's environment with the session's `runner` settings under it: what the host set for the session's runners,
 * unless this process's own environment sets the same variable.
 */
export function withRunnerSection(env: NodeJS.ProcessEnv, file: ConfigFile): NodeJS.ProcessEnv {
  return file.runner ? { ...file.runner, ...env } : env;
}

function readConfigFile(file: string): ConfigFile {
  if (!fs.existsSync(file)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new SessionConfigError('config-file', `cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = ConfigFileSchema.safeParse(raw);
  if (!parsed.success) throw new SessionConfigError('config-file', `invalid ${file}: ${describeIssues(parsed.error)}`);
  return parsed.data;
}
