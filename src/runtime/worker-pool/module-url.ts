import fs from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Worker threads run JavaScript only. When Pincer runs from its TypeScript source (vitest), a module URL under `src/`
 * (written as `./x.js`, as TypeScript imports are) is mapped to its compiled copy under `dist/` (built by
 * `npm run build`, which `npm test` runs first). Compiled code and `.mjs` files load as they are.
 */
const fromSource = import.meta.url.endsWith('.ts');
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

export function runnableModuleUrl(url: URL): URL {
  if (!fromSource || url.protocol !== 'file:') return url;
  const file = fileURLToPath(url);
  if (!file.startsWith(`${repoRoot}src/`) || !/\.(ts|js)$/.test(file)) return url;
  return pathToFileURL(`${repoRoot}dist/${file.slice(repoRoot.length).replace(/\.ts$/, '.js')}`);
}

export function moduleExists(url: URL): boolean {
  return url.protocol !== 'file:' || fs.existsSync(fileURLToPath(url));
}
