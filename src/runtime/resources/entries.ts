import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Tinyglobby from 'tinyglobby';
import type { ResourceDiagnostic } from './types.js';

/** tinyglobby, loaded on first use: most agent groups have no manifest, and the runner's idle RSS counts. */
let globber: typeof Tinyglobby | undefined;
function tinyglobby(): typeof Tinyglobby {
  globber ??= createRequire(import.meta.url)('tinyglobby') as typeof Tinyglobby;
  return globber;
}

/**
 * Expand manifest entries (paths or globs relative to the package root; `!pattern` excludes) into existing paths,
 * in entry order, without duplicates. Entries that leave the package, name nothing or match nothing are reported.
 */
export function expandEntries(root: string, entries: string[], kind: string, diagnostics: ResourceDiagnostic[]): string[] {
  const { globSync, isDynamicPattern } = tinyglobby();
  const excludes = entries.filter((entry) => entry.startsWith('!'));
  const found: string[] = [];
  for (const entry of entries.filter((e) => !e.startsWith('!'))) {
    const normalised = path.posix.normalize(entry.replace(/\\/g, '/'));
    if (path.isAbsolute(entry) || normalised === '..' || normalised.startsWith('../')) {
      diagnostics.push({ code: 'outside-package', message: `${kind}: "${entry}" is outside the package folder ${root}` });
      continue;
    }
    const dynamic = isDynamicPattern(normalised);
    if (!dynamic && !fs.existsSync(path.join(root, normalised))) {
      diagnostics.push({ code: 'missing-path', message: `${kind}: "${entry}" does not exist in ${root}` });
      continue;
    }
    const matches = globSync([normalised.replace(/\/$/, ''), ...excludes], {
      cwd: root,
      onlyFiles: false,
      expandDirectories: false,
      followSymbolicLinks: true,
    }).sort();
    if (matches.length === 0) {
      const why = dynamic ? 'matched nothing' : 'is excluded by a "!" entry';
      diagnostics.push({ code: 'empty-glob', message: `${kind}: "${entry}" ${why}` });
      continue;
    }
    for (const match of matches) {
      const full = path.join(root, match);
      if (!found.includes(full)) found.push(full);
    }
  }
  return found;
}
