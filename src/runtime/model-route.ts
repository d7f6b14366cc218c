/**
 * The effective provider route of a configured model: which wire API, which endpoint, which
 * key variables, and whether the configuration authored request behaviour of its own. Pure and light (no SDK import):
 * the selection policy, `pincer doctor` and the built-in runtime resolve a model the same way.
 *
 * A model is written `<provider>/<model>` (`anthropic/claude-sonnet-4-5`, `openai/gpt-5`, `local/qwen3:8b`). Keys and
 * base URLs come from the usual variables (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL) or
 * from a model entry (config.json `models`) or a provider entry (config.json `modelProviders`); the model entry wins.
 * With OPENAI_BASE_URL pointing at a custom server the route is Chat Completions unless an entry says otherwise.
 */
import type { ModelApi, ModelParams, ModelSettings } from '../db/model-settings.js';
import { upstreamBaseUrl, type ProxiedBaseUrl } from '../shared/proxy-env.js';
import { PincerError } from '../shared/errors.js';

export type { ModelApi, ModelSettings } from '../db/model-settings.js';

/** The exact official HTTPS endpoints (a harness may claim only these implicitly). */
export const OFFICIAL_ENDPOINTS = {
  'openai-platform': 'https://api.openai.com/v1',
  chatgpt: 'https://chatgpt.com/backend-api',
  anthropic: 'https://api.anthropic.com',
} as const;
export type OfficialEndpoint = keyof typeof OFFICIAL_ENDPOINTS;

const OFFICIAL_HOSTS = new Set(['api.openai.com', 'chatgpt.com', 'api.anthropic.com']);

export interface ModelRoute {
  /** the model as configured, e.g. `openai/gpt-5` */
  ref: string;
  /** the model provider (prefix): `anthropic`, `openai`, `local`, or another provider pi-ai knows */
  provider: string;
  /** the model id sent to the API, e.g. `gpt-5` */
  model: string;
  /** the wire API; undefined for a provider whose API only the runtime's catalogue knows */
  api: ModelApi | undefined;
  /** the endpoint; undefined: the catalogue's default for the provider */
  baseUrl: string | undefined;
  /** where requests go when that is not `baseUrl`: the host's credential proxy standing in for it */
  via: string | undefined;
  /** which exact official HTTPS endpoint this is, if any */
  official: OfficialEndpoint | undefined;
  /** the configuration authored request behaviour (headers, a custom endpoint for an official provider) */
  authored: boolean;
  /** variables that may hold the key, in order; empty when the endpoint needs none (local) */
  apiKeyEnv: string[];
  /** a key is optional (local and custom servers) */
  keyOptional: boolean;
  contextWindow: number | undefined;
  maxTokens: number | undefined;
  /** request parameters of the model entry over those of the provider entry (temperature, max output, reasoning) */
  params: ModelParams;
  /** the runtime policy of the model entry, then of the provider entry */
  policy: { model?: string; provider?: string };
}

/** Kept as a subclass: selection tells an insecure route from a malformed one by `reason`. */
export class ModelRouteError extends PincerError {
  constructor(
    /** `format`: not `<provider>/<model>`; `missing-base-url`: local without a URL; `insecure`: plaintext HTTP to an official host */
    readonly reason: 'format' | 'missing-base-url' | 'insecure' | 'bad-url',
    message: string,
  ) {
    super('config', message);
    this.name = 'ModelRouteError';
  }
}

export function isModelRouteError(err: unknown): err is ModelRouteError {
  return err instanceof ModelRouteError;
}

export interface RouteInput {
  /** PINCER_MODEL, else config.json `model` */
  ref: string;
  models?: Record<string, ModelSettings>;
  modelProviders?: Record<string, ModelSettings>;
  env: Record<string, string | undefined>;
}

/** Whether `ref` names a model with a provider prefix (only those have a route the selection policy can see). */
export function hasProviderPrefix(ref: string | undefined): boolean {
  return ref !== undefined && /^[a-z0-9][a-z0-9._-]*\/.+/i.test(ref.trim());
}

