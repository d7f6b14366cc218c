import { AUTO_PREFERENCE, KNOWN_PROVIDER_REQUIREMENTS, probeProvider, type ProviderRequirements } from '../runtime/provider-probe.js';
import type { ModelSettings } from '../db/model-settings.js';
import { hasProviderPrefix, isModelRouteError, resolveModelRoute, type ModelRoute } from '../runtime/model-route.js';
import { describeSelection, selectProvider, type ProviderProbe, type Selection, type SelectionInput } from '../runtime/selection.js';
import type { AgentProvider, ProviderConfig } from './types.js';
import { readSetting, settingOrDefault } from '../shared/settings-load.js';
import { PincerError } from '../shared/errors.js';

/**
 * Provider registry: names are normalised (lower case, aliases), an
 * explicit unknown name fails closed with an exact message, and only `auto` may choose among providers.
 */
/**
 * unknown: no such provider; not-installed: known, but not in this build or its SDK/binary is missing; no-credentials:
 * configured explicitly without credentials; unavailable: the provider's own start-up check failed; config: a setting
 * it reads is invalid; insecure-route: the model's route is plaintext HTTP to an official endpoint.
 */
export type ProviderErrorCode = 'unknown' | 'unavailable' | 'config' | 'not-installed' | 'no-credentials' | 'insecure-route';

/** Kept as a subclass: selection and doctor branch on the provider's own `reason`. */
export class ProviderError extends PincerError {
  constructor(
    readonly reason: ProviderErrorCode,
    message: string,
  ) {
    super(reason === 'unavailable' ? 'unavailable' : 'config', message);
    this.name = 'ProviderError';
  }
}

export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}

export interface ProviderRegistration {
  name: string;
  aliases?: string[];
  /** build the provider; may import its SDK lazily. Throws ProviderError for bad configuration. */
  create(config: ProviderConfig): AgentProvider | Promise<AgentProvider>;
  /** For `auto`: whether this provider can run with `env` (credentials present). Absent → never chosen by auto. */
  usableWith?(env: Record<string, string | undefined>): boolean;
  /**
   * For an explicit choice: whether the provider can authenticate at all (a key, a cloud switch, a stored login); when
   * false the policy refuses it with `no-credentials`. Absent: the provider's factory decides. `auto` uses `usableWith`.
   */
  hasCredentials?(env: Record<string, string | undefined>, route?: ModelRoute): boolean;
  /**
   * For `auto` with a configured model: whether this harness runs that route (API, endpoint, request behaviour). A
   * model's provider prefix alone must never decide it. Absent: the harness claims no route.
   */
  supportsRoute?(route: ModelRoute): boolean;
  /** What to set when `hasCredentials` is false (`set OPENCODE_MODEL …`); default: the requirements table's variables. */
  credentialsHint?: string;
  /** Credentials and binaries this provider needs; defaults to Pincer's table for known names (provider-probe.ts). */
  requirements?: ProviderRequirements;
}

const registrations = new Map<string, ProviderRegistration>();
/** Provider aliases (docs/providers.md), known even before the provider registers. */
const aliases = new Map<string, string>([
  ['claude-code', 'claude'],
  ['codex-app-server', 'codex'],
  ['builtin', 'pincer'],
  ['openclaw', 'pincer'],
  ['pi', 'pincer'],
]);

export function registerProvider(registration: ProviderRegistration): void {
  registrations.set(registration.name, registration);
  for (const alias of registration.aliases ?? []) aliases.set(alias, registration.name);
}

export function knownProviders(): string[] {
  return [...registrations.keys()];
}

/** `Claude-Code` → `claude`; unset or `default` → `auto`. Unknown names come back normalised but unresolved. */
export function normaliseProviderName(name: string | undefined): string {
  const lower = (name ?? '').trim().toLowerCase();
  if (lower === '' || lower === 'default') return 'auto';
  return aliases.get(lower) ?? lower;
}

export interface ProviderChoice {
  name: string;
  reason: string;
  /** the decision with every candidate, for the log */
  description: string;
}

