import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../db/content.js';
import { parseAllowHosts } from '../runner/media/download-targets.js';
import { errorMessage } from '../shared/log.js';
import { isValidTimeZone, systemTimeZone } from '../shared/time.js';
import { PincerError } from '../shared/errors.js';
import { loadKubernetesSettings } from './kubernetes/settings.js';
import { PLATFORM_VARIABLES } from './platforms/catalog.js';
import type { HostConfig } from './types.js';
import { isHostSecret, isRunnerConfigVariable } from '../shared/settings.js';

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** Host settings from the environment, with their defaults (docs/configuration.md "The host"). */
const HostEnvSchema = z.object({
  PINCER_HOME: z.string().min(1).optional(),
  PINCER_DEFAULT_GROUP: z.string().min(1).default('main'),
  PINCER_SESSION_MODE: z.enum(['shared', 'per-thread']).default('shared'),
  PINCER_ADMIN_USER_ID: z.string().optional(),
  PINCER_GROUP_TRIGGER: z.enum(['mention', 'always']).default('mention'),
  PINCER_ALLOWED_USERS: z.string().optional(),
  AGENT_PROVIDER: z.string().min(1).default('auto'),
  PINCER_MODEL: z.string().optional(),
  PINCER_HTTP_HOST: z.string().min(1).default('127.0.0.1'),
  PINCER_HTTP_HOSTNAMES: z.string().optional(),
  PINCER_HTTP_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  PINCER_SSE_MAX_BUFFERED_BYTES: positiveInt(1024 * 1024),
  PINCER_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  PINCER_RUNNER: z.enum(['auto', 'process', 'docker', 'bwrap', 'session-serve', 'kubernetes']).default('auto'),
  PINCER_SESSION_SERVE_RUNNER: z.enum(['auto', 'process', 'docker', 'bwrap']).default('auto'),
  PINCER_SESSION_ORPHAN_MS: positiveInt(3 * 60_000),
  PINCER_IDLE_TIMEOUT_MS: positiveInt(5 * 60_000),
  PINCER_HEARTBEAT_TIMEOUT_MS: positiveInt(30_000),
  PINCER_RUNNER_START_TIMEOUT_MS: positiveInt(60_000),
  PINCER_STOP_GRACE_MS: positiveInt(3000),
  PINCER_TURN_LIMIT_MS: positiveInt(30 * 60_000),
  PINCER_RUNNER_BACKOFF_MS: positiveInt(1000),
  PINCER_RUNNER_BACKOFF_MAX_MS: positiveInt(60_000),
  PINCER_SWEEP_INTERVAL_MS: positiveInt(1000),
  PINCER_STALE_MS: positiveInt(2000),
  PINCER_RETRY_BASE_MS: positiveInt(2000),
  PINCER_RETRY_MAX_MS: positiveInt(5 * 60_000),
  PINCER_MAX_TRIES: positiveInt(5),
  PINCER_TASK_KEEP_RUNS: positiveInt(20),
  PINCER_TASK_KEEP_DAYS: z.coerce.number().int().nonnegative().default(7),
  PINCER_DELIVERY_ATTEMPTS: positiveInt(5),
  PINCER_DELIVERY_RETRY_MS: positiveInt(500),
});

/**
 * The home in use: `--home`, else PINCER_HOME, else `~/.pincer`. Not the current directory: the agent, its memory and
 * its schedules must not change with where a command happens to be typed.
 */
export function resolveHome(env: NodeJS.ProcessEnv, flag?: string): string {
  return path.resolve(flag || env.PINCER_HOME || path.join(os.homedir(), '.pincer'));
}

export interface HostFlags {
  home?: string;
  http?: { port: number; host?: string };
  provider?: string;
}

/**
 * Read the host configuration. Explicit settings fail closed with a message naming the setting; only implicit
 * defaults fall back.
 */
export function loadHostConfig(env: NodeJS.ProcessEnv, flags: HostFlags = {}): HostConfig {
  const parsed = HostEnvSchema.safeParse(env);
  if (!parsed.success) throw new PincerError('config', `bad host environment: ${describeIssues(parsed.error)}`);
  const e = parsed.data;
  const timezone = env.TZ || systemTimeZone();
  if (!isValidTimeZone(timezone)) throw new PincerError('config', `unknown time zone "${timezone}" (TZ)`);
  // A runner setting, checked here too so that a typo stops the host at once instead of every runner later.
  try {
    parseAllowHosts(env.PINCER_ATTACHMENT_ALLOW_HOSTS ?? '');
  } catch (err) {
    throw new PincerError('config', errorMessage(err));
  }
  if (flags.http && !(Number.isInteger(flags.http.port) && flags.http.port >= 0 && flags.http.port < 65536)) {
    throw new PincerError('config', `--http: not a port: ${flags.http.port}`);
  }
  return {
    home: resolveHome(env, flags.home),
    defaultGroup:
      e.PINCER_DEFAULT_GROUP === 'none'
        ? null
        : {
            name: e.PINCER_DEFAULT_GROUP,
            provider: flags.provider ?? e.AGENT_PROVIDER,
            model: e.PINCER_MODEL ?? null,
            sessionMode: e.PINCER_SESSION_MODE,
            timezone,
            admins: idList(e.PINCER_ADMIN_USER_ID),
            triggerRules: { groups: e.PINCER_GROUP_TRIGGER, allowedUsers: idList(e.PINCER_ALLOWED_USERS) },
          },
    http: flags.http ? { port: flags.http.port, host: flags.http.host ?? e.PINCER_HTTP_HOST, hostnames: idList(e.PINCER_HTTP_HOSTNAMES), token: e.PINCER_HTTP_TOKEN, metricsToken: e.PINCER_METRICS_TOKEN, sseMaxBufferedBytes: e.PINCER_SSE_MAX_BUFFERED_BYTES } : null,
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
      env: runnerBaseEnv(env),
    },
    sweep: {
      intervalMs: e.PINCER_SWEEP_INTERVAL_MS,
      staleMs: e.PINCER_STALE_MS,
      retryBaseMs: e.PINCER_RETRY_BASE_MS,
      retryMaxMs: e.PINCER_RETRY_MAX_MS,
      maxTries: e.PINCER_MAX_TRIES,
      taskHistory: { keepRuns: e.PINCER_TASK_KEEP_RUNS, keepDays: e.PINCER_TASK_KEEP_DAYS },
    },
    delivery: { maxAttempts: e.PINCER_DELIVERY_ATTEMPTS, retryBaseMs: e.PINCER_DELIVERY_RETRY_MS },
  };
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
export function runnerBaseEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const extra = extraRunnerNames(env);
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
function extraRunnerNames(env: NodeJS.ProcessEnv): Set<string> {
  const names = (env.PINCER_CONTAINER_ENV ?? '').split(',').map((name) => name.trim()).filter(Boolean);
  const refused = names.filter((name) => isHostSecret(name) || PLATFORM_VARIABLES.includes(name));
  if (refused.length > 0) throw new PincerError('config', `PINCER_CONTAINER_ENV: ${refused.join(', ')} ${refused.length === 1 ? 'is a secret' : 'are secrets'} of the host and never passed to a runner`);
  return new Set(names);
}
