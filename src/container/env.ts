import type { LaunchOptions } from './types.js';
import { sandboxProxyEnv } from './workspace.js';

/**
 * The environment a sandboxed runner gets: only what the runner needs (seed "容器启动": `AGENT_PROVIDER`, the admin
 * user, provider-specific variables, `TZ`), never the host's other secrets. A process runner inherits the host's
 * environment as before; a container or bwrap runner starts from nothing and gets exactly this.
 */

/** Variables every runner may need. (Not the admin user id: the host checks admin rights from its own records.) */
const COMMON = new Set(['AGENT_PROVIDER', 'TZ', 'LANG', 'LC_ALL']);

/**
 * Pincer's own settings (`PINCER_*`: runner tuning, provider timeouts) pass, except the host's: its home, HTTP token,
 * launcher settings. A name that looks like a credential never passes on the strength of the prefix alone.
 */
const HOST_ONLY = /^PINCER_(HOME|WORKSPACE|HTTP_|HOST_|RUNNER|DOCKER_|CONTAINER_|BWRAP_)|TOKEN|SECRET|PASSWORD|PASSWD/;

/** Each provider's own variables (credentials, base URL, model, CLI switches); keys are registry names. */
const PROVIDER_VARIABLES: Record<string, RegExp> = {
  claude: /^(ANTHROPIC_|CLAUDE_CODE_|CLAUDE_AGENT_SDK_|IS_SANDBOX$)/,
  codex: /^(OPENAI_|CODEX_)/,
  opencode: /^(OPENCODE_|OPENAI_)/,
  pincer: /^(ANTHROPIC_|OPENAI_)/,
  mock: /^MOCK_/,
};

/** `AGENT_PROVIDER` as the registry would name it (aliases of SPEC §4); unset or `auto`/`default` → `auto`. */
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
 * Pick the runner's variables from `env`: the common ones, `PINCER_*` settings that are not the host's, and the
 * variables of the configured provider only (with `auto`, every provider's, since `auto` chooses by credentials).
 * `extra` names (PINCER_CONTAINER_ENV) pass as given. Unset and empty values are left out.
 */
export function runnerEnvironment(env: NodeJS.ProcessEnv, extra: readonly string[] = []): Record<string, string> {
  const family = providerFamily(env.AGENT_PROVIDER);
  const providerPatterns =
    family === 'auto' ? Object.values(PROVIDER_VARIABLES) : [PROVIDER_VARIABLES[family]].filter((p) => p !== undefined);
  const extraNames = new Set(extra);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '') continue;
    const pass =
      extraNames.has(name) ||
      COMMON.has(name) ||
      (name.startsWith('PINCER_') && !HOST_ONLY.test(name)) ||
      providerPatterns.some((pattern) => pattern.test(name));
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
  const family = providerFamily(env.AGENT_PROVIDER);
  const out: Record<string, string> = {};
  if (family === 'claude' || family === 'auto') out.CLAUDE_CONFIG_DIR = '/workspace/.claude';
  // Codex's own sandbox is a bubblewrap of its own, which cannot start inside this one (no user namespace to map):
  // every shell command would fail. The runner's sandbox already confines it, as it does every other provider.
  if ((family === 'codex' || family === 'auto') && !env.CODEX_SANDBOX_MODE) out.CODEX_SANDBOX_MODE = 'danger-full-access';
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