/**
 * Every provider this build knows (registered or in the requirements table), in `auto` preference order; with a
 * model route, whether each harness supports it and whether the built-in runtime has the route's key.
 */
export function probeProviders(env: Record<string, string | undefined>, route?: ModelRoute): ProviderProbe[] {
  const names = [...new Set([...AUTO_PREFERENCE, ...Object.keys(KNOWN_PROVIDER_REQUIREMENTS), ...registrations.keys()])];
  return names.map((name) => {
    const registration = registrations.get(name);
    const requirements = registration?.requirements ??
      KNOWN_PROVIDER_REQUIREMENTS[name] ?? { credentialsEnv: [], packages: [], executables: [], auto: Boolean(registration?.usableWith) };
    const probe = {
      ...probeProvider(name, registration !== undefined, requirements, env),
      supportsRoute: route ? registration?.supportsRoute?.(route) === true : undefined,
    };
    if (!registration || !(registration.usableWith || registration.hasCredentials)) return probe;
    // The provider's own tests win over the table: auto uses usableWith; an explicit choice is refused here only by
    // hasCredentials, else the provider's factory checks what it really needs (a stored login may do).
    const credentials = registration.hasCredentials ? registration.hasCredentials(env, route) : true;
    const autoCredentials = registration.usableWith ? registration.usableWith(env) : credentials;
    return {
      ...probe,
      credentials,
      autoCredentials,
      noCredentials: credentials
        ? undefined
        : (registration.credentialsHint ?? probe.noCredentials ?? (route ? `set ${route.apiKeyEnv.join(' or ')}` : 'credentials missing')),
    };
  });
}

/**
 * Apply the selection policy (src/runtime/selection.ts) to this build's providers. `auto` falls back to
 * PINCER_AUTO_FALLBACK when set (`pincer chat` sets `mock`, so it works without a key), else to `claude`.
 */
export function selectProviderFor(policy: SelectionPolicy, env: Record<string, string | undefined>): Selection {
  const ref = policy.model?.id ?? (readSetting(env, 'PINCER_MODEL') || undefined);
  let route: ModelRoute | undefined;
  let routeError: string | undefined;
  if (ref && hasProviderPrefix(ref)) {
    try {
      route = resolveModelRoute({ ref, models: policy.models, modelProviders: policy.modelProviders, env });
    } catch (err) {
      if (!isModelRouteError(err)) throw err;
      routeError = err.message;
    }
  }
  const model = ref ? { id: ref, provider: policy.model?.provider ?? policy.models?.[ref]?.provider, providerEntry: route?.policy.provider } : undefined;
  return selectProvider({
    session: policy.session,
    group: policy.group,
    model,
    route,
    routeError,
    probes: probeProviders(env, route),
    normalise: normaliseProviderName,
    fallback: settingOrDefault(env, 'PINCER_AUTO_FALLBACK'),
  });
}

/** What the policy is applied to: the layers, the model (else PINCER_MODEL) and config.json's model/provider entries. */
export interface SelectionPolicy extends Pick<SelectionInput, 'session' | 'group'> {
  model?: { id: string; provider?: string };
  models?: Record<string, ModelSettings>;
  modelProviders?: Record<string, ModelSettings>;
}

/**
 * Resolve a configured name (the session's policy) to a registered provider: `auto` chooses, an explicit name is used
 * exactly or fails closed with a ProviderError (`unknown`, `not-installed`, `no-credentials`).
 */
export function resolveProvider(name: string | undefined, env: Record<string, string | undefined>): ProviderChoice {
  return choiceFrom(selectProviderFor({ session: name }, env));
}

/** A selection as a choice, or the ProviderError it stands for. */
export function choiceFrom(selection: Selection): ProviderChoice {
  if (!selection.ok) throw new ProviderError(selection.code, selection.message);
  return { name: selection.provider, reason: selection.reason, description: describeSelection(selection) };
}

export async function createProvider(name: string, config: ProviderConfig): Promise<AgentProvider> {
  const registration = registrations.get(normaliseProviderName(name));
  if (!registration) {
    throw new ProviderError('unknown', `unknown provider "${name}" (known: ${knownProviders().join(', ')})`);
  }
  return registration.create(config);
}
