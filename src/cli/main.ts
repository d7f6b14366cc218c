import module from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Node's own modules through require(): an ES import of node:fs builds its ES module facade, which reads every export
 * and so loads the stream modules (fs.ReadStream's getter) that a runner never uses (docs/performance.md).
 */
const fs = module.createRequire(import.meta.url)('node:fs') as typeof import('node:fs');

// On Node 22+, V8's compiled code is kept on disk (in the temp folder, or NODE_COMPILE_CACHE) and reused by the next
// start of the same files: every runner after the first compiles nothing it compiled before.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

/**
 * The CLI entry (`bin/pincer.js`, and what the host starts a runner with: `node <this file> runner`). The processes
 * started per session or per query (`pincer runner`, `pincer mcp`) go straight to their bundled code in dist/bundle;
 * everything else loads the command-line program. The bundle is built from dist/src by `npm run build`
 * (scripts/bundle.mjs); a bundle older than this file means only tsc ran, and running it would run stale code.
 */
const bundleDir = new URL('../../bundle/', import.meta.url);

function bundled(name: string): string {
  const file = new URL(`${name}.js`, bundleDir);
  let stale: boolean;
  try {
    stale = fs.statSync(file).mtimeMs < fs.statSync(new URL(import.meta.url)).mtimeMs;
  } catch {
    // no bundle or no compiled file: treated as stale, and the refusal says how to rebuild
    stale = true;
  }
  if (stale) {
    process.stderr.write(`pincer: ${fileURLToPath(file)} is missing or older than the compiled code; run npm run build\n`);
    process.exit(1);
  }
  return file.href;
}

// Stack traces name the compiled modules, not bundle offsets, when someone asks for them.
if (process.env.PINCER_LOG_LEVEL === 'debug') process.setSourceMapsEnabled(true);

const [command, ...rest] = process.argv.slice(2);
if (command === 'runner' && rest.length === 0) {
  const { runRunner } = (await import(bundled('runner'))) as typeof import('../runner/main.js');
  process.exitCode = await runRunner();
} else if (command === 'mcp' && rest.length === 0) {
  const { runMcpServer } = (await import(bundled('mcp'))) as typeof import('../mcp/main.js');
  process.exitCode = await runMcpServer();
} else {
  await import(bundled('program'));
}
