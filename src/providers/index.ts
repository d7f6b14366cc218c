import { claudeRegistration } from './claude/registration.js';
import { CodexProvider, codexUsableWith } from './codex/provider.js';
import { MockProvider } from './mock.js';
import { OpenCodeProvider, openCodeUsableWith } from './opencode/provider.js';
import { registerProvider } from './registry.js';

/** Every provider this build ships, registered once. Real SDK providers register here as they land. */
export function registerBuiltInProviders(): void {
  registerProvider({ name: 'mock', aliases: ['echo'], create: (config) => new MockProvider(config) });
  registerProvider(claudeRegistration);
  registerProvider({ name: 'codex', aliases: ['codex-app-server'], create: (config) => new CodexProvider(config), usableWith: codexUsableWith });
  registerProvider({ name: 'opencode', create: (config) => new OpenCodeProvider(config), usableWith: openCodeUsableWith });
}
