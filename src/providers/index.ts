import { claudeRegistration } from './claude/registration.js';
import { CODEX_CREDENTIALS_HINT, codexHasCredentials, codexSupportsRoute, codexUsableWith } from './codex/config.js';
import { MockProvider } from './mock.js';
import { OPENCODE_CREDENTIALS_HINT, openCodeUsableWith } from './opencode/config.js';
import { pincerRegistration } from './pincer/registration.js';
import { registerProvider } from './registry.js';

/**
 * Every provider this build ships, registered once. Registrations are light; each SDK provider module is imported
 * only by `create`, so a runner carries just the provider it runs.
 */
export function registerBuiltInProviders(): void {
  registerProvider({ name: 'mock', aliases: ['echo'], create: (config) => new MockProvider(config) });
  registerProvider(claudeRegistration);
  // Codex and OpenCode are refused at selection, in one line, when they could only fail later (the Codex CLI retries a
  // missing key for minutes, an OpenCode server without a model forever).
  registerProvider({
    name: 'codex',
    aliases: ['codex-app-server'],
    create: async (config) => new (await import('./codex/provider.js')).CodexProvider(config),
    usableWith: codexUsableWith,
    supportsRoute: codexSupportsRoute,
    hasCredentials: codexHasCredentials,
    credentialsHint: CODEX_CREDENTIALS_HINT,
  });
  registerProvider(pincerRegistration);
  registerProvider({
    name: 'opencode',
    create: async (config) => new (await import('./opencode/provider.js')).OpenCodeProvider(config),
    usableWith: openCodeUsableWith,
    hasCredentials: openCodeUsableWith,
    credentialsHint: OPENCODE_CREDENTIALS_HINT,
  });
}
