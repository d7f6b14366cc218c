import { readLock } from '../home-lock.js';
import { buildViewsNow } from './offline.js';
import { readPublishedViews } from './published-file.js';
import type { GenerationView } from './types.js';

/** Where a reader's generations came from: the running host's publication, or built now (no host runs on the home). */
export type ViewsSource = { from: 'host'; pid: number } | { from: 'built' };

/**
 * The model-runtime generations a reader in another process (`pincer models`, `pincer doctor`) shows: with a host
 * running on `home`, the views it published (a new publication is read by the next call); with none, built now from
 * `env` with the host's own builder. Throws the secrets store's one-line error when building on a bad secrets file.
 */
export function currentViews(home: string, env: NodeJS.ProcessEnv): { views: GenerationView[]; source: ViewsSource } {
  const lock = readLock(home);
  const published = lock ? readPublishedViews(home) : [];
  if (lock && published.length > 0) return { views: published, source: { from: 'host', pid: lock.pid } };
  return { views: buildViewsNow(home, env), source: { from: 'built' } };
}
