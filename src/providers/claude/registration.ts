import type { ProviderRegistration } from '../registry.js';
import { hasClaudeCredentials, hasClaudeKey, loadClaudeSettings } from './config.js';

/** `claude` (alias `claude-code`); `auto` picks it when an API key or OAuth token is present. */
export const claudeRegistration: ProviderRegistration = {
  name: 'claude',
  aliases: ['claude-code'],
  // The SDK and provider load only when a runner really uses Claude (they cost memory in every other runner).
  create: async (config) => {
    const settings = loadClaudeSettings(config.env, config.model);
    const { ClaudeProvider } = await import('./provider.js');
    return new ClaudeProvider(settings);
  },
  usableWith: hasClaudeKey,
  hasCredentials: hasClaudeCredentials,
};
