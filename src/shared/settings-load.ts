import { PincerError } from './errors.js';
import { describeIssues } from './zod-issues.js';
import { setting, type SettingName, type SettingValue } from './settings.js';

/**
 * Reading a setting of the registry (src/shared/settings.ts) from an environment: the one way code outside the
 * configuration loaders gets a setting, so its parser and default live in one place. `env` is the environment the
 * caller was given (a runner's, a provider's child's), or `process.env` at an entry point.
 */

type Env = Readonly<Record<string, string | undefined>>;

/** The setting's value (its default when unset); an explicit bad value throws a `config` PincerError naming the setting. */
export function readSetting<N extends SettingName>(env: Env, name: N): SettingValue<N> {
  const parsed = setting(name)!.parse.safeParse(env[name]);
  if (!parsed.success) throw new PincerError('config', `bad environment: ${name}: ${describeIssues(parsed.error)}`);
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

/**
 * The raw value of a setting, unparsed: for code that hands a provider SDK its own variable, or checks that one is
 * set. Still by the registry's name, so every variable Pincer looks at is listed there.
 */
export function rawSetting(env: Env, name: SettingName): string | undefined {
  return env[name];
}
