import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '@opencode-ai/sdk';
import { z } from 'zod';
import { childEnv } from '../child-env.js';
import { providerTimeoutMs } from '../deadline.js';
import { ProviderError } from '../registry.js';
import { mcpClientSettings, withoutCwd } from '../mcp-settings.js';
import type { McpServerConfig, PrepareInput } from '../types.js';
import { keylessProxyKey } from '../../shared/proxy-env.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * OpenCode settings from the environment (docs/providers.md: provider and model from `OPENCODE_PROVIDER` /
 * `OPENCODE_MODEL`) and the server configuration built from them. With `OPENCODE_BASE_URL` (or `OPENAI_BASE_URL`)
 * OpenCode talks to that OpenAI-compatible server through `@ai-sdk/openai-compatible`; without it, to the named
 * built-in provider with that provider's own key variable.
 */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

const OpenCodeEnvSchema = z.object({
  OPENCODE_PROVIDER: optional(z.string().regex(/^[a-z0-9][a-z0-9._-]*$/i, 'a provider id such as "anthropic"')),
  OPENCODE_MODEL: optional(z.string()),
  OPENCODE_BASE_URL: optional(z.url()),
  OPENAI_BASE_URL: optional(z.url()),
  OPENCODE_API_KEY: optional(z.string()),
  OPENAI_API_KEY: optional(z.string()),
  OPENCODE_BIN: optional(z.string()),
  OPENCODE_START_TIMEOUT_MS: optional(z.coerce.number().int().positive()),
  PINCER_WORKSPACE: optional(z.string()),
});

export interface OpenCodeSettings {
  providerId: string;
  modelId: string;
  /** an OpenAI-compatible server (Chat Completions); unset: the built-in provider `providerId`. */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  binary: string | undefined;
  startTimeoutMs: number;
  timeoutMs: number;
  workspace: string | undefined;
  env: Record<string, string | undefined>;
}

/** The provider id of a custom OpenAI-compatible server when OPENCODE_PROVIDER is not set. */
const CUSTOM_PROVIDER_ID = 'pincer';

export function readOpenCodeSettings(env: Record<string, string | undefined>, model?: string): OpenCodeSettings {
  const parsed = OpenCodeEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProviderError('config', `opencode: invalid ${String(issue?.path[0] ?? 'setting')}: ${issue?.message ?? 'bad value'}`);
  }
  const e = parsed.data;
  const baseUrl = e.OPENCODE_BASE_URL ?? e.OPENAI_BASE_URL;
  // OPENCODE_MODEL may be "provider/model" or just "model".
  const rawModel = e.OPENCODE_MODEL ?? model;
  const slash = rawModel?.indexOf('/') ?? -1;
  const providerId = e.OPENCODE_PROVIDER ?? (slash > 0 ? rawModel!.slice(0, slash) : baseUrl ? CUSTOM_PROVIDER_ID : undefined);
  const modelId = slash > 0 && !e.OPENCODE_PROVIDER ? rawModel!.slice(slash + 1) : rawModel;
  if (!providerId || !modelId) {
    throw new ProviderError(
      'config',
      'opencode: no model configured: set OPENCODE_MODEL (and OPENCODE_PROVIDER, or OPENCODE_BASE_URL for an OpenAI-compatible server)',
    );
  }
  return {
    providerId,
    modelId,
    baseUrl,
    // a keyless server behind the proxy: the session's placeholder, so the proxy counts the calls as the session's
    apiKey: e.OPENCODE_API_KEY ?? (baseUrl ? (e.OPENAI_API_KEY ?? keylessProxyKey(env)) : undefined),
    binary: e.OPENCODE_BIN,
    startTimeoutMs: e.OPENCODE_START_TIMEOUT_MS ?? 30_000,
    timeoutMs: providerTimeoutMs(env),
    workspace: e.PINCER_WORKSPACE,
    env,
  };
}

