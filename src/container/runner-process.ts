import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { CLI_ENTRY } from '../shared/cli-entry.js';

/**
 * V8 flags for a runner, which is idle most of the time:
 * - a 1 MiB young generation: the default 16 MiB semi-spaces only inflate its memory (bench: growth over 9,000
 *   messages +86 → +23 MiB, no measurable throughput loss);
 * - WebAssembly compiled by the baseline compiler only: the one wasm module a runner runs is the HTTP parser of
 *   `fetch` (undici's llhttp; the built-in runtime's model calls), and optimising it in the background left 9–30 MiB
 *   of freed compiler memory in a malloc arena in about half the runs (idle built-in runtime session: 80 → 71.5 MiB
 *   RSS). A runner parses a few HTTP responses a minute; the slower parser does not show in its latency.
 */
export const RUNNER_NODE_FLAGS = ['--max-semi-space-size=1', '--liftoff-only'];

export interface RunnerProcessOptions {
  workspace: string;
  /** environment of the runner; PINCER_WORKSPACE is set from `workspace`. */
  env: NodeJS.ProcessEnv;
  /** append the runner's stderr log here (default: inherit the parent's stderr). */
  logFile?: string;
}

/** Start a runner as a bare child process without a launcher (the bench and hand-run tools use it). */
export function spawnRunner(options: RunnerProcessOptions): ChildProcess {
  const stderr = options.logFile ? fs.openSync(options.logFile, 'a') : 'inherit';
  const child = spawn(process.execPath, [...RUNNER_NODE_FLAGS, CLI_ENTRY, 'runner'], {
    env: { ...options.env, PINCER_WORKSPACE: options.workspace },
    stdio: ['ignore', 'ignore', stderr],
  });
  if (typeof stderr === 'number') fs.closeSync(stderr);
  return child;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (or signal name). */
export function stopRunner(child: ChildProcess, graceMs = 5000): Promise<number | string> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve(child.exitCode ?? child.signalCode ?? 0);
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? 0);
    });
    child.kill('SIGTERM');
  });
}
