/**
 * A quick look at the model server a built-in-runtime chat would talk to (a local or custom server named by
 * OPENAI_BASE_URL or a model entry's baseUrl), before the first message: a wrong address is said at once, naming where
 * it comes from, instead of after a message and a minute of retries. Any HTTP answer counts as reachable (a server
 * that wants a key may answer 401); only an address nothing answers on is a problem.
 */
import { hasProviderPrefix, isModelRouteError, resolveModelRoute } from './model-route.js';
import { readSetting } from '../shared/settings-load.js';
import { rawSetting } from '../shared/settings-load.js';

export interface ModelServerProbe {
  /** the URL looked at */
  url: string;
  /** where the address comes from: `OPENAI_BASE_URL`, or `the model entry's baseUrl` */
  source: string;
  /** undefined: it answered; else what went wrong, one line */
  problem?: string;
}

/** The probe of the model `ref` (PINCER_MODEL by default) routes to, or undefined when there is no server of the user's to probe. */
export async function probeModelServer(
  env: Record<string, string | undefined>,
  ref = readSetting(env, 'PINCER_MODEL'),
  timeoutMs = 3000,
): Promise<ModelServerProbe | undefined> {
  if (!ref || !hasProviderPrefix(ref)) return undefined;
  let baseUrl: string | undefined;
  try {
    const route = resolveModelRoute({ ref, env });
    if (route.official || !route.baseUrl) return undefined; // an official API: its reachability is not the user's setting
    baseUrl = route.baseUrl;
  } catch (err) {
    if (isModelRouteError(err)) return undefined; // the selection refuses it with its own message
    throw err;
  }
  const openaiBaseUrl = rawSetting(env, 'OPENAI_BASE_URL');
  const source = openaiBaseUrl && sameUrl(openaiBaseUrl, baseUrl) ? 'OPENAI_BASE_URL' : "the model entry's baseUrl";
  const url = `${baseUrl.replace(/\/+$/, '')}/models`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    await response.body?.cancel();
    return { url: baseUrl, source };
  } catch (err) {
    return {
      url: baseUrl,
      source,
      problem: `${source} ${baseUrl}: no model server answers there (${describeFetchError(err, timeoutMs)}); start it or fix ${source}`,
    };
  }
}

function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}

function describeFetchError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs / 1000} s`;
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}