/** The OpenCode server configuration (passed as OPENCODE_CONFIG_CONTENT, so no file of the user's is read). */
export function openCodeConfig(settings: OpenCodeSettings, input: PrepareInput): Config {
  const config: Config = {
    autoupdate: false,
    share: 'disabled',
    snapshot: false,
    model: `${settings.providerId}/${settings.modelId}`,
    small_model: `${settings.providerId}/${settings.modelId}`,
    enabled_providers: [settings.providerId],
    // "Allow everything without asking": nobody is at a terminal to approve.
    permission: { edit: 'allow', bash: 'allow', webfetch: 'allow', doom_loop: 'allow', external_directory: 'allow' },
    // OpenCode's own question tool waits for a TUI answer; Pincer's ask_user_question is the way to ask.
    tools: { question: false },
  };
  if (settings.baseUrl) {
    config.provider = {
      [settings.providerId]: {
        npm: '@ai-sdk/openai-compatible',
        name: 'OpenAI-compatible server (Pincer)',
        options: { baseURL: settings.baseUrl, apiKey: settings.apiKey ?? 'unused' },
        models: { [settings.modelId]: { name: settings.modelId, tool_call: true, limit: { context: 128_000, output: 8_192 } } },
      },
    };
  }
  // A server with secrets is added over the server's API once it runs (`openCodeLateServers`): the configuration
  // travels in OpenCode's environment, which every shell command of the agent inherits.
  const servers = Object.entries(input.mcpServers).filter(([, server]) => !server.secretKeys?.length);
  if (servers.length > 0) config.mcp = Object.fromEntries(servers.map(([name, server]) => [name, openCodeMcpServer(server, input)]));
  return config;
}

/** One server in OpenCode's `mcp` form; `timeout` is how long OpenCode waits for its tools (its start deadline). */
export function openCodeMcpServer(server: McpServerConfig, input: Pick<PrepareInput, 'env'>): NonNullable<Config['mcp']>[string] {
  const { startMs } = mcpClientSettings(input.env);
  if (server.type === 'http') return { type: 'remote', url: server.url, headers: server.headers, enabled: true, timeout: startMs };
  const stdio = withoutCwd(server);
  return { type: 'local', command: [stdio.command, ...stdio.args], environment: stdio.env, enabled: true, ...(server.required ? {} : { timeout: startMs }) };
}

/** The servers with secrets, added through the running server's API (`client.mcp.add`), never through its environment. */
export function openCodeLateServers(input: Pick<PrepareInput, 'mcpServers' | 'env'>): [string, NonNullable<Config['mcp']>[string]][] {
  return Object.entries(input.mcpServers)
    .filter(([, server]) => Boolean(server.secretKeys?.length))
    .map(([name, server]) => [name, openCodeMcpServer(server, input)]);
}

/**
 * The server's environment: isolated XDG directories under `<workspace>/.opencode` (sessions live in the data dir,
 * so they survive a runner restart), the built-in provider's key variable, and the configuration.
 */
export function openCodeEnv(settings: OpenCodeSettings, cwd: string, config: Config): Record<string, string> {
  const root = path.join(settings.workspace ?? path.dirname(cwd), '.opencode');
  const dirs = { XDG_CONFIG_HOME: 'config', XDG_DATA_HOME: 'data', XDG_CACHE_HOME: 'cache', XDG_STATE_HOME: 'state' };
  const xdg: Record<string, string> = {};
  for (const [key, name] of Object.entries(dirs)) {
    xdg[key] = path.join(root, name);
    fs.mkdirSync(xdg[key]!, { recursive: true });
  }
  const keyVariable = `${settings.providerId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`;
  return childEnv(settings.env, settings.baseUrl ? [] : [keyVariable], {
    ...xdg,
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    // With a configured server there is no model catalogue to fetch (and no network to fetch it from).
    OPENCODE_DISABLE_MODELS_FETCH: settings.baseUrl ? '1' : undefined,
    OPENCODE_DISABLE_AUTOUPDATE: '1',
  });
}

export const OPENCODE_CREDENTIALS_HINT =
  "set OPENCODE_MODEL (provider/model, e.g. anthropic/claude-sonnet-4-5, with that provider's key) or OPENCODE_BASE_URL and OPENCODE_MODEL for a local server";

/** `auto` picks OpenCode when a model for it is configured; chosen explicitly, it needs one too (else its server retries forever). */
export function openCodeUsableWith(env: Record<string, string | undefined>): boolean {
  return Boolean(rawSetting(env, 'OPENCODE_MODEL'));
}
