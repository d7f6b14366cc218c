import type { ProviderRegistration } from '../registry.js';
import { hasClaudeCredentials, hasClaudeKey, loadClaudeSettings } from './config.js';
import { ClaudeProvider } from './provider.js';

/** `claude` (alias `claude-code`); `auto` picks it when an API key or OAuth token is present. */
export const claudeRegistration: ProviderRegistration = {
  name: 'claude',
  aliases: ['claude-code'],
  create: (config) => new ClaudeProvider(loadClaudeSettings(config.env, config.model)),
  usableWith: hasClaudeKey,
  hasCredentials: hasClaudeCredentials,
};
