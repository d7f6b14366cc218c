import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The agent binaries of the SDK providers: each SDK (its JavaScript, small, always installed) runs a platform binary
 * that npm installs as one of the SDK's optional dependencies (Claude Code 384 MB, Codex 411 MB, OpenCode 177 MB).
 * `npm ci --omit=optional` leaves them out (and Pincer's optional opencode-ai, which would fetch its binary itself);
 * `pincer provider add <name>` installs this platform's one, at the version Pincer's lockfile pins, into Pincer's own
 * node_modules.
 */
export interface ProviderBinary {
  /** the installed package whose `optionalDependencies` name the platform packages and their versions */
  parent: string;
  /** this platform's packages, the preferred first: one of them installed is enough */
  candidates: string[];
  /** the binary inside the package (a package folder without it is not installed); none: its manifest is enough */
  file?: string;
}

/** Pincer's package folder (where its node_modules is): the nearest one above this module with Pincer's manifest. */
export const PACKAGE_ROOT = packageRoot(path.dirname(fileURLToPath(import.meta.url)));

function packageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      if ((JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === 'pincer') return dir;
    } catch {
      // no manifest here (or not JSON): one folder up
    }
    if (path.dirname(dir) === dir) return path.resolve(from, '../../..'); // dist/src/runtime, as built
  }
}

/** The binary package of each SDK provider on this machine, or undefined where the SDK ships none for it. */
export function providerBinary(name: string, platform: NodeJS.Platform = process.platform, arch: string = process.arch): ProviderBinary | undefined {
  const musl = platform === 'linux' && isMusl();
  switch (name) {
    case 'claude':
      return {
        parent: '@anthropic-ai/claude-agent-sdk',
        candidates: [`@anthropic-ai/claude-agent-sdk-${platform}-${arch}${musl ? '-musl' : ''}`],
        file: platform === 'win32' ? 'claude.exe' : 'claude',
      };
    case 'codex':
      return { parent: '@openai/codex', candidates: [`@openai/codex-${platform}-${arch}`] };
    case 'opencode': {
      // opencode-ai (an optional dependency of Pincer) copies the binary beside itself; the platform package alone is enough
      const base = `opencode-${platform === 'win32' ? 'windows' : platform}-${arch}`;
      const variants = arch === 'x64' ? (hasAvx2() ? ['', '-baseline'] : ['-baseline', '']) : [''];
      return {
        parent: 'opencode-ai',
        candidates: variants.map((v) => `${base}${v}${musl ? '-musl' : ''}`),
        file: platform === 'win32' ? 'bin/opencode.exe' : 'bin/opencode',
      };
    }
    default:
      return undefined;
  }
}

/** The installed one of `binary`'s candidates, if any. */
export function installedBinaryPackage(binary: ProviderBinary, root = PACKAGE_ROOT): string | undefined {
  return binary.candidates.find((pkg) => installedBinaryPath(binary, pkg, root) !== undefined);
}

/** Where `pkg` (one of `binary`'s candidates) has its binary (its folder when it names no file), if it is installed. */
export function installedBinaryPath(binary: ProviderBinary, pkg: string, root = PACKAGE_ROOT): string | undefined {
  const dir = installedPackageDir(pkg, root);
  if (dir === undefined || binary.file === undefined) return dir;
  const file = path.join(dir, binary.file);
  return fs.existsSync(file) ? file : undefined;
}

/**
 * `pkg`'s folder as Node would find it from Pincer's code: `node_modules/<pkg>` in Pincer's folder or one above (npm
 * hoists the SDKs' platform packages there). A package folder without its manifest is not installed.
 */
export function installedPackageDir(pkg: string, root = PACKAGE_ROOT): string | undefined {
  for (let dir = root; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', pkg);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

let musl: boolean | undefined;
function isMusl(): boolean {
  try {
    musl ??= fs.readdirSync('/lib').some((file) => file.startsWith('ld-musl-')); // musl's loader, as Alpine has it
  } catch {
    musl = false; // no /lib: not a musl Linux
  }
  return musl;
}

let avx2: boolean | undefined;
function hasAvx2(): boolean {
  try {
    avx2 ??= /(^|\s)avx2(\s|$)/i.test(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    avx2 = false; // no /proc: the baseline build runs everywhere
  }
  return avx2;
}
