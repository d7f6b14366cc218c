// Bundles the compiled CLI (dist/src) into dist/bundle with esbuild, so a runner loads a few files instead of ~200
// modules (see docs/performance.md). Run by `npm run build` after tsc; the bundle is never checked in.
import fs from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist', 'src');
const outdir = path.join(root, 'dist', 'bundle');
const ZOD_CLASSIC = path.join(root, 'node_modules', 'zod', 'v4', 'classic', 'external.js');

/**
 * Packages bundled in: pure JavaScript, loaded at start-up or by a runner in its own process — the built-in runtime
 * (pi-ai, pi-agent-core and what they load: the OpenAI and Anthropic clients, typebox) and the MCP SDK with the parts
 * of its dependencies the client and server use. Bundled and minified they cost about half the memory of the same
 * modules loaded one by one from node_modules (docs/performance.md). Everything else stays an import from
 * node_modules: native addons (better-sqlite3), and the agent SDKs, adapters and tools, which find their own files and
 * binaries relative to their package and are imported only when used.
 */
const BUNDLED_PACKAGES = new Set([
  'zod',
  'commander',
  '@mariozechner/pi-ai',
  '@mariozechner/pi-agent-core',
  'typebox',
  'partial-json',
  'openai',
  '@anthropic-ai/sdk',
  '@modelcontextprotocol/sdk',
  'zod-to-json-schema',
  'ajv',
  'ajv-formats',
  'fast-deep-equal',
  'json-schema-traverse',
  'fast-uri',
  'cross-spawn',
  'which',
  'isexe',
  'path-key',
  'shebang-command',
  'shebang-regex',
  // the MCP client's HTTP transport, loaded on first use of a user's HTTP MCP server
  'content-type',
  'pkce-challenge',
  'eventsource-parser',
]);

/**
 * CommonJS packages kept out of the bundle but loaded with require(), as Node's own modules are: an ES import of a
 * CommonJS file makes Node's ES loader read it and guess its exports with its lexer first, ≈ 5 ms of a runner's start
 * for better-sqlite3 (docs/performance.md, "Cold start").
 */
const REQUIRED_PACKAGES = new Set(['better-sqlite3']);

/** Processes started per session or per query: each gets its own small entry; the rest is the CLI program. */
const ENTRIES = {
  runner: path.join(dist, 'runner', 'main.js'),
  mcp: path.join(dist, 'mcp', 'main.js'),
  program: path.join(dist, 'cli', 'program.js'),
};

function packageName(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Bare imports of packages outside BUNDLED_PACKAGES stay imports. */
const externals = {
  name: 'externals',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (isBuiltin(args.path)) {
        // A dynamic import() of one stays an import (it loads on first use anyway, and keeps its named exports).
        const external = args.namespace === 'node-builtin' || args.kind === 'dynamic-import';
        return external ? { path: args.path, external: true } : { path: args.path, namespace: 'node-builtin' };
      }
      if (REQUIRED_PACKAGES.has(args.path)) {
        const external = args.namespace === 'node-builtin' || args.kind === 'dynamic-import';
        return external ? { path: args.path, external: true } : { path: args.path, namespace: 'node-builtin' };
      }
      if (!BUNDLED_PACKAGES.has(packageName(args.path))) return { path: args.path, external: true };
      return undefined;
    });
    // Node's own modules (and REQUIRED_PACKAGES) through require(), not import: an ES import of a built-in builds its ES module facade, which
    // reads every export — for node:fs that means loading the stream modules (fs.ReadStream's getter), ≈ 18 built-in
    // modules a runner never uses (docs/performance.md, "Cold start").
    build.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * Each module keeps its own `import.meta.url` (worker scripts, task modules and the package root are found relative
 * to it): rewritten to the module's compiled file, which stays in dist/src. `import { z } from 'zod'` becomes a
 * namespace import of zod's classic API, so esbuild keeps only the parts of zod that are used (not its 40 locales).
 */
const perModule = {
  name: 'per-module',
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(dist + path.sep)) return undefined;
      let text = await fs.promises.readFile(args.path, 'utf8');
      const own = path.relative(outdir, args.path).split(path.sep).join('/');
      text = text.replaceAll('import.meta.url', `new URL(${JSON.stringify(own)}, import.meta.url).href`);
      text = text.replaceAll("import { z } from 'zod';", `import * as z from ${JSON.stringify(ZOD_CLASSIC)};`);
      return { contents: text, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

/**
 * pi-ai loads its Bedrock provider through `import(variable)`, which a bundler cannot follow: bundled, the relative
 * path would point into dist/bundle. Made a plain dynamic import, it becomes a chunk of its own, loaded on that route.
 */
const piAiBedrock = {
  name: 'pi-ai-bedrock',
  setup(build) {
    build.onLoad({ filter: /[\\/]@mariozechner[\\/]pi-ai[\\/]dist[\\/]providers[\\/]register-builtins\.js$/ }, async (args) => {
      const text = await fs.promises.readFile(args.path, 'utf8');
      const call = 'importNodeOnlyProvider("./amazon-bedrock.js")';
      if (!text.includes(call)) throw new Error(`${args.path}: the Bedrock import changed; update scripts/bundle.mjs`);
      return { contents: text.replace(call, 'import("./amazon-bedrock.js")'), loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

fs.rmSync(outdir, { recursive: true, force: true });
const result = await esbuild.build({
  entryPoints: ENTRIES,
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: '[name]-[hash]',
  minify: process.env.MINIFY !== '0',
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
  // Bundled CommonJS packages (commander) call require() for Node's own modules.
  banner: { js: "import { createRequire as __pincerRequire } from 'node:module'; const require = __pincerRequire(import.meta.url);" },
  plugins: [externals, perModule, piAiBedrock],
});
fs.writeFileSync(path.join(outdir, 'meta.json'), JSON.stringify(result.metafile));
