import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../../db/content.js';
import type { ResourceDiagnostic } from './types.js';

/** The `"pincer"` key of an agent group's package.json: each kind is a path or glob, or a list of them. */
const Entries = z.union([z.string(), z.array(z.string())]).transform((value) => (typeof value === 'string' ? [value] : value));

const PincerManifestSchema = z.looseObject({
  skills: Entries.optional(),
  prompts: Entries.optional(),
  extensions: Entries.optional(),
});

const PackageJsonSchema = z.looseObject({ pincer: z.unknown().optional() });

export interface PincerManifest {
  skills?: string[];
  prompts?: string[];
  extensions?: string[];
}

const KNOWN_KEYS = new Set(['skills', 'prompts', 'extensions']);

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
      diagnostics.push({ code: 'invalid-manifest', message: `${file}: "pincer.${key}" is not a resource kind Pincer loads (skills, prompts, extensions)` });
    }
  }
  return { skills: manifest.data.skills, prompts: manifest.data.prompts, extensions: manifest.data.extensions };
}
