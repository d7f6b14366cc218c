/**
 * What `pincer chat` and `pincer host` would run, decided by the same selection policy the runner applies, with the
 * environment each gives its runners: `pincer chat` lets `auto` fall back to the mock (so it works without a key),
 * `pincer host` falls back to Claude. The chat banner and `pincer doctor` both show these, so they never disagree.
 */
import { registerBuiltInProviders } from '../providers/index.js';
import { selectProviderFor } from '../providers/registry.js';
import type { Selection } from '../runtime/selection.js';
import { rawSetting } from '../shared/settings-load.js';

/** The environment `pincer chat` runs its host (and so its runners) with. */
export function chatEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, PINCER_AUTO_FALLBACK: rawSetting(env, 'PINCER_AUTO_FALLBACK') || 'mock' };
}

/** The provider `pincer chat --provider <provider>` would run. */
export function chatSelection(provider: string, env: NodeJS.ProcessEnv): Selection {
  registerBuiltInProviders();
  return selectProviderFor({ session: provider }, chatEnv(env));
}

/** The provider a runner of an agent group whose policy is `groupProvider` would run under `pincer host`. */
export function hostSelection(groupProvider: string, env: NodeJS.ProcessEnv): Selection {
  registerBuiltInProviders();
  return selectProviderFor({ session: groupProvider }, env);
}

/** `mock — auto (…): no provider is usable, falling back to mock`, or `✗ <why it cannot start>`. */
export function describeChoice(selection: Selection): string {
  return selection.ok ? `${selection.provider} — ${selection.reason}` : `✗ ${selection.message}`;
}
