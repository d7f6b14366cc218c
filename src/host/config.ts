import os from 'node:os';
import path from 'node:path';
import { describeIssues } from '../db/content.js';
import { parseAllowHosts } from '../runner/media/download-targets.js';
import { errorMessage } from '../shared/log.js';
import { isValidTimeZone, systemTimeZone } from '../shared/time.js';
import { PincerError } from '../shared/errors.js';
import { loadKubernetesSettings } from './kubernetes/settings.js';
import { PLATFORM_VARIABLES } from './platforms/catalog.js';
import type { HostConfig } from './types.js';
import { isHostSecret, isRunnerConfigVariable, RUNNER_DOCUMENT_SETTINGS, setting, settingsSchema } from '../shared/settings.js';
import type { RunnerSection } from '../db/config-file.js';
import { rawSetting, readSetting, settingOrDefault } from '../shared/settings-load.js';

/**
 * Host settings from the environment, parsed by the registry (src/shared/settings.ts holds each one's parser and
 * default; docs/configuration.md "The host"): the host's own, and those of its runners it decides on or checks.
 */
const HostEnvSchema = settingsSchema([
  'PINCER_HOME',
  'PINCER_DEFAULT_GROUP',
  'PINCER_SESSION_MODE',
  'PINCER_ADMIN_USER_ID',
  'PINCER_GROUP_TRIGGER',
  'PINCER_ALLOWED_USERS',
  'AGENT_PROVIDER',
  'PINCER_MODEL',
  'TZ',
  'PINCER_HTTP_HOST',
  'PINCER_HTTP_HOSTNAMES',
  'PINCER_HTTP_TOKEN',
  'PINCER_SSE_MAX_BUFFERED_BYTES',
  'PINCER_PROXY_RUNNER_CONNECTIONS',
  'PINCER_PROXY_MAX_CONNECTIONS',
  'PINCER_METRICS_TOKEN',
  'PINCER_RUNNER',
  'PINCER_SESSION_SERVE_RUNNER',
  'PINCER_SESSION_ORPHAN_MS',
  'PINCER_IDLE_TIMEOUT_MS',
  'PINCER_HEARTBEAT_TIMEOUT_MS',
  'PINCER_RUNNER_START_TIMEOUT_MS',
  'PINCER_STOP_GRACE_MS',
  'PINCER_TURN_LIMIT_MS',
  'PINCER_RUNNER_BACKOFF_MS',
  'PINCER_RUNNER_BACKOFF_MAX_MS',
  'PINCER_MAX_RUNNERS',
  'PINCER_SPARE_RUNNERS',
  'PINCER_SWEEP_INTERVAL_MS',
  'PINCER_SWEEP_IDLE_MS',
  'PINCER_STALE_MS',
  'PINCER_RETRY_BASE_MS',
  'PINCER_RETRY_MAX_MS',
  'PINCER_MAX_TRIES',
  'PINCER_TASK_KEEP_RUNS',
  'PINCER_TASK_KEEP_DAYS',
  'PINCER_DELIVERY_ATTEMPTS',
  'PINCER_DELIVERY_RETRY_MS',
  'PINCER_AGENT_ROUTES',
  'PINCER_ATTACHMENT_ALLOW_HOSTS',
  'PINCER_CONTAINER_ENV',
  // the session folder's limits (src/host/session/disk-quota.ts): checked here so that a typo stops the host at once
  'PINCER_SESSION_DISK',
  'PINCER_SESSION_FILES',
]);

/**
 * The home in use: `--home`, else PINCER_HOME, else `~/.pincer`. Not the current directory: the agent, its memory and
 * its schedules must not change with where a command happens to be typed.
 */
export function resolveHome(env: NodeJS.ProcessEnv, flag?: string): string {
  return path.resolve(flag || settingOrDefault(env, 'PINCER_HOME') || path.join(os.homedir(), '.pincer'));
}

