import { routeApiKey } from '../../runtime/model-route.js';
import type { ProviderRegistration } from '../registry.js';

/**
 * The built-in runtime's registry entry. Light: pi-ai and pi-agent-core are imported only when a runner creates the
 * provider. Whether it can run (a model, a key for an official endpoint) depends on the configured model, so the
 * factory decides and fails closed with one line; `auto` reaches it through the selection policy's route rules.
 */
export const pincerRegistration: ProviderRegistration = {
  name: 'pincer',
  aliases: ['builtin', 'openclaw', 'pi'],
  create: async (config) => new (await import('./provider.js')).PincerProvider(config),
  requirements: { credentialsEnv: [], packages: ['@mariozechner/pi-agent-core', '@mariozechner/pi-ai'], executables: [], auto: false },
  // With a model route: the route's key, unless its endpoint needs none (a local or custom server).
  hasCredentials: (env, route) => !route || route.keyOptional || routeApiKey(route, env) !== undefined,
};
