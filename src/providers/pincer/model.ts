import { getModel, type Api, type KnownProvider, type Model } from '@mariozechner/pi-ai';
import { isModelRouteError, resolveModelRoute, routeApiKey, type ModelRoute, type ModelSettings } from '../../runtime/model-route.js';
import { ProviderError } from '../registry.js';
import { keylessProxyKey } from '../../shared/proxy-env.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * The pi-ai model the built-in runtime talks to, built from the configured route (src/runtime/model-route.ts): the
 * catalogue's entry when pi-ai knows the model (context window, prices for the cost on the result), re-pointed at the
 * configured endpoint; otherwise a custom model with conservative defaults. Local servers get the plainest Chat
 * Completions dialect (system role, `max_tokens`, no `store`), which every OpenAI-compatible server accepts.
 */
export interface BuiltModel {
  route: ModelRoute;
  model: Model<Api>;
  apiKey: string | undefined;
  /** pi-ai's catalogue knows the model's prices, so results carry a cost */
  priced: boolean;
}

const DEFAULT_CONTEXT_WINDOW = 128_000;
const DEFAULT_MAX_TOKENS = 8192;

export function buildModel(
  ref: string,
  entries: { models?: Record<string, ModelSettings>; modelProviders?: Record<string, ModelSettings> },
  env: Record<string, string | undefined>,
): BuiltModel {
  let route: ModelRoute;
  try {
    route = resolveModelRoute({ ref, ...entries, env });
  } catch (err) {
    if (isModelRouteError(err)) throw new ProviderError('config', `pincer: ${err.message}`);
    throw err;
  }
  const catalogue = lookup(route);
  const api = route.api ?? catalogue?.api;
  const baseUrl = route.via ?? route.baseUrl ?? catalogue?.baseUrl;
  if (!api || !baseUrl) {
    throw new ProviderError('config', `pincer: model "${ref}" is not in the model catalogue; give it an api and a baseUrl in a model entry`);
  }
  const contextWindow = numberFromEnv(rawSetting(env, 'PINCER_CONTEXT_WINDOW')) ?? route.contextWindow ?? catalogue?.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  const model: Model<Api> = {
    id: route.model,
    name: catalogue?.name ?? route.model,
    api,
    provider: route.provider === 'local' ? 'local' : route.provider,
    baseUrl,
    // a reasoning level in the model entry says the model reasons, whatever the catalogue knows
    reasoning: (catalogue?.reasoning ?? false) || route.params.reasoning !== undefined,
    input: catalogue?.input ?? ['text'],
    cost: catalogue?.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow,
    maxTokens: Math.min(route.maxTokens ?? catalogue?.maxTokens ?? DEFAULT_MAX_TOKENS, Math.max(256, Math.floor(contextWindow / 2))),
    ...(catalogue?.thinkingLevelMap ? { thinkingLevelMap: catalogue.thinkingLevelMap } : {}),
    ...(Object.keys(headersOf(entries, route)).length ? { headers: headersOf(entries, route) } : {}),
  };
  if (api === 'openai-completions' && !route.official) {
    (model as Model<'openai-completions'>).compat = {
      supportsStore: false,
      supportsDeveloperRole: false,
      supportsReasoningEffort: route.params.reasoning !== undefined,
      maxTokensField: 'max_tokens',
    };
  }
  const apiKey = routeApiKey(route, env);
  if (!apiKey && !route.keyOptional) {
    throw new ProviderError('no-credentials', `pincer: model "${ref}" needs a key: set ${route.apiKeyEnv.join(' or ')}`);
  }
  // The OpenAI client refuses to start without a key; a local server ignores it. Through the host's proxy the key is
  // the session's placeholder, so the proxy counts the calls as the session's (it never reaches the server).
  const keyless = route.keyOptional ? (route.via && keylessProxyKey(env)) || 'not-needed' : undefined;
  return { route, model, apiKey: apiKey ?? keyless, priced: catalogue !== undefined };
}

function lookup(route: ModelRoute): Model<Api> | undefined {
  const provider = route.provider === 'local' ? undefined : (route.provider as KnownProvider);
  if (!provider) return undefined;
  return getModel(provider, route.model as never) as Model<Api> | undefined;
}

function headersOf(
  entries: { models?: Record<string, ModelSettings>; modelProviders?: Record<string, ModelSettings> },
  route: ModelRoute,
): Record<string, string> {
  return { ...entries.modelProviders?.[route.provider]?.headers, ...entries.models?.[route.ref]?.headers };
}

function numberFromEnv(value: string | undefined): number | undefined {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
