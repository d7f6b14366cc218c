import type { LaunchOptions } from './types.js';
import { sandboxProxyEnv } from './workspace.js';
import { isRunnerVariable, SYSTEM_VARIABLES } from '../shared/settings.js';
import { rawSetting } from '../shared/settings-load.js';

/**
 * The environment a sandboxed runner gets: only what the runner needs (`AGENT_PROVIDER`, the admin
 * user, provider-specific variables, `TZ`), never the host's other secrets. A process runner inherits the host's
 * environment as before; a container or bwrap runner starts from nothing and gets exactly this.
 */

/** Variables every runner may need. (Not the admin user id: the host checks admin rights from its own records.) */
const COMMON = new Set(['AGENT_PROVIDER', 'TZ', 'LANG', 'LC_ALL']);

/** Each provider's own variables; a provider variable of another provider than the configured one stays out. */
const PROVIDER_VARIABLES: Record<string, RegExp> = {
  claude: /^(ANTHROPIC_|CLAUDE_CODE_|CLAUDE_AGENT_SDK_|CLAUDE_|IS_SANDBOX$)/,
  codex: /^(OPENAI_|CODEX_)/,
  opencode: /^(OPENCODE_|OPENAI_)/,
  pincer: /^(ANTHROPIC_|OPENAI_)/,
  mock: /^MOCK_/,
};
/**
 * A host path means nothing inside a sandbox (`sandboxProviderDefaults` sets its own); the collector's address and
 * headers (OTEL_*) stay on the host: a sandbox's spans go through the host's relay (`sandboxProxyEnv`).
 */
const HOST_PATHS = new Set(['CLAUDE_CONFIG_DIR']);
const ANY_PROVIDER = /^(ANTHROPIC_|CLAUDE_|IS_SANDBOX$|OPENAI_|CODEX_|OPENCODE_|MOCK_)/;

/** `AGENT_PROVIDER` as the registry would name it (with its aliases); unset or `auto`/`default` → `auto`. */
export function providerFamily(name: string | undefined): string {
  const lower = (name ?? '').trim().toLowerCase();
  if (lower === '' || lower === 'default' || lower === 'auto') return 'auto';
  if (lower === 'claude-code') return 'claude';
  if (lower === 'codex-app-server') return 'codex';
  if (lower === 'echo') return 'mock';
  if (lower === 'builtin' || lower === 'openclaw' || lower === 'pi') return 'pincer';
  return lower;
}

/**
 * Pick the runner's variables from `env`: the common ones, the runner's settings of the registry, and the
 * variables of the configured provider only (with `auto`, every provider's, since `auto` chooses by credentials).
 * `extra` names (PINCER_CONTAINER_ENV) pass as given. Unset and empty values are left out.
 */
export function runnerEnvironment(env: NodeJS.ProcessEnv, extra: readonly string[] = []): Record<string, string> {
  const family = providerFamily(rawSetting(env, 'AGENT_PROVIDER'));
  const providerPatterns = family === 'auto' ? Object.values(PROVIDER_VARIABLES) : [PROVIDER_VARIABLES[family]].filter((p) => p !== undefined);
  const extraNames = new Set(extra);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '' || HOST_PATHS.has(name) || name.startsWith('OTEL_')) continue;
    // an allow-list (src/shared/settings.ts): a runner's own settings, never the system's (the sandbox sets PATH and
    // HOME itself) nor anything the registry does not name; of the provider variables only the configured provider's
    const pass =
      extraNames.has(name) ||
      COMMON.has(name) ||
      (isRunnerVariable(name) && !SYSTEM_VARIABLES.includes(name) && (!ANY_PROVIDER.test(name) || providerPatterns.some((pattern) => pattern.test(name))));
    if (pass) out[name] = value;
  }
  return out;
}

/**
 * Settings a sandbox adds for the provider. HOME is a tmpfs there, so Claude Code's state (sessions, transcripts)
 * would die with the sandbox and a restarted runner could not resume: keep it in the session folder instead. A host
 * path given by the host would mean nothing inside, so the host's CLAUDE_CONFIG_DIR is never passed. Codex runs without
 * its own sandbox unless CODEX_SANDBOX_MODE says otherwise.
 */
export function sandboxProviderDefaults(env: NodeJS.ProcessEnv): Record<string, string> {
  const family = providerFamily(rawSetting(env, 'AGENT_PROVIDER'));
  const out: Record<string, string> = {};
  if (family === 'claude' || family === 'auto') out.CLAUDE_CONFIG_DIR = '/workspace/.claude';
  // Codex's own sandbox is a bubblewrap of its own, which cannot start inside this one (no user namespace to map):
  // every shell command would fail. The runner's sandbox already confines it, as it does every other provider.
  if ((family === 'codex' || family === 'auto') && !rawSetting(env, 'CODEX_SANDBOX_MODE')) out.CODEX_SANDBOX_MODE = 'danger-full-access';
  return out;
}

/** What the `docker` CLI itself needs from the host's environment (and nothing that goes into the container). */
export function dockerCliEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'DOCKER_HOST', 'DOCKER_CONFIG', 'DOCKER_CONTEXT', 'DOCKER_CERT_PATH', 'DOCKER_TLS_VERIFY']) {
    if (env[name] !== undefined) out[name] = env[name];
  }
  return out;
}

/**
 * The environment of a runner in a sandbox (bubblewrap or Docker): the runner's variables, the sandbox's provider
 * defaults, and where the credential proxy's socket is inside. Both sandbox launchers start from exactly this.
 */
export function sandboxEnvironment(options: LaunchOptions, extra: readonly string[] = []): Record<string, string> {
  return { ...runnerEnvironment(options.env, extra), ...sandboxProviderDefaults(options.env), ...sandboxProxyEnv(options) };
}
