import { createHash } from 'node:crypto';
import { credentialEnvironment, PROXIED_CREDENTIALS, proxyUpstreams } from '../credential-proxy.js';
import type { SecretValues } from '../secrets.js';
import type { CredentialSource, HostCredentials } from './types.js';

/** The variables beside the keys that decide where requests go: a change of one is a change of credentials too. */
const ROUTING_VARIABLES = ['ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL', 'OPENCODE_BASE_URL', 'PINCER_MODEL'];

/**
 * Read the host's credentials once: the runners' environment with the secrets store's credential values on top (a
 * secret wins, so a rotation there takes effect even when the host was started with a key in its environment).
 * `previous` numbers the result: the same values keep its version, different ones get the next. Throws the secrets
 * store's or the proxy's one-line `config` error (a bad secrets file, a base URL the proxy cannot forward to).
 */
export function readCredentials(env: NodeJS.ProcessEnv, readSecrets: () => SecretValues, previous?: HostCredentials): HostCredentials {
  const secrets = readSecrets();
  const merged = credentialEnvironment(env, secrets);
  const upstreams = proxyUpstreams(merged);
  const sources = new Map<string, CredentialSource>();
  for (const name of PROXIED_CREDENTIALS) {
    if (secrets.has(name)) sources.set(name, 'secrets');
    else if (merged[name]) sources.set(name, 'environment');
  }
  const fingerprint = fingerprintOf(merged);
  const version = previous === undefined ? 1 : fingerprintOf(previous.env) === fingerprint ? previous.version : previous.version + 1;
  return Object.freeze({ version, env: Object.freeze({ ...merged }), sources, upstreams });
}

/** A digest of the credential and routing values, only to tell two reads apart (kept in memory, never shown). */
function fingerprintOf(env: Readonly<Record<string, string | undefined>>): string {
  const hash = createHash('sha256');
  for (const name of [...PROXIED_CREDENTIALS, ...ROUTING_VARIABLES]) hash.update(`${name}\0${env[name] ?? ''}\0`);
  return hash.digest('hex');
}
