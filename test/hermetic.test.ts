import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The suite is hermetic: no test starts npm or npx (`npx pincer` installs this folder into npx's cache and runs its
 * `prepare`, the build, rebuilding dist/ under the tests that are running), and none writes into the repository's
 * docs/ (the screenshots go there only with PINCER_SCREENSHOTS=1). CI checks afterwards that the clone is unchanged.
 */
const ROOT = path.resolve(import.meta.dirname, '..');

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(file);
    return /\.(ts|mjs)$/.test(entry.name) ? [file] : [];
  });
}

describe('the test suite', () => {
  const files = testFiles(path.join(ROOT, 'test')).filter((f) => !f.endsWith('hermetic.test.ts'));

  it('starts no npm or npx process', () => {
    const offenders = files.filter((file) =>
      /\b(spawn|spawnSync|exec|execSync|execFile|execFileSync)\(\s*['"`](npm|npx)\b/.test(fs.readFileSync(file, 'utf8')),
    );
    expect(offenders.map((f) => path.relative(ROOT, f))).toEqual([]);
  });

  it('writes into docs/ only when asked to (PINCER_SCREENSHOTS=1)', () => {
    const offenders = files.filter((file) => {
      const text = fs.readFileSync(file, 'utf8');
      return (
        /path\.(resolve|join)\([^)]*['"]\.\.['"],\s*['"]docs['"]/.test(text) &&
        /(writeFileSync|screenshot\(|mkdirSync)/.test(text) &&
        !text.includes("PINCER_SCREENSHOTS === '1'")
      );
    });
    expect(offenders.map((f) => path.relative(ROOT, f))).toEqual([]);
  });
});
