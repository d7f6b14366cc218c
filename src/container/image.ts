import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../shared/log.js';
import { docker } from './docker-cli.js';
import { CONTAINER_NODE } from './docker-args.js';
import { ContainerError } from './errors.js';
import { nativeFilesUnder } from './native-files.js';

const log = createLogger('container');

/** Bump when the image layout changes, so an old image is rebuilt. */
const LAYOUT_VERSION = 1;
const FINGERPRINT_VAR = 'PINCER_IMAGE_FINGERPRINT';

export interface ImageOptions {
  image: string;
  cliEnv: NodeJS.ProcessEnv;
  /** the Node binary to copy (default: the one running this). */
  node?: string;
  /**
   * the app that will be mounted at /app: its native files (addons, SDK binaries) are found under node_modules and
   * their shared libraries go into the image. A library one of them lacks on the host is left out with a warning.
   */
  appRoot?: string;
  /** more host binaries whose shared libraries must be in the image (only their libraries are copied; strict). */
  libraryUsers?: string[];
  /** host commands to copy into /usr/bin with their libraries (e.g. `ls`, `cat`, `grep`) for the agent's shell. */
  tools?: string[];
  /** rebuild even if an image with the same fingerprint exists. */
  force?: boolean;
}

export interface ImageResult {
  image: string;
  /** false when an image with the same inputs already existed. */
  built: boolean;
  fingerprint: string;
  /** wall time of the check and (if built) the import. */
  ms: number;
}

/** Files copied into the image: host path → image path. */
interface ImageFile {
  from: string;
  to: string;
}

/**
 * Build the runner's base image from the host's own Node (CONTAINER-NOTES.md: there is no registry). Node, bash (task
 * pre-scripts run in bash), the requested tools and every library `ldd` lists for them and for the app's native files
 * go into an empty root, which `docker import` turns into an image. The app itself is not in the image: it is mounted
 * read-only at run time. Idempotent: the image carries a fingerprint of its inputs (paths, sizes, modification
 * times) and is rebuilt only when they change or with `force`.
 */
