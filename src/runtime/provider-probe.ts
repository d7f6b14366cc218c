import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installedBinaryPackage, providerBinary } from './provider-binaries.js';
import type { ProviderProbe } from './selection.js';

/**
 * What each provider needs to run here — credentials in the environment and its SDK / binary installed — checked
 * without starting anything. Used by the selection policy (`auto`, and to fail an explicit choice closed) and by
 * `pincer doctor`. A provider registration may bring its own requirements; these are the defaults for the names
 * Pincer knows.
 */
export interface ProviderRequirements {
  /** Any one of these variables (non-empty) counts as credentials. Empty list: none needed. */
  credentialsEnv: string[];
  /** npm packages that must resolve (the SDK; its CLI arrives with it). */
  packages: string[];
  /** executables that must be on PATH (or in node_modules/.bin). */
  executables: string[];
  /**
   * The SDK runs a platform binary of its own (an optional dependency, see provider-binaries.ts): it must be installed,
   * or, for a provider with `executables`, one of those found on PATH.
   */
  binary?: boolean;
  /** whether `auto` may choose it (never for `mock`). */
  auto: boolean;
}

export const KNOWN_PROVIDER_REQUIREMENTS: Record<string, ProviderRequirements> = {
  claude: {
    credentialsEnv: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'],
    packages: ['@anthropic-ai/claude-agent-sdk'],
    executables: [],
    binary: true,
    auto: true,
  },
  codex: { credentialsEnv: ['OPENAI_API_KEY', 'CODEX_API_KEY'], packages: ['@openai/codex-sdk'], executables: [], binary: true, auto: true },
  opencode: {
    credentialsEnv: ['OPENCODE_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY'],
    packages: ['@opencode-ai/sdk'],
    executables: ['opencode'],
    binary: true,
    auto: true,
  },
  mock: { credentialsEnv: [], packages: [], executables: [], auto: false },
};

/** The order `auto` tries providers in. */
export const AUTO_PREFERENCE = ['claude', 'codex', 'opencode'];

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export function probeProvider(name: string, registered: boolean, requirements: ProviderRequirements, env: Record<string, string | undefined>): ProviderProbe {
  const missing: string[] = [];
  if (!registered) missing.push(`this build has no ${name} provider`);
  for (const pkg of requirements.packages) if (!packageResolves(pkg)) missing.push(`package ${pkg} is not installed`);
  const binary = requirements.binary ? providerBinary(name) : undefined;
  if (binary) {
    // its platform package, or (OpenCode) the same program on PATH; node_modules/.bin may hold only a placeholder
    const found = installedBinaryPackage(binary) !== undefined || requirements.executables.some((exe) => findExecutable(exe, env, false));
    if (!found) missing.push(`its agent binary (${binary.candidates[0]}) is missing: pincer provider add ${name}`);
  } else {
    for (const exe of requirements.executables) if (!findExecutable(exe, env)) missing.push(`${exe} not found on PATH`);
  }
  const { credentialsEnv } = requirements;
  const credentials = credentialsEnv.length === 0 || credentialsEnv.some((key) => (env[key] ?? '').length > 0);
  return {
    name,
    installed: missing.length === 0,
    notInstalled: missing.join('; ') || undefined,
    credentials,
    noCredentials: credentials ? undefined : `set ${credentialsEnv.join(' or ')}`,
    auto: requirements.auto,
  };
}

/**
 * Whether `pkg` is installed where this module would import it from: a `node_modules/<pkg>/package.json` in this
 * folder or one above. Not `require.resolve`: ESM-only SDKs export no `require` entry and no `package.json`.
 */
function packageResolves(pkg: string): boolean {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'node_modules', pkg, 'package.json'))) return true;
    const parent = path.dirname(dir);
    if (parent === dir) return false;
    dir = parent;
  }
}

function findExecutable(name: string, env: Record<string, string | undefined>, withPackageBin = true): string | undefined {
  const packageBin = path.join(packageRoot, 'node_modules', '.bin');
  const dirs = [
    ...(env.PATH ?? '').split(path.delimiter).filter((dir) => withPackageBin || path.resolve(dir) !== packageBin),
    ...(withPackageBin ? [packageBin] : []),
  ];
  for (const dir of dirs.filter(Boolean)) {
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}
