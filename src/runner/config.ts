import fs from 'node:fs';
import path from 'node:path';
import { describeIssues } from '../db/content.js';
import { loadSessionConfig, SessionConfigError, withRunnerSection } from '../db/config-file.js';
import { definitionsDir, type SessionPaths } from '../db/layout.js';
import type { WakeMode } from '../db/wake.js';
import type { ModelSettings } from '../db/model-settings.js';
import type { McpServers } from '../db/mcp-servers.js';
import { errorMessage } from '../shared/log.js';
import { settingsSchema } from '../shared/settings.js';
import { parseAllowHosts, type DownloadAllowList } from './media/download-targets.js';

/**
 * Runner start-up configuration: the session folder as every process finds it (workspace,
 * `config.json`, time zone, wake mode; src/db/config-file.ts), plus the runner's own tuning from the environment.
 * Bad configuration fails with one clear line.
 */
/** The runner's tuning, parsed by the registry (src/shared/settings.ts: each one's parser and default). */
const EnvSchema = settingsSchema([
  'AGENT_PROVIDER',
  'PINCER_MODEL',
  'PINCER_ADMIN_USER_ID',
  'NANOCLAW_ADMIN_USER_ID',
  'PINCER_POLL_ACTIVE_MS',
  'PINCER_HEARTBEAT_MS',
  'PINCER_BATCH_MAX_MESSAGES',
  'PINCER_BATCH_MAX_BYTES',
  'PINCER_STOP_GRACE_MS',
  'PINCER_SCRIPT_TIMEOUT_MS',
  'PINCER_SCRIPT_ENV_ALLOW',
  'PINCER_SCRIPTS_REFUSED',
  'PINCER_DOWNLOAD_TIMEOUT_MS',
  'PINCER_ATTACHMENT_ALLOW_HOSTS',
  'PINCER_SANDBOX_NO_NETWORK',
]);

export interface RunnerConfig {
  /** the runner's environment with config.json's `runner` settings under it (its own variables win) */
  env: NodeJS.ProcessEnv;
  paths: SessionPaths;
  /** provider name as configured (AGENT_PROVIDER, else config.json `provider`); resolved by the registry. */
  provider: string | undefined;
  /** the agent group's provider policy (config.json `groupProvider`); the session's (`provider`) beats it. */
  groupProvider?: string;
  /** the provider of the configured model's entry (config.json `models[model].provider`), if any. */
  modelProvider?: string;
  /** the host's configuration generation of config.json (one atomic snapshot), for the log. */
  generation?: number;
  /** the agent group's model-runtime generation the host published this file with, for the log. */
  modelGeneration?: number;
  adminUserId: string | undefined;
  assistantName: string | undefined;
  /** the model (PINCER_MODEL, else config.json `model`), e.g. `anthropic/claude-sonnet-4-5` */
  model: string | undefined;
  /** model and provider entries of config.json (route settings and runtime policies) */
  models: Record<string, ModelSettings>;
  modelProviders: Record<string, ModelSettings>;
  /** the user's own MCP servers (config.json `mcpServers`), secret values still references */
  mcpServers: McpServers;
  timeZone: string;
  /** provider session to resume when session_state has none (config.json `sessionId`, set by the host). */
  resumeSessionId: string | undefined;
  wake: WakeMode;
  pollIdleMs: number;
  /** while the waker watches: how long an idle runner waits for a change before it looks anyway */
  idleCheckMs: number;
  pollActiveMs: number;
  heartbeatMs: number;
  batch: { maxMessages: number; maxBytes: number };
  stopGraceMs: number;
  /** task pre-scripts: timeout, and the environment names they may see beyond PATH, HOME, TZ, LANG. */
  script: { timeoutMs: number; allowEnv: string[] };
  downloadTimeoutMs: number;
  /** where attachment downloads may connect beyond public addresses (hosts, addresses, CIDR ranges, or `*`). */
  attachmentAllowHosts: DownloadAllowList;
  /** in a sandbox without a network: the setting that gives it one (for the download failures it explains). */
  sandboxNoNetwork: string | undefined;
}