export async function ensureRunnerImage(options: ImageOptions): Promise<ImageResult> {
  const started = Date.now();
  const node = fs.realpathSync(options.node ?? process.execPath);
  const binaries: ImageFile[] = [{ from: node, to: CONTAINER_NODE }];
  for (const name of ['bash', ...(options.tools ?? [])]) {
    const found = findOnPath(name);
    if (!found) throw new ContainerError('image', `${name} not found on PATH, cannot copy it into the image`);
    binaries.push({ from: fs.realpathSync(found), to: `/usr/bin/${name}` });
  }
  const strict = [...binaries.map((b) => b.from), ...(options.libraryUsers ?? [])];
  const lenient = options.appRoot ? nativeFilesUnder(options.appRoot) : [];
  const fingerprint = fingerprintOf([
    ...binaries.map((b): [string, string] => [`copy ${b.to}`, b.from]),
    ...strict.map((file): [string, string] => ['libraries of', file]),
    ...lenient.map((file): [string, string] => ['native', file]),
  ]);
  if (!options.force && (await imageFingerprint(options.image, options.cliEnv)) === fingerprint) {
    return { image: options.image, built: false, fingerprint, ms: Date.now() - started };
  }
  const libraries = new Set<string>();
  for (const binary of strict) for (const lib of sharedLibraries(binary)) libraries.add(lib);
  for (const file of lenient) {
    try {
      for (const lib of sharedLibraries(file)) libraries.add(lib);
    } catch (err) {
      log.warn(`leaving out the libraries of ${file}: ${(err as Error).message}`);
    }
  }
  const files = [...binaries, ...[...libraries].sort().map((lib) => ({ from: lib, to: lib }))];
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-image-'));
  try {
    for (const file of files) {
      const target = path.join(root, file.to);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.copyFileSync(file.from, target);
      fs.chmodSync(target, fs.statSync(file.from).mode & 0o777);
    }
    for (const dir of ['tmp', 'workspace', 'app', 'bin', 'etc']) fs.mkdirSync(path.join(root, dir), { recursive: true });
    fs.chmodSync(path.join(root, 'tmp'), 0o1777);
    fs.symlinkSync('/usr/bin/bash', path.join(root, 'bin/bash'));
    fs.symlinkSync('/usr/bin/bash', path.join(root, 'bin/sh'));
    // a passwd with root and nobody only: the runner runs as the session folder's uid, which need not be listed.
    fs.writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n');
    fs.writeFileSync(path.join(root, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
    await importRoot(root, options.image, fingerprint, options.cliEnv);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  const ms = Date.now() - started;
  log.info(`built image ${options.image} (${files.length} files) in ${ms} ms`);
  return { image: options.image, built: true, fingerprint, ms };
}

/** The absolute library paths `ldd` lists for a binary (none for a static one). */
export function sharedLibraries(binary: string): string[] {
  let out: string;
  try {
    out = execFileSync('ldd', [binary], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const text = String((err as { stdout?: unknown }).stdout ?? '') + String((err as { stderr?: unknown }).stderr ?? '');
    if (/not a dynamic executable|statically linked/.test(text)) return [];
    throw new ContainerError('image', `ldd ${binary} failed: ${text.trim() || (err as Error).message}`);
  }
  const missing = out.split('\n').find((line) => line.includes('=> not found'));
  if (missing) throw new ContainerError('image', `${binary} needs a library that is not installed: ${missing.trim()}`);
  return [...out.matchAll(/(\/[^\s]+)\s+\(0x/g)].map((match) => match[1]!).filter((lib) => fs.existsSync(lib));
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Same inputs (what, path, size, modification time; layout version) → same fingerprint. */
function fingerprintOf(inputs: Array<[what: string, file: string]>): string {
  const hash = crypto.createHash('sha256').update(`layout ${LAYOUT_VERSION}\n`);
  for (const [what, file] of inputs) {
    const stat = fs.statSync(file);
    hash.update(`${what} ${file} ${stat.size} ${stat.mtimeMs}\n`);
  }
  return hash.digest('hex').slice(0, 16);
}

async function imageFingerprint(image: string, cliEnv: NodeJS.ProcessEnv): Promise<string | undefined> {
  try {
    const out = await docker(['image', 'inspect', '--format', '{{json .Config.Env}}', image], cliEnv, 30_000);
    const env = JSON.parse(out) as string[] | null;
    return env?.find((entry) => entry.startsWith(`${FINGERPRINT_VAR}=`))?.slice(FINGERPRINT_VAR.length + 1);
  } catch {
    // no such image or unreadable output: no fingerprint, so the image is built
    return undefined;
  }
}

/** `tar -C root -c . | docker import --change … - image`. */
function importRoot(root: string, image: string, fingerprint: string, cliEnv: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const tar = spawn('tar', ['-C', root, '--numeric-owner', '-c', '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const importer = spawn(
      'docker',
      [
        'import',
        '--change',
        'ENV PATH=/usr/local/bin:/usr/bin:/bin',
        '--change',
        'ENV HOME=/tmp',
        '--change',
        `ENV ${FINGERPRINT_VAR}=${fingerprint}`,
        '--change',
        'WORKDIR /workspace',
        '-',
        image,
      ],
      { env: cliEnv, stdio: ['pipe', 'ignore', 'pipe'] },
    );
    let errors = '';
    tar.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    importer.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    // An importer that gives up early (a bad name, no daemon) closes its stdin: the EPIPE is expected, its exit code
    // tells what happened, and tar must not be left writing.
    importer.stdin.on('error', () => tar.kill());
    tar.stdout.on('error', () => undefined);
    tar.stdout.pipe(importer.stdin);
    tar.on('error', (err) => reject(new ContainerError('image', `tar: ${err.message}`)));
    importer.on('error', (err) => reject(new ContainerError('docker-unavailable', `docker CLI: ${err.message}`)));
    importer.on('exit', (code) => {
      if (code === 0) {
        resolve();
        return;
      }
      tar.kill();
      reject(new ContainerError('image', `docker import of ${image} failed (${code}): ${errors.trim()}`));
    });
  });
}
