import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
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
  /** the host's configuration generation this file was published as (informational; the file is replaced whole). */
  generation: z.number().int().nonnegative().optional(),
  /** the agent group's model-runtime generation the host had published when it wrote this file (informational). */
  modelGeneration: z.number().int().positive().optional(),
});
export type ConfigFile = z.infer<typeof ConfigFileSchema>;

const EnvSchema = z.object({
  PINCER_WAKE: z.enum(['watch', 'poll']).default('watch'),
  PINCER_POLL_IDLE_MS: z.coerce.number().int().positive().default(1000),
});

export interface SessionConfig {
  paths: SessionPaths;
  file: ConfigFile;
  timeZone: string;
  wake: WakeMode;
  /** fallback wake interval when nothing changes (watch mode), or the poll interval (poll mode) */
  pollIdleMs: number;
}

export function loadSessionConfig(env: NodeJS.ProcessEnv): SessionConfig {
  const workspace = path.resolve(env.PINCER_WORKSPACE || '/workspace');
  if (!fs.existsSync(workspace) || !fs.statSync(workspace).isDirectory()) {
    throw new SessionConfigError('workspace', `workspace not found: ${workspace} (set PINCER_WORKSPACE to a session folder)`);
  }
  const paths = sessionPaths(workspace);
  const file = readConfigFile(paths.config);
  const tuning = EnvSchema.safeParse(env);
  if (!tuning.success) throw new SessionConfigError('env', `bad environment: ${describeIssues(tuning.error)}`);
  const timeZone = env.TZ || file.timezone || systemTimeZone();
  if (!isValidTimeZone(timeZone)) throw new SessionConfigError('env', `unknown time zone "${timeZone}" (TZ)`);
  return { paths, file, timeZone, wake: tuning.data.PINCER_WAKE, pollIdleMs: tuning.data.PINCER_POLL_IDLE_MS };
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