/** Resolve a configured model to its route. Throws ModelRouteError with one clear line. */
export function resolveModelRoute({ ref, models = {}, modelProviders = {}, env }: RouteInput): ModelRoute {
  const trimmed = ref.trim();
  const slash = trimmed.indexOf('/');
  if (slash <= 0 || slash === trimmed.length - 1) {
    throw new ModelRouteError('format', `model "${ref}" needs a provider prefix: anthropic/<model>, openai/<model> or local/<model>`);
  }
  const provider = trimmed.slice(0, slash).toLowerCase();
  const model = trimmed.slice(slash + 1);
  const modelEntry = models[trimmed] ?? {};
  const providerEntry = modelProviders[provider] ?? {};
  const entry: ModelSettings = { ...providerEntry, ...modelEntry, headers: { ...providerEntry.headers, ...modelEntry.headers } };
  const headersAuthored = Object.keys(entry.headers ?? {}).length > 0;
  // Behind the host's credential proxy the variables hold the proxy's address: the route is decided on the upstream.
  const envUrl = (name: ProxiedBaseUrl): string | undefined => upstreamBaseUrl(env, name);
  const viaFor = (name: ProxiedBaseUrl, url: string | undefined): string | undefined => {
    const own = (env[name] ?? '').trim() || undefined;
    return url !== undefined && entry.baseUrl === undefined && own !== undefined && own !== url ? own.replace(/\/+$/, '') : undefined;
  };

  let api: ModelApi | undefined;
  let baseUrl: string | undefined;
  let apiKeyEnv: string[];
  let keyOptional = false;
  let via: string | undefined;
  if (provider === 'anthropic') {
    baseUrl = entry.baseUrl ?? envUrl('ANTHROPIC_BASE_URL') ?? OFFICIAL_ENDPOINTS.anthropic;
    via = viaFor('ANTHROPIC_BASE_URL', baseUrl);
    api = entry.api ?? 'anthropic-messages';
    apiKeyEnv = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'];
  } else if (provider === 'openai') {
    baseUrl = entry.baseUrl ?? envUrl('OPENAI_BASE_URL') ?? OFFICIAL_ENDPOINTS['openai-platform'];
    via = viaFor('OPENAI_BASE_URL', baseUrl);
    // A custom server (OPENAI_BASE_URL) speaks Chat Completions unless configured otherwise.
    const officialOpenAI = sameEndpoint(baseUrl, OFFICIAL_ENDPOINTS['openai-platform']) || sameEndpoint(baseUrl, OFFICIAL_ENDPOINTS.chatgpt);
    api = entry.api ?? (officialOpenAI ? 'openai-responses' : 'openai-completions');
    apiKeyEnv = ['OPENAI_API_KEY'];
    keyOptional = !isOfficialHost(baseUrl);
  } else if (provider === 'local') {
    baseUrl = entry.baseUrl ?? envUrl('OPENAI_BASE_URL');
    via = viaFor('OPENAI_BASE_URL', baseUrl);
    if (!baseUrl) {
      throw new ModelRouteError(
        'missing-base-url',
        `model "${ref}": local models need OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1) or a baseUrl in the model entry`,
      );
    }
    api = entry.api ?? 'openai-completions';
    apiKeyEnv = ['OPENAI_API_KEY'];
    keyOptional = true;
  } else {
    // Another provider pi-ai's catalogue knows (openrouter, groq, …): its API and endpoint come from the catalogue.
    baseUrl = entry.baseUrl;
    api = entry.api;
    apiKeyEnv = [`${provider.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`];
    keyOptional = baseUrl !== undefined && !isOfficialHost(baseUrl);
  }
  if (entry.apiKeyEnv) apiKeyEnv = [entry.apiKeyEnv];
  if (baseUrl !== undefined) checkUrl(ref, baseUrl);
  const official = baseUrl === undefined ? undefined : officialEndpoint(baseUrl);
  return {
    ref: trimmed,
    provider,
    model,
    api,
    baseUrl: baseUrl?.replace(/\/+$/, ''),
    via,
    official,
    authored: headersAuthored,
    apiKeyEnv,
    keyOptional,
    contextWindow: entry.contextWindow,
    maxTokens: entry.maxTokens,
    params: { ...providerEntry.params, ...modelEntry.params },
    policy: { model: modelEntry.provider, provider: providerEntry.provider },
  };
}

/** The first non-empty key variable of the route, if any. */
export function routeApiKey(route: ModelRoute, env: Record<string, string | undefined>): string | undefined {
  for (const name of route.apiKeyEnv) {
    const value = (env[name] ?? '').trim();
    if (value) return value;
  }
  return undefined;
}

/** One line for logs: `openai/gpt-5 via openai-responses at https://api.openai.com/v1 (official)`. */
export function describeRoute(route: ModelRoute): string {
  const where = route.baseUrl ?? 'the catalogue endpoint';
  const tags = [
    route.official ? 'official' : route.baseUrl ? 'custom endpoint' : undefined,
    route.authored ? 'authored headers' : undefined,
    route.via ? `through the host's credential proxy at ${route.via}` : undefined,
  ].filter(Boolean);
  return `${route.ref} via ${route.api ?? 'the catalogue API'} at ${where}${tags.length ? ` (${tags.join(', ')})` : ''}${describeParams(route.params)}`;
}

/** `, params temperature 0.2, maxTokens 512, reasoning low`, or nothing. */
export function describeParams(params: ModelParams): string {
  const set = Object.entries(params).filter(([, v]) => v !== undefined);
  return set.length ? `, params ${set.map(([k, v]) => `${k} ${String(v)}`).join(', ')}` : '';
}

function checkUrl(ref: string, baseUrl: string): void {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ModelRouteError('bad-url', `model "${ref}": base URL "${baseUrl}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ModelRouteError('bad-url', `model "${ref}": base URL "${baseUrl}" must be http(s)`);
  }
  // Plaintext to an official endpoint would send the key in the clear: refused, never silently upgraded.
  if (url.protocol === 'http:' && OFFICIAL_HOSTS.has(url.hostname.toLowerCase())) {
    throw new ModelRouteError('insecure', `model "${ref}": refusing plaintext HTTP to the official endpoint ${url.hostname}; use https://${url.hostname}`);
  }
}

function isOfficialHost(baseUrl: string): boolean {
  try {
    return OFFICIAL_HOSTS.has(new URL(baseUrl).hostname.toLowerCase());
  } catch {
    // not a URL: not an official host (the URL check reports it)
    return false;
  }
}

function officialEndpoint(baseUrl: string): OfficialEndpoint | undefined {
  for (const [name, url] of Object.entries(OFFICIAL_ENDPOINTS) as [OfficialEndpoint, string][]) {
    if (sameEndpoint(baseUrl, url)) return name;
  }
  return undefined;
}

/** Exact match after dropping a trailing slash and lower-casing scheme and host (the path is compared as written). */
function sameEndpoint(a: string, b: string): boolean {
  const norm = (value: string): string => {
    try {
      const url = new URL(value);
      return `${url.protocol}//${url.host.toLowerCase()}${url.pathname.replace(/\/+$/, '')}${url.search}`;
    } catch {
      // not a URL: compared as written
      return value;
    }
  };
  return norm(a) === norm(b);
}
