import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../db/content.js';
import { sessionPaths, type SessionPaths } from '../db/layout.js';
import { isValidTimeZone, systemTimeZone } from '../shared/time.js';
import type { WakeMode } from './wake.js';

/**
 * Runner start-up configuration (seed "容器启动"; SPEC §3): environment first, then the optional `config.json` in the
 * workspace (written atomically by the host). Bad configuration fails with one clear line.
 */
export class RunnerConfigError extends Error {
  constructor(
    readonly code: 'workspace' | 'config-file' | 'env',
    message: string,
  ) {
    super(message);
    this.name = 'RunnerConfigError';
  }
}

export function isRunnerConfigError(err: unknown): err is RunnerConfigError {
  return err instanceof RunnerConfigError;
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
  /** model entries: a model id → the provider that runs it (selection policy, src/runtime/selection.ts) */
  models: z.record(z.string(), z.strictObject({ provider: z.string().optional() })).optional(),
  timezone: z.string().optional(),
  /** the host's configuration generation this file was published as (informational; the file is replaced whole). */
  generation: z.number().int().nonnegative().optional(),
});
export type ConfigFile = z.infer<typeof ConfigFileSchema>;

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** Tuning knobs from the environment, with their defaults. */
const EnvSchema = z.object({
  PINCER_WAKE: z.enum(['watch', 'poll']).default('watch'),
  PINCER_POLL_IDLE_MS: positiveInt(1000),
  PINCER_POLL_ACTIVE_MS: positiveInt(500),
  PINCER_HEARTBEAT_MS: positiveInt(5000),
  PINCER_BATCH_MAX_MESSAGES: positiveInt(50),
  PINCER_BATCH_MAX_BYTES: positiveInt(512 * 1024),
  PINCER_STOP_GRACE_MS: positiveInt(3000),
  PINCER_SCRIPT_TIMEOUT_MS: positiveInt(30_000),
  PINCER_SCRIPT_ENV_ALLOW: z.string().default(''),
  PINCER_DOWNLOAD_TIMEOUT_MS: positiveInt(15_000),
});

export interface RunnerConfig {
  paths: SessionPaths;
  /** provider name as configured (AGENT_PROVIDER, else config.json `provider`); resolved by the registry. */
  provider: string | undefined;
  /** the agent group's provider policy (config.json `groupProvider`); the session's (`provider`) beats it. */
  groupProvider?: string;
  /** the provider of the configured model's entry (config.json `models[model].provider`), if any. */
  modelProvider?: string;
  /** the host's configuration generation of config.json (one atomic snapshot), for the log. */
  generation?: number;
  adminUserId: string | undefined;
  assistantName: string | undefined;
  model: string | undefined;
  timeZone: string;
  /** provider session to resume when session_state has none (config.json `sessionId`, set by the host). */
  resumeSessionId: string | undefined;
  wake: WakeMode;
  pollIdleMs: number;
  pollActiveMs: number;
  heartbeatMs: number;
  batch: { maxMessages: number; maxBytes: number };
  stopGraceMs: number;
  /** task pre-scripts: timeout, and the environment names they may see beyond PATH, HOME, TZ, LANG. */
  script: { timeoutMs: number; allowEnv: string[] };
  downloadTimeoutMs: number;
}

export function loadRunnerConfig(env: NodeJS.ProcessEnv): RunnerConfig {
  const workspace = path.resolve(env.PINCER_WORKSPACE || '/workspace');
  if (!fs.existsSync(workspace) || !fs.statSync(workspace).isDirectory()) {
    throw new RunnerConfigError('workspace', `workspace not found: ${workspace} (set PINCER_WORKSPACE to a session folder)`);
  }
  const paths = sessionPaths(workspace);
  const file = readConfigFile(paths.config);
  const tuning = EnvSchema.safeParse(env);
  if (!tuning.success) throw new RunnerConfigError('env', `bad environment: ${describeIssues(tuning.error)}`);
  const timeZone = env.TZ || file.timezone || systemTimeZone();
  if (!isValidTimeZone(timeZone)) throw new RunnerConfigError('env', `unknown time zone "${timeZone}" (TZ)`);
  const t = tuning.data;
  return {
    paths,
    provider: env.AGENT_PROVIDER || file.provider,
    groupProvider: file.groupProvider,
    modelProvider: file.model ? file.models?.[file.model]?.provider : undefined,
    generation: file.generation,
    adminUserId: env.NANOCLAW_ADMIN_USER_ID || env.PINCER_ADMIN_USER_ID || file.adminUserId,
    assistantName: file.assistantName,
    model: file.model,
    timeZone,
    resumeSessionId: file.sessionId,
    wake: t.PINCER_WAKE,
    pollIdleMs: t.PINCER_POLL_IDLE_MS,
    pollActiveMs: t.PINCER_POLL_ACTIVE_MS,
    heartbeatMs: t.PINCER_HEARTBEAT_MS,
    batch: { maxMessages: t.PINCER_BATCH_MAX_MESSAGES, maxBytes: t.PINCER_BATCH_MAX_BYTES },
    stopGraceMs: t.PINCER_STOP_GRACE_MS,
    script: {
      timeoutMs: t.PINCER_SCRIPT_TIMEOUT_MS,
      allowEnv: t.PINCER_SCRIPT_ENV_ALLOW.split(',').map((name) => name.trim()).filter(Boolean),
    },
    downloadTimeoutMs: t.PINCER_DOWNLOAD_TIMEOUT_MS,
  };
}

function readConfigFile(file: string): ConfigFile {
  if (!fs.existsSync(file)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new RunnerConfigError('config-file', `cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = ConfigFileSchema.safeParse(raw);
  if (!parsed.success) throw new RunnerConfigError('config-file', `invalid ${file}: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** System prompt = global/CLAUDE.md + agent/CLAUDE.md (either may be missing). */
export function loadSystemPrompt(paths: SessionPaths): string | undefined {
  const parts = [path.join(paths.global, 'CLAUDE.md'), path.join(paths.agent, 'CLAUDE.md')]
    .filter((file) => fs.existsSync(file))
    .map((file) => fs.readFileSync(file, 'utf8').trim())
    .filter((text) => text.length > 0);
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}

/** The directories under `extra/` the agent may use (symlinks to directories count). */
export function discoverExtraDirectories(paths: SessionPaths): string[] {
  if (!fs.existsSync(paths.extra)) return [];
  return fs
    .readdirSync(paths.extra)
    .map((name) => path.join(paths.extra, name))
    .filter((dir) => {
      try {
        return fs.statSync(dir).isDirectory();
      } catch {
        return false;
      }
    })
    .sort();
}
