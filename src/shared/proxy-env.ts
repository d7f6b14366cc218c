import { rawSetting } from './settings-load.js';
/**
 * The variables the host's credential proxy gives a runner. Behind the proxy a runner's `ANTHROPIC_BASE_URL` and
 * `OPENAI_BASE_URL` are the proxy's loopback address; what they stand for — the real upstream, never secret — is
 * passed beside them, so decisions that depend on the endpoint (which wire API, whether it is an official endpoint)
 * are made on the upstream while the connection still goes through the proxy.
 */

/** Set to `1` for a runner behind the proxy. */
export const PROXY_MARKER_ENV = 'PINCER_CREDENTIAL_PROXY';

/**
 * The session's placeholder where the proxy's OpenAI upstream needs no key (a local model server): a client behind the
 * proxy presents it as its key (`Authorization: Bearer`) so the proxy counts the call as the session's; the proxy
 * takes it off before the request goes on. A keyed upstream's placeholder is in `OPENAI_API_KEY` instead.
 */
export const PROXY_SESSION_KEY_ENV = 'PINCER_CREDENTIAL_PROXY_KEY';

/** The key a client behind the proxy presents to a keyless upstream, if the host gave one. */
export function keylessProxyKey(env: Record<string, string | undefined>): string | undefined {
  if (rawSetting(env, PROXY_MARKER_ENV) !== '1') return undefined;
  return (rawSetting(env, PROXY_SESSION_KEY_ENV) ?? '').trim() || undefined;
}

/** The real upstream behind each proxied base-URL variable. */
export const UPSTREAM_BASE_URL_ENV = {
  ANTHROPIC_BASE_URL: 'PINCER_UPSTREAM_ANTHROPIC_BASE_URL',
  OPENAI_BASE_URL: 'PINCER_UPSTREAM_OPENAI_BASE_URL',
} as const;

export type ProxiedBaseUrl = keyof typeof UPSTREAM_BASE_URL_ENV;

/** Where `name` really leads: the proxy's upstream for a runner behind the proxy, else the variable itself. */
export function upstreamBaseUrl(env: Record<string, string | undefined>, name: ProxiedBaseUrl): string | undefined {
  const own = (rawSetting(env, name) ?? '').trim() || undefined;
  if (rawSetting(env, 'PINCER_CREDENTIAL_PROXY') !== '1' || own === undefined) return own;
  return (rawSetting(env, UPSTREAM_BASE_URL_ENV[name]) ?? '').trim() || own;
}
