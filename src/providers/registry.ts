import {
  AUTO_PREFERENCE,
  KNOWN_PROVIDER_REQUIREMENTS,
  probeProvider,
  type ProviderRequirements,
} from '../runtime/provider-probe.js';
import { describeSelection, selectProvider, type ProviderProbe, type Selection, type SelectionInput } from '../runtime/selection.js';
import type { AgentProvider, ProviderConfig } from './types.js';

/**
 * Provider registry (seed "Provider 工厂"; OpenClaw "运行时选择"): names are normalised (lower case, aliases), an
 * explicit unknown name fails closed with an exact message, and only `auto` may choose among providers.
 */
/**
 * unknown: no such provider; not-installed: known, but not in this build or its SDK/binary is missing; no-credentials:
 * configured explicitly without credentials; unavailable: the provider's own start-up check failed; config: a setting
 * it reads is invalid.
 */
export type ProviderErrorCode = 'unknown' | 'unavailable' | 'config' | 'not-installed' | 'no-credentials';

export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
  ) {
    super(message);
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
  hasCredentials?(env: Record<string, string | undefined>): boolean;
  /** What to set when `hasCredentials` is false (`set OPENCODE_MODEL …`); default: the requirements table's variables. */
  credentialsHint?: string;
  /** Credentials and binaries this provider needs; defaults to Pincer's table for known names (provider-probe.ts). */
  requirements?: ProviderRequirements;
}

const registrations = new Map<string, ProviderRegistration>();
/** Aliases of the seed (OpenClaw "运行时选择"), known even before the provider registers. */
const aliases = new Map<string, string>([
  ['claude-code', 'claude'],
  ['codex-app-server', 'codex'],
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

/** Every provider this build knows (registered or in the requirements table), in `auto` preference order. */
export function probeProviders(env: Record<string, string | undefined>): ProviderProbe[] {
  const names = [...new Set([...AUTO_PREFERENCE, ...Object.keys(KNOWN_PROVIDER_REQUIREMENTS), ...registrations.keys()])];
  return names.map((name) => {
    const registration = registrations.get(name);
    const requirements = registration?.requirements ??
      KNOWN_PROVIDER_REQUIREMENTS[name] ?? { credentialsEnv: [], packages: [], executables: [], auto: Boolean(registration?.usableWith) };
    const probe = probeProvider(name, registration !== undefined, requirements, env);
    if (!registration || registration.requirements || !(registration.usableWith || registration.hasCredentials)) return probe;
    // The provider's own tests win over the table: auto uses usableWith; an explicit choice is refused here only by
    // hasCredentials, else the provider's factory checks what it really needs (a stored login may do).
    const credentials = registration.hasCredentials ? registration.hasCredentials(env) : true;
    const autoCredentials = registration.usableWith ? registration.usableWith(env) : credentials;
    return { ...probe, credentials, autoCredentials, noCredentials: credentials ? undefined : (registration.credentialsHint ?? probe.noCredentials ?? 'credentials missing') };
  });
}

/**
 * Apply the selection policy (src/runtime/selection.ts) to this build's providers. `auto` falls back to
 * PINCER_AUTO_FALLBACK when set (`pincer chat` sets `mock`, so it works without a key), else to `claude`.
 */
export function selectProviderFor(
  policy: Pick<SelectionInput, 'session' | 'group' | 'model'>,
  env: Record<string, string | undefined>,
): Selection {
  return selectProvider({
    ...policy,
    probes: probeProviders(env),
    normalise: normaliseProviderName,
    fallback: env.PINCER_AUTO_FALLBACK || 'claude',
  });
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
