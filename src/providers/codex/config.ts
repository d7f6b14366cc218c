import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { CodexOptions, ThreadOptions } from '@openai/codex-sdk';
import { z } from 'zod';
import { childEnv } from '../child-env.js';
import { providerTimeoutMs } from '../deadline.js';
import { ProviderError } from '../registry.js';
import type { ModelRoute } from '../../runtime/model-route.js';
import { mcpClientSettings } from '../mcp-settings.js';
import type { McpServerConfig, QueryInput } from '../types.js';
import { keylessProxyKey } from '../../shared/proxy-env.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * Codex settings from the environment (docs/providers.md: sandbox mode, approval policy and network access come
 * from the environment) and their translation into the SDK's `CodexOptions` / `ThreadOptions`. An invalid value fails
 * closed at start-up with the variable's name.
 */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

const CodexEnvSchema = z.object({
  OPENAI_API_KEY: optional(z.string()),
  CODEX_API_KEY: optional(z.string()),
  OPENAI_BASE_URL: optional(z.url()),
  CODEX_MODEL: optional(z.string()),
  CODEX_SANDBOX_MODE: optional(z.enum(['read-only', 'workspace-write', 'danger-full-access'])),
  CODEX_APPROVAL_POLICY: optional(z.enum(['never', 'on-request', 'on-failure', 'untrusted'])),
  CODEX_NETWORK_ACCESS: optional(z.enum(['true', 'false'])),
  CODEX_MAX_RETRIES: optional(z.coerce.number().int().min(0)),
  CODEX_HOME: optional(z.string()),
  PINCER_WORKSPACE: optional(z.string()),
});

export interface CodexSettings {
  /** the API key (OPENAI_API_KEY, else CODEX_API_KEY); a local server may need none. */
  apiKey: string | undefined;
  /** an OpenAI-compatible server speaking the Responses API (OPENAI_BASE_URL); unset: the OpenAI API. */
  baseUrl: string | undefined;
  model: string | undefined;
  sandboxMode: NonNullable<ThreadOptions['sandboxMode']>;
  approvalPolicy: NonNullable<ThreadOptions['approvalPolicy']>;
  networkAccess: boolean | undefined;
  /** request/stream retries of the CLI (CODEX_MAX_RETRIES); unset: the CLI's defaults. */
  maxRetries: number | undefined;
  /** CODEX_HOME as configured; unset: `<workspace>/.codex`, so threads survive a runner restart. */
  home: string | undefined;
  workspace: string | undefined;
  timeoutMs: number;
  env: Record<string, string | undefined>;
}

/** The id under which a custom OpenAI-compatible server is configured (`openai` is reserved by Codex). */
const CUSTOM_PROVIDER_ID = 'pincer';

export function readCodexSettings(env: Record<string, string | undefined>, model?: string): CodexSettings {
  const parsed = CodexEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProviderError('config', `codex: invalid ${String(issue?.path[0] ?? 'setting')}: ${issue?.message ?? 'bad value'}`);
  }
  const e = parsed.data;
  const settings: CodexSettings = {
    apiKey: e.OPENAI_API_KEY ?? e.CODEX_API_KEY,
    baseUrl: e.OPENAI_BASE_URL,
    // `openai/gpt-5` (PINCER_MODEL's form, how auto hands an official OpenAI route to Codex) is `gpt-5` to Codex.
    model: e.CODEX_MODEL ?? model?.replace(/^openai\//, ''),
    sandboxMode: e.CODEX_SANDBOX_MODE ?? 'workspace-write',
    approvalPolicy: e.CODEX_APPROVAL_POLICY ?? 'never',
    networkAccess: e.CODEX_NETWORK_ACCESS === undefined ? undefined : e.CODEX_NETWORK_ACCESS === 'true',
    maxRetries: e.CODEX_MAX_RETRIES,
    home: e.CODEX_HOME,
    workspace: e.PINCER_WORKSPACE,
    timeoutMs: providerTimeoutMs(env),
    env,
  };
  // Behind the host's credential proxy the base URL is the proxy's, whatever the upstream: Codex's default model is fine.
  if (settings.baseUrl && !settings.model && rawSetting(env, 'PINCER_CREDENTIAL_PROXY') !== '1') {
    throw new ProviderError('config', 'codex: OPENAI_BASE_URL is set but no model: set CODEX_MODEL to a model the server serves');
  }
  return settings;
}

