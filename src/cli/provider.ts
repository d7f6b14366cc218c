import type { Command } from 'commander';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PLATFORM_SECRETS } from '../host/platforms/catalog.js';
import { installedBinaryPackage, installedPackageDir, PACKAGE_ROOT, providerBinary } from '../runtime/provider-binaries.js';
import { PincerError } from '../shared/errors.js';
import { SETTINGS } from '../shared/settings.js';

/** The SDK providers whose agent binary is installed on demand, with what they are. */
const ADDABLE: Record<string, string> = { claude: 'Claude Code', codex: 'the Codex CLI', opencode: 'OpenCode' };

/**
 * `pincer provider list|add`: the SDK providers' agent binaries (hundreds of MB each) are optional dependencies, left
 * out by `npm ci --omit=optional`; `add` installs this platform's one with npm, at the version Pincer's lockfile pins,
 * into Pincer's node_modules (where the SDK looks for it).
 */
export function registerProviderCommands(program: Command): void {
  const provider = program.command('provider').description("the agent providers' binaries: which are installed, and adding one");
  provider
    .command('list')
    .description('say which SDK providers have their agent binary installed here')
    .option('--dir <folder>', 'the Pincer install to look at (default: this one)')
    .action((options: { dir?: string }) => {
      const root = path.resolve(options.dir ?? PACKAGE_ROOT);
      for (const line of listLines(root)) process.stdout.write(`${line}\n`);
    });
  provider
    .command('add')
    .argument('<name>', Object.keys(ADDABLE).join(' | '))
    .description("install a provider's agent binary from the npm registry (pinned by Pincer's lockfile)")
    .option('--dir <folder>', 'the Pincer install to add it to (default: this one)')
    .action(async (name: string, options: { dir?: string }) => {
      process.exitCode = await addProvider(name, path.resolve(options.dir ?? PACKAGE_ROOT));
    });
}

/** One line per SDK provider: installed (which package), or how to add it. */
export function listLines(root: string): string[] {
  return Object.keys(ADDABLE).map((name) => {
    const binary = providerBinary(name)!;
    const installed = installedBinaryPackage(binary, root);
    return installed ? `${name.padEnd(9)} installed (${installed})` : `${name.padEnd(9)} not installed: pincer provider add ${name}`;
  });
}

async function addProvider(name: string, root: string): Promise<number> {
  const binary = providerBinary(name);
  if (!binary || !(name in ADDABLE)) {
    throw new PincerError(
      'invalid-input',
      `unknown provider "${name}" (addable: ${Object.keys(ADDABLE).join(', ')}; the built-in runtime and the mock need nothing)`,
    );
  }
  const present = installedBinaryPackage(binary, root);
  if (present) {
    process.stdout.write(`${name}: already installed (${present})\n`);
    return 0;
  }
  const pkg = binary.candidates[0]!;
  const spec = pinnedSpec(pkg, binary.parent, root);
  // npm removes what package.json does not name: the binaries added before go in the same command, or they would go.
  const kept = Object.keys(ADDABLE)
    .filter((other) => other !== name)
    .flatMap((other) => {
      const installed = installedBinaryPackage(providerBinary(other)!, root);
      return installed ? [pinnedSpec(installed, providerBinary(other)!.parent, root)] : [];
    });
  process.stderr.write(`pincer: installing ${ADDABLE[name]} (${spec}) into ${path.join(root, 'node_modules')} with npm…\n`);
  const started = Date.now();
  // --loglevel=http: a line per download, its progress where stderr is not a terminal (it is kept for the error line)
  const args = ['install', '--no-save', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=http', spec, ...kept];
  const { code, output } = await runNpm(args, root);
  if (code !== 0 || !installedBinaryPackage(binary, root)) {
    const why = output.match(/npm error (?:code )?(\S.*)/)?.[1] ?? `npm exited with ${code}`;
    throw new PincerError(
      'unavailable',
      `could not install ${spec} from the npm registry (${why.trim()}); it needs the registry (npm config get registry) — check the network, or install it later with pincer provider add ${name}`,
    );
  }
  process.stdout.write(`${name}: installed ${spec} in ${((Date.now() - started) / 1000).toFixed(1)} s; pincer doctor shows what it needs to run (a key)\n`);
  return 0;
}

/**
 * `pkg@version` as Pincer's lockfile pins it (an alias as `pkg@npm:name@version`), else as the installed parent SDK's
 * optionalDependencies name it.
 */
export function pinnedSpec(pkg: string, parent: string, root: string): string {
  const lock = readJson(path.join(root, 'package-lock.json')) as { packages?: Record<string, { version?: string; name?: string }> } | undefined;
  const entry = lock?.packages?.[`node_modules/${pkg}`];
  if (entry?.version) return entry.name && entry.name !== pkg ? `${pkg}@npm:${entry.name}@${entry.version}` : `${pkg}@${entry.version}`;
  const parentDir = installedPackageDir(parent, root);
  const manifest = parentDir ? (readJson(path.join(parentDir, 'package.json')) as { optionalDependencies?: Record<string, string> } | undefined) : undefined;
  const range = manifest?.optionalDependencies?.[pkg];
  if (range) return `${pkg}@${range}`;
  throw new PincerError('unavailable', `no pinned version of ${pkg}: neither ${path.join(root, 'package-lock.json')} nor an installed ${parent} names it`);
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined; // absent or unreadable: the next source is tried
  }
}

/** npm (the one beside this Node, else on PATH), its progress on this terminal; the output is kept for the error line. */
function runNpm(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  const beside = path.join(path.dirname(process.execPath), 'npm');
  const npm = fs.existsSync(beside) ? beside : 'npm';
  // npm needs none of the keys and tokens of this environment
  const secrets = new Set([...SETTINGS.filter((s) => s.secret).map((s) => s.name), ...PLATFORM_SECRETS]);
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !secrets.has(key)));
  return new Promise((resolve, reject) => {
    const child = spawn(npm, args, { cwd, env, stdio: ['ignore', 'inherit', 'pipe'] });
    let output = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      process.stderr.write(chunk);
    });
    child.once('error', (err) => reject(new PincerError('unavailable', `could not run npm (${err.message}): pincer provider add installs with npm`)));
    child.once('close', (code) => resolve({ code, output }));
  });
}
