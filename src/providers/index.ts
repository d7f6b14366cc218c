import { claudeRegistration } from './claude/registration.js';
import { codexSupportsRoute, codexUsableWith } from './codex/config.js';
import { MockProvider } from './mock.js';
import { openCodeUsableWith } from './opencode/config.js';
import { pincerRegistration } from './pincer/registration.js';
import { registerProvider } from './registry.js';

/**
 * Every provider this build ships, registered once. Registrations are light; each SDK provider module is imported
 * only by `create`, so a runner carries just the provider it runs.
 */
export function registerBuiltInProviders(): void {
  registerProvider({ name: 'mock', aliases: ['echo'], create: (config) => new MockProvider(config) });
  registerProvider(claudeRegistration);
  registerProvider({ name: 'codex', aliases: ['codex-app-server'], create: async (config) => new (await import('./codex/provider.js')).CodexProvider(config), usableWith: codexUsableWith, supportsRoute: codexSupportsRoute });
  registerProvider(pincerRegistration);
  registerProvider({ name: 'opencode', create: async (config) => new (await import('./opencode/provider.js')).OpenCodeProvider(config), usableWith: openCodeUsableWith });
}
