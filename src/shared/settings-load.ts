import type { z } from 'zod';
import { PincerError } from './errors.js';
import { setting, settingsSchema, type SettingName, type SettingValue } from './settings.js';

/**
 * Reading a setting of the registry (src/shared/settings.ts) from an environment: the one way code outside the
 * configuration loaders gets a setting, so its parser and default live in one place. `env` is the environment the
 * caller was given (a runner's, a provider's child's), or `process.env` at an entry point.
 */

type Env = Readonly<Record<string, string | undefined>>;

/** One line out of zod issues: `PINCER_IDLE_TIMEOUT_MS: expected number, received nan; …`. */
export function describeSettingIssues(error: z.ZodError): string {
  return error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message)).join('; ');
}

/** The setting's value (its default when unset); an explicit bad value throws a `config` PincerError naming the setting. */
export function readSetting<N extends SettingName>(env: Env, name: N): SettingValue<N> {
  const parsed = setting(name)!.parse.safeParse(env[name]);
  if (!parsed.success) throw new PincerError('config', `bad environment: ${name}: ${describeSettingIssues(parsed.error)}`);
  return parsed.data as SettingValue<N>;
}

/**
 * The setting's value, or its default when the value is unset or bad: for settings read in the middle of a run (a
 * provider's limits), where a bad value has always meant the default rather than a stop.
 */
export function settingOrDefault<N extends SettingName>(env: Env, name: N): SettingValue<N> {
  const parsed = setting(name)!.parse.safeParse(env[name]);
  return (parsed.success ? parsed.data : setting(name)!.parse.parse(undefined)) as SettingValue<N>;
}

/** Several settings at once, parsed by the registry's parsers: `{ ok, value }` or the issues in one line. */
export function readSettings<const N extends SettingName>(
  env: Env,
  names: readonly N[],
): { ok: true; value: z.output<ReturnType<typeof settingsSchema<N>>> } | { ok: false; error: string } {
  const parsed = settingsSchema(names).safeParse(env);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: describeSettingIssues(parsed.error) };
}

/**
 * The raw value of a setting, unparsed: for code that hands a provider SDK its own variable, or checks that one is
 * set. Still by the registry's name, so every variable Pincer looks at is listed there.
 */
export function rawSetting(env: Env, name: SettingName): string | undefined {
  return env[name];
}
