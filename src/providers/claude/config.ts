import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { ProviderError } from '../registry.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * Claude provider settings, read once from the runner's environment (docs/providers.md: provider settings come
 * from env). Explicit bad values fail closed with one clear line; unset values take the defaults below.
 */
export interface ClaudeSettings {
  /** model override: config.json `model`, else ANTHROPIC_MODEL; unset → Claude Code's default. */
  model: string | undefined;
  /**
   * How long the model may stay silent while the provider waits for it (after a prompt or a tool result) before the
   * query ends with a `timeout` error. Claude Code itself retries an unreachable server for minutes.
   */
  timeoutMs: number;
  /** PINCER_CLAUDE_PREWARM=1: keep a warm Claude Code process for the next query (see spare.ts). */
  prewarm: boolean;
}

export const DEFAULT_TIMEOUT_MS = 120_000;

const EnvSchema = z.object({
  PINCER_PROVIDER_TIMEOUT_MS: z.coerce.number().int().positive().default(DEFAULT_TIMEOUT_MS),
  ANTHROPIC_MODEL: z.string().optional(),
  PINCER_CLAUDE_PREWARM: z.enum(['0', '1', 'true', 'false', '']).optional(),
});

/** The variables that carry credentials Claude Code can use. */
export const CREDENTIAL_VARIABLES = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'] as const;

/** Cloud back-ends Claude Code authenticates to by their own means. */
const CLOUD_SWITCHES = ['CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'CLAUDE_CODE_USE_FOUNDRY'] as const;

/** For `auto`: an API key or OAuth token is present. */
export function hasClaudeKey(env: Record<string, string | undefined>): boolean {
  return CREDENTIAL_VARIABLES.some((name) => Boolean(env[name]?.trim()));
}

/** Any way Claude Code could authenticate: a key or token, a cloud back-end, or a login stored in its config dir. */
export function hasClaudeCredentials(env: Record<string, string | undefined>): boolean {
  if (hasClaudeKey(env)) return true;
  if (CLOUD_SWITCHES.some((name) => env[name] && env[name] !== '0')) return true;
  return fs.existsSync(path.join(claudeConfigDir(env), '.credentials.json'));
}

/** Where Claude Code keeps its state: CLAUDE_CONFIG_DIR, else ~/.claude. */
export function claudeConfigDir(env: Record<string, string | undefined>): string {
  return rawSetting(env, 'CLAUDE_CONFIG_DIR') || path.join(env.HOME || os.homedir(), '.claude');
}

/**
 * The transcript of a session Claude Code still has: `projects/<project>/<session id>.jsonl` in the config dir (any
 * project: Claude Code resumes a session from another working directory too); undefined when it is gone.
 */
export function findSessionTranscript(env: Record<string, string | undefined>, sessionId: string): string | undefined {
  const projects = path.join(claudeConfigDir(env), 'projects');
  if (!fs.existsSync(projects)) return undefined;
  return fs
    .readdirSync(projects)
    .map((project) => path.join(projects, project, `${sessionId}.jsonl`))
    .find((file) => fs.existsSync(file));
}

export function loadClaudeSettings(env: Record<string, string | undefined>, model: string | undefined): ClaudeSettings {
  if (!hasClaudeCredentials(env)) {
    throw new ProviderError('unavailable', `provider "claude" needs credentials: set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (or use --provider mock)`);
  }
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new ProviderError('unavailable', `provider "claude": bad environment: ${issues}`);
  }
  const { ANTHROPIC_MODEL, PINCER_PROVIDER_TIMEOUT_MS, PINCER_CLAUDE_PREWARM } = parsed.data;
  return {
    model: model || ANTHROPIC_MODEL || undefined,
    timeoutMs: PINCER_PROVIDER_TIMEOUT_MS,
    prewarm: PINCER_CLAUDE_PREWARM === '1' || PINCER_CLAUDE_PREWARM === 'true',
  };
}

/**
 * The environment of the Claude Code process. The SDK's `env` replaces the child's environment, so this is the
 * runner's whole environment plus what Claude Code needs to run unattended; values already set win.
 * - IS_SANDBOX=1: Claude Code refuses bypassPermissions as root otherwise (Pincer runs it in a container).
 * - CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: no update checks or telemetry, only model calls.
 */
/**
 * With a TRACEPARENT and an OTLP endpoint (the runner traces this turn), Claude Code's own telemetry is turned on and
 * its spans continue the turn's trace: traces only, over OTLP/HTTP JSON, to the same endpoint. Settings the
 * environment already has win.
 */
function claudeTelemetryEnv(env: Record<string, string | undefined>): Record<string, string> {
  if (!env.TRACEPARENT || !(rawSetting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') || rawSetting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'))) return {};
  const defaults: Record<string, string> = {
    CLAUDE_CODE_ENABLE_TELEMETRY: '1',
    CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: '1',
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  };
  return Object.fromEntries(Object.entries(defaults).filter(([key]) => env[key] === undefined));
}

export function claudeProcessEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return {
    ...env,
    ...claudeTelemetryEnv(env),
    IS_SANDBOX: rawSetting(env, 'IS_SANDBOX') ?? '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: rawSetting(env, 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC') ?? '1',
    CLAUDE_AGENT_SDK_CLIENT_APP: rawSetting(env, 'CLAUDE_AGENT_SDK_CLIENT_APP') ?? 'pincer',
  };
}
