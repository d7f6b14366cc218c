import { claudeRegistration } from './claude/registration.js';
import { MockProvider } from './mock.js';
import { registerProvider } from './registry.js';

/** Every provider this build ships, registered once. Real SDK providers register here as they land. */
export function registerBuiltInProviders(): void {
  registerProvider({ name: 'mock', aliases: ['echo'], create: (config) => new MockProvider(config) });
  registerProvider(claudeRegistration);
}
