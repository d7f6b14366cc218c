import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of Pincer's own package.json, found by walking up from this module, so files shipped beside the code
 * (the web page's assets) are found whether this module runs from `src/`, `dist/src/` or a bundle.
 */
function findPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest)) {
      try {
        if ((JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'pincer') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find pincer's package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

export const PACKAGE_ROOT = findPackageRoot();
