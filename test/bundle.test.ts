import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';

/**
 * The bundle `npm run build` makes (scripts/bundle.mjs): what a runner loads at start-up stays small, and the CLI
 * refuses to run a bundle older than the compiled code. Through-the-system coverage is every runner e2e test, which
 * starts runners through the CLI and so through the bundle.
 */
const BUNDLE_DIR = fileURLToPath(new URL('../dist/bundle/', import.meta.url));

interface Metafile {
  inputs: Record<string, { imports: { path: string; external?: boolean }[] }>;
  outputs: Record<string, { imports: { path: string; kind: string; external?: boolean }[]; inputs: Record<string, unknown> }>;
}

function readMeta(): Metafile {
  return JSON.parse(fs.readFileSync(path.join(BUNDLE_DIR, 'meta.json'), 'utf8')) as Metafile;
}

/**
 * The output files a bundle output loads before its first line runs (static imports only), and their inputs. `entry`
 * is an entry's file name (`runner.js`) or a compiled module (`src/providers/pincer/provider.js`): its chunk.
 */
function staticClosure(entry: string): { outputs: string[]; inputs: string[]; externals: string[] } {
  const meta = readMeta();
  const start = Object.keys(meta.outputs).find((file) =>
    entry.startsWith('src/') ? Object.keys(meta.outputs[file]!.inputs).some((input) => input.endsWith(`dist/${entry}`)) : file.endsWith(`/bundle/${entry}`),
  )!;
  const outputs = new Set<string>();
  const externals = new Set<string>();
  const stack = [start];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (outputs.has(file)) continue;
    outputs.add(file);
    for (const imported of meta.outputs[file]!.imports) {
      // better-sqlite3 comes through require() (scripts/bundle.mjs, REQUIRED_PACKAGES), as Node's own modules do
      if (imported.external && (imported.kind === 'import-statement' || imported.kind === 'require-call')) externals.add(imported.path);
      else if (imported.kind === 'import-statement') stack.push(imported.path);
    }
  }
  return { outputs: [...outputs], inputs: [...outputs].flatMap((file) => Object.keys(meta.outputs[file]!.inputs)), externals: [...externals] };
}

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the runner bundle', () => {
  it('loads the runner core, its one database driver and the parts of zod it uses, nothing of the host', () => {
    const { outputs, inputs, externals } = staticClosure('runner.js');
    // A few files, not ~200 modules. How many follows esbuild's split of modules shared by entries (the host's HTTP
    // module, a lazy chunk, made it 21 from 19 with the same bytes; Node's own modules through require(), one tiny
    // chunk per module shared by entries, 26 from 22, 28 since, 32 with the shared error vocabulary): importing the
    // runner bundle took the same time.
    expect(outputs.length).toBeLessThan(36);
    expect(externals.filter((name) => !name.startsWith('node:'))).toEqual(['better-sqlite3']);
    const offending = inputs.filter((file) => /dist\/src\/(host|container|cli|mcp\/(server|main))\/|zod\/v4\/locales\/(?!en\.js)/.test(file));
    expect(offending).toEqual([]);
  });

  it("loads none of Node's stream, crypto, network or child-process modules (only what an empty ES module loads)", () => {
    // Node's own modules come through require(), so no ES module facade reads node:fs's stream getters; ids are made
    // without node:crypto, and node:net and node:child_process load on first use (docs/performance.md, "Cold start").
    const script = `await import(${JSON.stringify(path.join(BUNDLE_DIR, 'runner.js'))}); console.log(JSON.stringify(process.moduleLoadList));`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(result.stderr).toBe('');
    const loaded = (JSON.parse(result.stdout) as string[]).filter((name) => name.startsWith('NativeModule '));
    const heavy = loaded.filter((name) =>
      /^NativeModule (stream|crypto|net|child_process|readline|http|https|tls)$|internal\/(streams\/readable|crypto\/)/.test(name),
    );
    expect(heavy).toEqual([]);
  });

  it.each(['src/providers/pincer/provider.js', 'src/mcp/linked.js', 'mcp.js'])(
    'bundles what %s loads (the built-in runtime, the MCP SDK): no package imported from node_modules at load',
    (entry) => {
      // Loaded module by module from node_modules, the same code took about twice the memory (docs/performance.md).
      const { externals } = staticClosure(entry);
      expect(externals.filter((name) => !name.startsWith('node:') && name !== 'better-sqlite3')).toEqual([]);
    },
  );

  it.each([
    ['missing', (_bundle: string) => undefined],
    [
      'older than the compiled code',
      (bundle: string) => {
        fs.mkdirSync(bundle, { recursive: true });
        for (const name of ['runner.js', 'mcp.js', 'program.js']) {
          fs.writeFileSync(path.join(bundle, name), 'throw new Error("stale bundle ran")');
          fs.utimesSync(path.join(bundle, name), new Date(2000, 0, 1), new Date(2000, 0, 1));
        }
      },
    ],
  ])('is refused with what to do when it is %s', (_name, prepare) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bundle-'));
    temps.push(root);
    const cli = path.join(root, 'dist', 'src', 'cli', 'main.js');
    fs.mkdirSync(path.dirname(cli), { recursive: true });
    fs.copyFileSync(BUILT_CLI, cli);
    prepare(path.join(root, 'dist', 'bundle'));
    for (const args of [['runner'], ['mcp'], ['--help']]) {
      const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 10_000 });
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^pincer: .*dist\/bundle\/(runner|mcp|program)\.js is missing or older than the compiled code; run npm run build\n$/);
    }
  });
});
