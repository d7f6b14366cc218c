import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { installedBinaryPackage, installedBinaryPath, providerBinary } from '../../runtime/provider-binaries.js';
import { ProviderError } from '../registry.js';

/**
 * The local `opencode serve` process, one per runner. Started here rather than with the SDK's `createOpencode()`,
 * which always inherits the runner's whole environment, finds `opencode` only on PATH and cannot take port 0: the
 * provider needs its own environment (isolated XDG dirs, no foreign secrets), the binary from node_modules, and a
 * process group it can kill with every MCP server the server started.
 */
export interface OpenCodeServer {
  url: string;
  pid: number;
  /** resolves once the process has exited. */
  exited: Promise<void>;
  /** SIGTERM to the whole process group, SIGKILL after a grace period; resolves once it has exited. */
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);

/**
 * The `opencode` binary: OPENCODE_BIN, else the one `opencode-ai` installed beside Pincer (its postinstall links the
 * platform binary over a placeholder script), else whatever `opencode` is on PATH.
 */
export function resolveOpenCodeBinary(configured: string | undefined): string {
  if (configured) return configured;
  let packageJson: string;
  try {
    packageJson = require.resolve('opencode-ai/package.json');
  } catch {
    // not installed as a package: the platform package `pincer provider add opencode` installs, else the one on PATH
    const binary = providerBinary('opencode')!;
    const installed = installedBinaryPackage(binary);
    return (installed && installedBinaryPath(binary, installed)) ?? 'opencode';
  }
  const manifest = JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { bin?: Record<string, string> };
  const binary = path.join(path.dirname(packageJson), manifest.bin?.opencode ?? 'bin/opencode');
  // The placeholder is a small script that only prints "postinstall script was not run".
  if (fs.existsSync(binary) && fs.statSync(binary).size < 64 * 1024) {
    throw new ProviderError(
      'unavailable',
      `opencode: ${binary} is the placeholder left when opencode-ai's postinstall did not run; run \`node ${path.join(path.dirname(packageJson), 'postinstall.mjs')}\` or reinstall with install scripts allowed`,
    );
  }
  return fs.existsSync(binary) ? binary : 'opencode';
}

/** A free loopback port (`opencode serve --port=0` still binds 4096). */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('could not pick a free port');
  return address.port;
}

export async function startOpenCodeServer(options: {
  binary: string;
  env: Record<string, string>;
  cwd: string;
  timeoutMs: number;
  signal: AbortSignal;
}): Promise<OpenCodeServer> {
  const port = await freePort();
  // The server runs in its own process group (so close() reaches the MCP servers it starts) under a small shell
  // guard that holds a pipe from the runner: when the runner dies, even by SIGKILL, the pipe closes, `read` returns
  // and the guard kills the whole group. A detached server would otherwise outlive a killed runner.
  // (A minimal image without /bin/sh runs the server unguarded.)
  const args = ['serve', '--hostname=127.0.0.1', `--port=${port}`];
  const guard = '"$0" "$@" </dev/null & read -r _; kill -TERM 0';
  const [command, argv] = fs.existsSync('/bin/sh') ? ['/bin/sh', ['-c', guard, options.binary, ...args]] : [options.binary, args];
  const child = spawn(command, argv, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin!.on('error', () => {}); // the guard may be gone first
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const close = (): Promise<void> => stopGroup(child, exited);
  let output = '';
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`opencode server did not start within ${options.timeoutMs} ms`)), options.timeoutMs);
      const onAbort = (): void => reject(new Error('aborted while the opencode server was starting'));
      options.signal.addEventListener('abort', onAbort, { once: true });
      const done = (): void => {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', onAbort);
      };
      const onData = (chunk: Buffer): void => {
        output = (output + chunk.toString('utf8')).slice(-8192);
        const match = /opencode server listening on\s+(https?:\/\/\S+)/.exec(output);
        if (match) {
          done();
          resolve(match[1]!);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('error', (err) => (done(), reject(err)));
      child.once('exit', (code, signal) => (done(), reject(new Error(`opencode server exited (${code ?? signal}) during start-up: ${output.trim()}`))));
    });
    // Keep draining its output so the pipes never fill up.
    child.stdout!.resume();
    child.stderr!.resume();
    return { url, pid: child.pid!, exited, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function stopGroup(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid === undefined) return;
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  signalGroup('SIGTERM');
  const killTimer = setTimeout(() => signalGroup('SIGKILL'), 2000);
  await exited;
  clearTimeout(killTimer);
  // The leader has exited; anything left in its group (an MCP server that ignored SIGTERM) goes now.
  signalGroup('SIGKILL');
}