export function loadRunnerConfig(ownEnv: NodeJS.ProcessEnv): RunnerConfig {
  const { paths, file, timeZone, wake, pollIdleMs, idleCheckMs } = loadSessionConfig(ownEnv);
  const env = withRunnerSection(ownEnv, file);
  const tuning = EnvSchema.safeParse(env);
  if (!tuning.success) throw new SessionConfigError('env', `bad environment: ${describeIssues(tuning.error)}`);
  const t = tuning.data;
  const model = t.PINCER_MODEL || file.model;
  return {
    env,
    paths,
    provider: t.AGENT_PROVIDER || file.provider,
    groupProvider: file.groupProvider,
    modelProvider: model ? file.models?.[model]?.provider : undefined,
    generation: file.generation,
    modelGeneration: file.modelGeneration,
    adminUserId: t.NANOCLAW_ADMIN_USER_ID || t.PINCER_ADMIN_USER_ID || file.adminUserId,
    assistantName: file.assistantName,
    model,
    models: file.models ?? {},
    modelProviders: file.modelProviders ?? {},
    mcpServers: file.mcpServers ?? {},
    timeZone,
    resumeSessionId: file.sessionId,
    wake,
    pollIdleMs,
    idleCheckMs,
    pollActiveMs: t.PINCER_POLL_ACTIVE_MS,
    heartbeatMs: t.PINCER_HEARTBEAT_MS,
    batch: { maxMessages: t.PINCER_BATCH_MAX_MESSAGES, maxBytes: t.PINCER_BATCH_MAX_BYTES },
    stopGraceMs: t.PINCER_STOP_GRACE_MS,
    script: {
      timeoutMs: t.PINCER_SCRIPT_TIMEOUT_MS,
      allowEnv: t.PINCER_SCRIPT_ENV_ALLOW,
      ...(t.PINCER_SCRIPTS_REFUSED ? { refused: t.PINCER_SCRIPTS_REFUSED } : {}),
    },
    downloadTimeoutMs: t.PINCER_DOWNLOAD_TIMEOUT_MS,
    attachmentAllowHosts: allowHosts(t.PINCER_ATTACHMENT_ALLOW_HOSTS),
    sandboxNoNetwork: t.PINCER_SANDBOX_NO_NETWORK || undefined,
  };
}

function allowHosts(value: string): DownloadAllowList {
  try {
    return parseAllowHosts(value);
  } catch (err) {
    throw new SessionConfigError('env', `bad environment: ${errorMessage(err)}`);
  }
}

/**
 * System prompt = global/CLAUDE.md + group/CLAUDE.md + agent/CLAUDE.md (any may be missing). The last is the session's
 * own: what its agent writes there reaches its own prompt, never another session's.
 */
export function loadSystemPrompt(paths: SessionPaths): string | undefined {
  const definitions = definitionsDir(paths);
  const folders = definitions === paths.agent ? [paths.global, paths.agent] : [paths.global, definitions, paths.agent];
  const parts = folders
    .map((dir) => path.join(dir, 'CLAUDE.md'))
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
        // missing or unreadable: not a folder
        return false;
      }
    })
    .sort();
}

/**
 * The model-runtime generation the host has published to the session now (`config.json` `modelGeneration`, rewritten
 * by the host when its group's generation changes): what a turn starting now is recorded with (turn_usage, its span).
 * `fallback` (the one the runner started with) when the file cannot be read or names none.
 */
export function currentModelGeneration(paths: SessionPaths, fallback: number | undefined): number | undefined {
  try {
    const value = (JSON.parse(fs.readFileSync(paths.config, 'utf8')) as { modelGeneration?: unknown }).modelGeneration;
    return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : fallback;
  } catch {
    return fallback; // replaced whole by the host (renamed into place); unreadable only when gone
  }
}