export interface HostFlags {
  home?: string;
  http?: { port: number; host?: string };
  /** `--provider`: the provider of `providerGroup` (default: the default group) for this run, saved with `saveProvider`. */
  provider?: string;
  saveProvider?: boolean;
  providerGroup?: string;
}

/**
 * Read the host configuration. Explicit settings fail closed with a message naming the setting; only implicit
 * defaults fall back.
 */
export function loadHostConfig(env: NodeJS.ProcessEnv, flags: HostFlags = {}): HostConfig {
  const parsed = HostEnvSchema.safeParse(env);
  if (!parsed.success) throw new PincerError('config', `bad host environment: ${describeIssues(parsed.error)}`);
  const e = parsed.data;
  const timezone = e.TZ || systemTimeZone();
  if (!isValidTimeZone(timezone)) throw new PincerError('config', `unknown time zone "${timezone}" (TZ)`);
  // A runner setting, checked here too so that a typo stops the host at once instead of every runner later.
  try {
    parseAllowHosts(e.PINCER_ATTACHMENT_ALLOW_HOSTS);
  } catch (err) {
    throw new PincerError('config', errorMessage(err));
  }
  if (flags.http && !(Number.isInteger(flags.http.port) && flags.http.port >= 0 && flags.http.port < 65536)) {
    throw new PincerError('config', `--http: not a port: ${flags.http.port}`);
  }
  const providerGroup = flags.providerGroup ?? (e.PINCER_DEFAULT_GROUP === 'none' ? undefined : e.PINCER_DEFAULT_GROUP);
  return {
    home: resolveHome(env, flags.home),
    ...(flags.provider && providerGroup ? { runProvider: { group: providerGroup, provider: flags.provider, save: flags.saveProvider === true } } : {}),
    defaultGroup:
      e.PINCER_DEFAULT_GROUP === 'none'
        ? null
        : {
            name: e.PINCER_DEFAULT_GROUP,
            provider: (flags.saveProvider && !flags.providerGroup ? flags.provider : undefined) ?? e.AGENT_PROVIDER ?? 'auto',
            model: e.PINCER_MODEL ?? null,
            sessionMode: e.PINCER_SESSION_MODE,
            timezone,
            admins: idList(e.PINCER_ADMIN_USER_ID),
            triggerRules: { groups: e.PINCER_GROUP_TRIGGER, allowedUsers: idList(e.PINCER_ALLOWED_USERS) },
          },
    http: flags.http
      ? {
          port: flags.http.port,
          host: flags.http.host ?? e.PINCER_HTTP_HOST,
          hostnames: idList(e.PINCER_HTTP_HOSTNAMES),
          token: e.PINCER_HTTP_TOKEN,
          metricsToken: e.PINCER_METRICS_TOKEN,
          sseMaxBufferedBytes: e.PINCER_SSE_MAX_BUFFERED_BYTES,
        }
      : null,
    sessionPort: sessionPortOf(e.PINCER_RUNNER, e.PINCER_SESSION_ORPHAN_MS, env),
    runners: {
      // Served sessions supervise their runners themselves, of this kind; in a pod (the sandbox) they are processes.
      kind: e.PINCER_RUNNER === 'session-serve' ? e.PINCER_SESSION_SERVE_RUNNER : e.PINCER_RUNNER === 'kubernetes' ? 'process' : e.PINCER_RUNNER,
      idleTimeoutMs: e.PINCER_IDLE_TIMEOUT_MS,
      heartbeatTimeoutMs: e.PINCER_HEARTBEAT_TIMEOUT_MS,
      startTimeoutMs: e.PINCER_RUNNER_START_TIMEOUT_MS,
      stopGraceMs: e.PINCER_STOP_GRACE_MS,
      turnLimitMs: e.PINCER_TURN_LIMIT_MS,
      backoffBaseMs: e.PINCER_RUNNER_BACKOFF_MS,
      backoffMaxMs: e.PINCER_RUNNER_BACKOFF_MAX_MS,
      ...(e.PINCER_MAX_RUNNERS !== undefined ? { maxRunners: e.PINCER_MAX_RUNNERS } : {}),
      spares: e.PINCER_SPARE_RUNNERS,
      env: runnerBaseEnv(env, e.PINCER_CONTAINER_ENV),
    },
    sweep: {
      intervalMs: e.PINCER_SWEEP_INTERVAL_MS,
      idleIntervalMs: e.PINCER_SWEEP_IDLE_MS,
      staleMs: e.PINCER_STALE_MS,
      retryBaseMs: e.PINCER_RETRY_BASE_MS,
      retryMaxMs: e.PINCER_RETRY_MAX_MS,
      maxTries: e.PINCER_MAX_TRIES,
      taskHistory: { keepRuns: e.PINCER_TASK_KEEP_RUNS, keepDays: e.PINCER_TASK_KEEP_DAYS },
    },
    delivery: { maxAttempts: e.PINCER_DELIVERY_ATTEMPTS, retryBaseMs: e.PINCER_DELIVERY_RETRY_MS, agentRoutes: e.PINCER_AGENT_ROUTES },
    proxy: { perRunner: e.PINCER_PROXY_RUNNER_CONNECTIONS, global: e.PINCER_PROXY_MAX_CONNECTIONS },
  };
}

