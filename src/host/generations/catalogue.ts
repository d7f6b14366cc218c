import { getModels, type KnownProvider } from '@mariozechner/pi-ai';
import { registerBuiltInProviders } from '../../providers/index.js';
import { selectProviderFor } from '../../providers/registry.js';
import { hasProviderPrefix, isModelRouteError, resolveModelRoute, routeApiKey, type ModelRoute } from '../../runtime/model-route.js';
import type { Selection } from '../../runtime/selection.js';
import type { CatalogueModel, HostCredentials, RegistryEntry } from './types.js';
import type { ExtensionModel } from './extensions.js';

/** The model providers whose catalogue models every group lists (the ones the credential proxy can carry keys for). */
const CATALOGUE_PROVIDERS: KnownProvider[] = ['anthropic', 'openai'];

let catalogueEntries: readonly RegistryEntry[] | undefined;

/** pi-ai's catalogue models of {@link CATALOGUE_PROVIDERS}, read once per process (the catalogue ships in the package). */
export function catalogueRegistry(): readonly RegistryEntry[] {
  catalogueEntries ??= Object.freeze(
    CATALOGUE_PROVIDERS.flatMap((provider) =>
      getModels(provider).map((model) =>
        Object.freeze({
          ref: `${provider}/${model.id}`,
          source: 'catalogue' as const,
          name: model.name,
          contextWindow: model.contextWindow,
          maxTokens: model.maxTokens,
          price: { input: model.cost.input, output: model.cost.output, cacheRead: model.cost.cacheRead, cacheWrite: model.cost.cacheWrite },
        }),
      ),
    ),
  );
  return catalogueEntries;
}

/**
 * The registry of a group: its extensions' models, the catalogue, and its configured model first when neither has
 * it. An extension's model of the same reference as a catalogue one replaces it (its harness runs it).
 */
export function groupRegistry(model: string | null, extensionModels: readonly ExtensionModel[] = []): RegistryEntry[] {
  const extensions: RegistryEntry[] = extensionModels.map((entry) => ({
    ref: entry.ref,
    source: 'extension',
    name: entry.name ?? entry.ref.slice(entry.ref.indexOf('/') + 1),
    harness: entry.harness,
    ...(entry.contextWindow !== undefined ? { contextWindow: entry.contextWindow } : {}),
    ...(entry.maxTokens !== undefined ? { maxTokens: entry.maxTokens } : {}),
  }));
  const known = [...extensions, ...catalogueRegistry().filter((entry) => !extensions.some((e) => e.ref === entry.ref))];
  if (!model || !hasProviderPrefix(model) || known.some((entry) => entry.ref === model.trim())) return known;
  return [{ ref: model.trim(), source: 'configured', name: model.trim().slice(model.trim().indexOf('/') + 1) }, ...known];
}

/**
 * Selections already made in one publication pass, by the group's policy and the route's shape: many models (and
 * many groups) share one, and probing the providers for each would make a pass of 200 groups slow.
 */
export type SelectionMemo = Map<string, Selection>;

/** Every model of `registry` as a group with `policy` and `model` configured can use it under `credentials`. */
export function projectCatalogue(
  registry: readonly RegistryEntry[],
  { policy, model, credentials, memo }: { policy: string; model: string | null; credentials: HostCredentials; memo: SelectionMemo },
): CatalogueModel[] {
  const env = selectionEnv(credentials);
  return registry.map((entry): CatalogueModel => {
    const configured = model !== null && entry.ref === model.trim();
    const slash = entry.ref.indexOf('/');
    const base = {
      ref: entry.ref,
      provider: entry.ref.slice(0, slash),
      id: entry.ref.slice(slash + 1),
      name: entry.name,
      source: entry.source,
      configured,
      contextWindow: entry.contextWindow ?? null,
      maxTokens: entry.maxTokens ?? null,
      price: entry.price ?? null,
    };
    if (entry.source === 'extension') {
      // run by its extension's harness in the runner: the host knows no route of it, and cannot check the harness
      // loads (only runners run extension code) — the runner's log says so when it does not
      return { ...base, api: null, endpoint: null, viaProxy: false, harness: entry.harness ?? null, available: true };
    }
    let route: ModelRoute;
    try {
      route = resolveModelRoute({ ref: entry.ref, env });
    } catch (err) {
      if (!isModelRouteError(err)) throw err;
      return { ...base, api: null, endpoint: null, viaProxy: false, harness: null, available: false, unavailable: err.message };
    }
    const routed = {
      ...base,
      api: route.api ?? null,
      endpoint: route.baseUrl ?? null,
      viaProxy: viaProxy(route, credentials),
      contextWindow: route.contextWindow ?? base.contextWindow,
      maxTokens: route.maxTokens ?? base.maxTokens,
    };
    const selection = selectionFor(policy, route, env, memo);
    const harness = selection.ok ? selection.provider : null;
    if (!selection.ok) return { ...routed, harness, available: false, unavailable: selection.message };
    if (selection.provider === 'pincer' && !route.keyOptional && routeApiKey(route, env) === undefined) {
      const names = route.apiKeyEnv;
      return { ...routed, harness, available: false, unavailable: `no key: set ${names.join(' or ')} (pincer secret set ${names[0]})` };
    }
    return { ...routed, harness, available: true };
  });
}

/** Runners reach the route's upstream through the credential proxy (anthropic; openai and local models: OpenAI's). */
function viaProxy(route: ModelRoute, credentials: HostCredentials): boolean {
  if (route.provider === 'anthropic') return credentials.upstreams.anthropic !== undefined;
  if (route.provider === 'openai' || route.provider === 'local') return credentials.upstreams.openai !== undefined;
  return false;
}

/** The group's prepared selection: the runtime its runners start with, and why (the selection rules, in its scope). */
export function groupSelection(policy: string, model: string | null, credentials: HostCredentials): Selection {
  registerBuiltInProviders(); // light (no SDK is imported) and idempotent: the registry the runners choose from
  return selectProviderFor({ session: policy, ...(model ? { model: { id: model } } : {}) }, selectionEnv(credentials));
}

/** A runner of the host gets its policy from its group, never from the host's own AGENT_PROVIDER. */
function selectionEnv(credentials: HostCredentials): Record<string, string | undefined> {
  return { ...credentials.env, AGENT_PROVIDER: undefined };
}

function selectionFor(policy: string, route: ModelRoute, env: Record<string, string | undefined>, memo: SelectionMemo): Selection {
  const key = [
    policy,
    route.provider,
    route.api,
    route.official ?? route.baseUrl,
    route.authored,
    route.keyOptional,
    routeApiKey(route, env) !== undefined,
  ].join('|');
  let selection = memo.get(key);
  if (!selection) {
    selection = selectProviderFor({ session: policy, model: { id: route.ref } }, env);
    memo.set(key, selection);
  }
  return selection;
}
