import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../../db/content.js';
import type { ResourceDiagnostic } from './types.js';

/** The `"pincer"` key of an agent group's package.json: each kind is a path or glob, or a list of them. */
const Entries = z.union([z.string(), z.array(z.string())]).transform((value) => (typeof value === 'string' ? [value] : value));

/**
 * The built-in runtime's settings for the group (`"pincer": {"runtime": {…}}`): code mode, what a compaction summary
 * must keep, and the budget of old tool results before they are pruned. The folder is the agent's own: nothing here
 * widens what the agent may do.
 */
export const RuntimeSettingsSchema = z.strictObject({
  /** the model sees only `exec` and `wait`; every other tool is reachable from the program */
  codeMode: z.boolean().optional(),
  /** added to the summary request of every compaction, e.g. "keep decisions, open tasks and file names" */
  compactionInstructions: z.string().max(2000).optional(),
  /** estimated tokens of older tool results kept before the oldest are replaced by a stub; 0 turns pruning off */
  pruneToolResultsTokens: z.number().int().nonnegative().optional(),
});
export type RuntimeSettings = z.infer<typeof RuntimeSettingsSchema>;

const PincerManifestSchema = z.looseObject({
  skills: Entries.optional(),
  prompts: Entries.optional(),
  extensions: Entries.optional(),
  themes: Entries.optional(),
  theme: z.string().optional(),
  runtime: z.unknown().optional(),
  /** models the group's extensions run (read by the host into the group's model catalogue: src/host/generations/extensions.ts) */
  models: z.unknown().optional(),
});

const PackageJsonSchema = z.looseObject({ pincer: z.unknown().optional() });

export interface PincerManifest {
  skills?: string[];
  prompts?: string[];
  extensions?: string[];
  themes?: string[];
  /** the theme the group uses (a name) */
  theme?: string;
  runtime?: RuntimeSettings;
}

const KNOWN_KEYS = new Set(['skills', 'prompts', 'extensions', 'themes', 'theme', 'runtime', 'models']);

/** The manifest of `root`, or undefined when there is no package.json or it has no `"pincer"` key. */
export function readManifest(root: string, diagnostics: ResourceDiagnostic[]): PincerManifest | undefined {
  const file = path.join(root, 'package.json');
  if (!fs.existsSync(file)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    diagnostics.push({ code: 'invalid-manifest', message: `${file}: cannot read: ${err instanceof Error ? err.message : String(err)}` });
    return undefined;
  }
  const pkg = PackageJsonSchema.safeParse(raw);
  if (!pkg.success || pkg.data.pincer === undefined) return undefined;
  const manifest = PincerManifestSchema.safeParse(pkg.data.pincer);
  if (!manifest.success) {
    diagnostics.push({ code: 'invalid-manifest', message: `${file}: "pincer": ${describeIssues(manifest.error)}` });
    return undefined;
  }
  for (const key of Object.keys(manifest.data)) {
    if (!KNOWN_KEYS.has(key)) {
      diagnostics.push({
        code: 'invalid-manifest',
        message: `${file}: "pincer.${key}" is not a resource kind Pincer loads (skills, prompts, extensions, themes, theme, runtime, models)`,
      });
    }
  }
  let runtime: RuntimeSettings | undefined;
  if (manifest.data.runtime !== undefined) {
    const parsed = RuntimeSettingsSchema.safeParse(manifest.data.runtime);
    if (parsed.success) runtime = parsed.data;
    else diagnostics.push({ code: 'invalid-manifest', message: `${file}: "pincer.runtime": ${describeIssues(parsed.error)}` });
  }
  return {
    skills: manifest.data.skills,
    prompts: manifest.data.prompts,
    extensions: manifest.data.extensions,
    themes: manifest.data.themes,
    theme: manifest.data.theme,
    runtime,
  };
}

/** The group's runtime settings (empty when none or invalid; problems go to `diagnostics`). */
export function readRuntimeSettings(root: string, diagnostics: ResourceDiagnostic[] = []): RuntimeSettings {
  return readManifest(root, diagnostics)?.runtime ?? {};
}