/** Where Codex keeps its threads for this session (created if missing). */
export function codexHome(settings: CodexSettings, cwd: string): string {
  const home = settings.home ?? path.join(settings.workspace ?? path.dirname(cwd), '.codex');
  fs.mkdirSync(home, { recursive: true });
  return home;
}

/** Variable name patterns kept from the agent's shell (Codex glob syntax); nothing the Pincer MCP server needs. */
const SHELL_EXCLUDES = ['*KEY*', '*TOKEN*', '*SECRET*', '*PASSWORD*', 'OPENAI_*', 'CODEX_*', 'ANTHROPIC_*'];

export function codexOptions(settings: CodexSettings, input: QueryInput, home: string): CodexOptions {
  const config: NonNullable<CodexOptions['config']> = {
    analytics: { enabled: false },
    // shell_snapshot runs the user's login shell in the background at start-up; killed with the turn on an
    // interrupt, it would outlive the CLI (and it reads the user's profile, which an agent session must not need).
    features: { plugins: false, shell_snapshot: false },
    // The agent's shell commands never get a key variable: Codex's own default passes OPENAI_API_KEY along. (Not
    // `inherit: core`: with it the Pincer MCP server no longer answers in time.)
    shell_environment_policy: { inherit: 'all', ignore_default_excludes: false, exclude: SHELL_EXCLUDES },
  };
  if (settings.model) config.model = settings.model;
  if (input.systemPrompt) config.developer_instructions = input.systemPrompt;
  if (settings.baseUrl) {
    const provider: Record<string, string | number> = {
      name: 'OpenAI-compatible server (Pincer)',
      base_url: settings.baseUrl,
      wire_api: 'responses',
      env_key: 'OPENAI_API_KEY',
    };
    if (settings.maxRetries !== undefined) {
      provider.request_max_retries = settings.maxRetries;
      provider.stream_max_retries = settings.maxRetries;
    }
    config.model_provider = CUSTOM_PROVIDER_ID;
    config.model_providers = { [CUSTOM_PROVIDER_ID]: provider };
  }
  const servers = Object.entries(input.mcpServers);
  const secretEnv: Record<string, string> = {};
  if (servers.length > 0) {
    const timing = mcpClientSettings(input.env);
    const converted = servers.flatMap(([name, server], index): [string, CodexMcpServer][] => {
      const codex = codexMcpServer(server, timing, index, secretEnv);
      return codex ? [[name, codex]] : [];
    });
    config.mcp_servers = Object.fromEntries(converted);
    // The secrets reach the CLI's environment only to be passed on to their server: never the agent's commands.
    const policy = config.shell_environment_policy as { exclude: string[] };
    policy.exclude = [...policy.exclude, ...Object.keys(secretEnv)];
  }
  const env = childEnv(settings.env, [], {
    CODEX_HOME: home,
    // A local server may need no key, but the custom provider's `env_key` must name a set variable; behind the proxy
    // the session's placeholder, so the proxy counts the calls as the session's.
    OPENAI_API_KEY: settings.baseUrl ? (settings.apiKey ?? keylessProxyKey(settings.env) ?? 'unused') : undefined,
    ...secretEnv,
  });
  return { config, env, apiKey: settings.baseUrl ? undefined : settings.apiKey };
}

/**
 * One server in Codex's `mcp_servers`. Without an approval mode MCP calls are refused under approval policy `never`;
 * MCP servers do not inherit the CLI's environment, so each gets its own `env`. Pincer's own is `required`: Codex gives
 * an optional server about a second, then starts the turn without its tools (on a busy machine `pincer mcp` takes
 * longer); a required one it waits for, up to `startup_timeout_sec`, and a server that cannot start fails the turn
 * (retried) instead of the agent answering without send_message & co. The user's are optional, with the start
 * deadline and the call timeout.
 */
type CodexMcpServer = Record<string, string | number | boolean | string[] | Record<string, string>>;

/**
 * The SDK hands Codex its configuration as `--config` arguments — a command line every local user can read — so a
 * secret value is never in it: it goes into the CLI's environment (`secretEnv`) and the server's entry only names
 * it (`env_vars` for a stdio server's variable of the same name, `env_http_headers` for a header). Undefined: two
 * servers want different values in one variable name, which the CLI's one environment cannot hold (the second is
 * left out rather than given the first's secret).
 */
