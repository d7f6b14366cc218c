import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

/**
 * Starts the real `pincer runner` process (the compiled CLI in dist/, built by `npm test`'s pretest) and always stops
 * it: `stopAllRunners()` in afterEach kills whatever a test left running and proves nothing is left.
 */
export const BUILT_CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

/**
 * Run a short `pincer …` command (the compiled CLI) to its end without blocking the test's event loop, so HTTP
 * connections the test holds stay serviced meanwhile (spawnSync would let a keep-alive socket go stale unnoticed).
 */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = { PATH: process.env.PATH },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BUILT_CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

export interface RunnerHandle {
  child: ChildProcess;
  /** everything the runner wrote to stderr so far. */
  stderr(): string;
  /** resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
  /** wait until the runner logged that it is ready (default: 10 s; more for providers that load an SDK at start). */
  ready(timeoutMs?: number): Promise<void>;
}

const running = new Set<RunnerHandle>();

/** `stdin`: written to the runner's stdin (kept open), as a launcher hands over its launch document. */
export function startRunner(workspace: string, env: Record<string, string> = {}, options: { stdin?: string } = {}): RunnerHandle {
  const child = spawn(process.execPath, [BUILT_CLI, 'runner'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AGENT_PROVIDER: 'mock',
      TZ: 'UTC',
      PINCER_WORKSPACE: workspace,
      ...env,
    },
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'],
  });
  if (options.stdin !== undefined) {
    child.stdin!.on('error', () => undefined); // it exited first: its exit code says why
    child.stdin!.write(options.stdin);
  }
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(handle);
      resolve(code ?? signal ?? -1);
    }),
  );
  const handle: RunnerHandle = {
    child,
    stderr: () => stderr,
    exited,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
    kill: (signal = 'SIGKILL') => {
      child.kill(signal);
      return exited;
    },
    ready: async (timeoutMs = 10_000) => {
      await waitFor('runner ready', () => stderr.includes('[runner] ready') || child.exitCode !== null, { timeoutMs });
      if (child.exitCode !== null) throw new Error(`runner exited early (${child.exitCode}): ${stderr}`);
    },
  };
  running.add(handle);
  return handle;
}

/** Kill any runner a test left behind and report whether there was one (afterEach asserts there was none). */
export async function stopAllRunners(): Promise<number> {
  const left = [...running];
  await Promise.all(left.map((handle) => handle.kill('SIGKILL')));
  return left.length;
}
