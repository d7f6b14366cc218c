import type { AgentProvider, ProviderConfig } from './types.js';

/**
 * Provider registry (seed "Provider 工厂"; OpenClaw "运行时选择"): names are normalised (lower case, aliases), an
 * explicit unknown name fails closed with an exact message, and only `auto` may choose among providers.
 */
/** unknown: no such provider; unavailable: its SDK or binary is missing; config: a setting it reads is invalid. */
export type ProviderErrorCode = 'unknown' | 'unavailable' | 'config';

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
  create(config: ProviderConfig): AgentProvider;
  /** For `auto`: whether this provider can run with `env` (credentials present). Absent → never chosen by auto. */
  usableWith?(env: Record<string, string | undefined>): boolean;
}

const registrations = new Map<string, ProviderRegistration>();
const aliases = new Map<string, string>();

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
}

/**
 * Resolve a configured name to a registered provider. `auto` picks the first registered provider that is usable with
 * `env`, else `mock` (so Pincer can be tried with no key); an explicit name is used as given or fails.
 */
export function resolveProvider(name: string | undefined, env: Record<string, string | undefined>): ProviderChoice {
  const normalised = normaliseProviderName(name);
  if (normalised === 'auto') {
    for (const registration of registrations.values()) {
      if (registration.usableWith?.(env)) return { name: registration.name, reason: 'auto: credentials found' };
    }
    return { name: 'mock', reason: 'auto: no provider credentials found, using the mock provider' };
  }
  if (!registrations.has(normalised)) {
    throw new ProviderError('unknown', `unknown provider "${name}" (known: ${knownProviders().join(', ')})`);
  }
  return { name: normalised, reason: 'configured' };
}

export function createProvider(name: string, config: ProviderConfig): AgentProvider {
  const registration = registrations.get(normaliseProviderName(name));
  if (!registration) {
    throw new ProviderError('unknown', `unknown provider "${name}" (known: ${knownProviders().join(', ')})`);
  }
  return registration.create(config);
}