/** The `runner` section of each session's `config.json`: the runner settings of the runners' configuration. */
export function runnerSection(env: NodeJS.ProcessEnv): RunnerSection | undefined {
  const entries = RUNNER_DOCUMENT_SETTINGS.flatMap((name) => {
    const value = rawSetting(env, name);
    // a bad value stays out: the runner's own environment has it and stops the runner with its one line, as before
    return value === undefined || value === '' || !setting(name)!.parse.safeParse(value).success ? [] : [[name, value] as const];
  });
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}

/** `a, b,c` → `['a', 'b', 'c']`. */
function idList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
}

function sessionPortOf(runner: string, orphanMs: number, env: NodeJS.ProcessEnv): HostConfig['sessionPort'] {
  if (runner === 'session-serve') return { kind: 'session-serve', orphanMs };
  if (runner !== 'kubernetes') return { kind: 'local', orphanMs };
  try {
    return { kind: 'kubernetes', orphanMs, kubernetes: loadKubernetesSettings(env) };
  } catch (err) {
    throw new PincerError('config', errorMessage(err));
  }
}

/**
 * What the runners' configuration holds (and so, after the credential proxy and the supervisor, what a runner may
 * get): an ALLOW-list derived from the settings registry (src/shared/settings.ts) — the variables a runner or its
 * launcher reads, the system's basics, and the names the administrator adds with PINCER_CONTAINER_ENV. Nothing else of
 * the host's environment, whatever its name. The host's own secrets may not be added.
 */
export function runnerBaseEnv(env: NodeJS.ProcessEnv, extraNames: readonly string[] = readSetting(env, 'PINCER_CONTAINER_ENV')): NodeJS.ProcessEnv {
  const extra = extraRunnerNames(extraNames);
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || PER_GROUP.has(name)) continue;
    if (isRunnerConfigVariable(name) || extra.has(name)) out[name] = value;
  }
  return out;
}

/** Set per group by the host for each runner (never the host's own value), or the host's alone. */
const PER_GROUP = new Set(['AGENT_PROVIDER', 'TZ', 'PINCER_WORKSPACE']);

/** PINCER_CONTAINER_ENV: more names for every runner; a host secret named there stops the host. */
function extraRunnerNames(names: readonly string[]): Set<string> {
  const refused = names.filter((name) => isHostSecret(name) || PLATFORM_VARIABLES.includes(name));
  if (refused.length > 0)
    throw new PincerError(
      'config',
      `PINCER_CONTAINER_ENV: ${refused.join(', ')} ${refused.length === 1 ? 'is a secret' : 'are secrets'} of the host and never passed to a runner`,
    );
  return new Set(names);
}
