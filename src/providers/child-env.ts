/**
 * The environment for an SDK's child process. Every SDK's `env` option replaces the child's environment, and the
 * agent runs shell commands with it, so it gets the basics plus only what that provider needs — never the runner's
 * other secrets (another provider's API key).
 */
const BASICS = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'TERM'];

export function childEnv(env: Record<string, string | undefined>, keys: string[], overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of [...BASICS, ...keys]) {
    const value = env[key];
    if (value !== undefined && value !== '') out[key] = value;
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) out[key] = value;
  }
  if (!out.PATH) out.PATH = '/usr/local/bin:/usr/bin:/bin';
  return out;
}
