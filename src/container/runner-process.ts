import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { CLI_ENTRY, SESSION_NODE_FLAGS } from '../shared/cli-entry.js';

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
  const child = spawn(process.execPath, [...SESSION_NODE_FLAGS, CLI_ENTRY, 'runner'], {
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