function codexMcpServer(
  server: McpServerConfig,
  timing: { startMs: number; callMs: number },
  index: number,
  secretEnv: Record<string, string>,
): CodexMcpServer | undefined {
  const common = { default_tools_approval_mode: 'approve' };
  const secret = new Set(server.secretKeys ?? []);
  const plain = (values: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(values).filter(([key]) => !secret.has(key)));
  if (server.type === 'http') {
    const envHeaders: Record<string, string> = {};
    for (const [header, value] of Object.entries(server.headers)) {
      if (!secret.has(header)) continue;
      const variable = `PINCER_MCP_${index}_${header.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
      secretEnv[variable] = value;
      envHeaders[header] = variable;
    }
    return {
      ...common,
      url: server.url,
      http_headers: plain(server.headers),
      ...(Object.keys(envHeaders).length > 0 ? { env_http_headers: envHeaders } : {}),
      startup_timeout_sec: timing.startMs / 1000,
      tool_timeout_sec: timing.callMs / 1000,
    };
  }
  for (const key of secret) if (secretEnv[key] !== undefined && secretEnv[key] !== server.env[key]) return undefined;
  for (const key of secret) if (server.env[key] !== undefined) secretEnv[key] = server.env[key];
  const forwarded = [...secret].filter((key) => server.env[key] !== undefined);
  const base = {
    ...common,
    command: server.command,
    args: server.args,
    env: plain(server.env),
    ...(forwarded.length > 0 ? { env_vars: forwarded } : {}),
    ...(server.cwd ? { cwd: server.cwd } : {}),
  };
  return server.required
    ? { ...base, required: true, startup_timeout_sec: 30 }
    : { ...base, startup_timeout_sec: timing.startMs / 1000, tool_timeout_sec: timing.callMs / 1000 };
}

export function threadOptions(settings: CodexSettings, input: QueryInput): ThreadOptions {
  return {
    model: settings.model,
    // Codex's own sandbox refuses a writable root reached through a link (the session's `agent` link to its group
    // folder), so every shell command would fail: it gets the folder the link leads to.
    workingDirectory: realFolder(input.cwd),
    skipGitRepoCheck: true,
    sandboxMode: settings.sandboxMode,
    approvalPolicy: settings.approvalPolicy,
    networkAccessEnabled: settings.networkAccess,
    additionalDirectories: input.additionalDirectories?.length ? input.additionalDirectories.map(realFolder) : undefined,
  };
}

function realFolder(folder: string): string {
  try {
    return fs.realpathSync(folder);
  } catch {
    return folder; // missing: Codex reports it
  }
}

/**
 * Codex expects to work inside a git repository. Best effort: without git the
 * thread still runs, because `skipGitRepoCheck` is set.
 */
export function ensureGitRepository(cwd: string, log: (message: string) => void): void {
  // Loaded here, not at the top: this module is part of every runner's registration, and few runners run Codex.
  const { spawnSync } = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  const inside = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd, stdio: 'ignore' });
  if (inside.error || inside.status === 0) return;
  const init = spawnSync('git', ['init', '-q'], { cwd, stdio: 'ignore' });
  if (init.status === 0) log(`[codex] initialised a git repository in ${cwd}`);
}

export const CODEX_CREDENTIALS_HINT =
  'set OPENAI_API_KEY or CODEX_API_KEY (or OPENAI_BASE_URL and CODEX_MODEL for a local server, or CODEX_HOME holding a ChatGPT login)';

/**
 * Whether Codex can authenticate at all: a key, a local OpenAI-compatible server (which may need none), or a ChatGPT
 * login in an explicit CODEX_HOME. Without any, the Codex CLI would retry for minutes before failing.
 */
export function codexHasCredentials(env: Record<string, string | undefined>): boolean {
  if (rawSetting(env, 'OPENAI_API_KEY') || rawSetting(env, 'CODEX_API_KEY') || rawSetting(env, 'OPENAI_BASE_URL')) return true;
  const home = rawSetting(env, 'CODEX_HOME');
  return Boolean(home && fs.existsSync(path.join(home, 'auth.json')));
}

/**
 * The only route OpenAI may implicitly hand to Codex: the exact official HTTPS
 * Responses endpoint (Platform or ChatGPT) with no authored request behaviour. Completions adapters, custom endpoints
 * and routes with their own headers stay on the built-in runtime.
 */
export function codexSupportsRoute(route: ModelRoute): boolean {
  return (
    route.provider === 'openai' && route.api === 'openai-responses' && (route.official === 'openai-platform' || route.official === 'chatgpt') && !route.authored
  );
}

/** `auto` picks Codex when an OpenAI key is configured. */
export function codexUsableWith(env: Record<string, string | undefined>): boolean {
  return Boolean(rawSetting(env, 'OPENAI_API_KEY') || rawSetting(env, 'CODEX_API_KEY'));
}
