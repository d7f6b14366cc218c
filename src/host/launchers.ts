import type { ChildProcess } from 'node:child_process';
import { createLauncher, loadLauncherConfig } from '../container/config.js';
import { CLI_ENTRY, spawnRunner, stopRunner } from './runner-process.js';
import type { HostConfig } from './types.js';

/**
 * How the host starts a runner, behind one seam: `launch(options)` → a handle to stop or kill it. The shapes follow
 * the `container` branch's `RunnerLauncher` (src/container/types.ts) so its process, Docker and bubblewrap launchers
 * can be passed to `RunnerSupervisor` as they are.
 */
export type RunnerKind = 'process' | 'docker' | 'bwrap';

export interface LaunchOptions {
  /** the session folder; a container mounts it at /workspace. */
  workspace: string;
  /** the agent group's folder (a container mounts it at /workspace/agent). */
  agentDir?: string;
  /** the shared global folder (a container mounts it read-only at /workspace/global). */
  globalDir?: string;
  /** the environment the runner would get as a child process; a container takes only what it needs from it. */
  env: NodeJS.ProcessEnv;
  /** append the runner's stderr here. */
  logFile?: string;
  /** a short name (the session id): a container is named after it so a later host can find it. */
  name?: string;
}

export interface LaunchedRunner {
  readonly kind: RunnerKind;
  /** the local process whose `exit` is the runner's end (the runner, or the `docker run` client). */
  readonly child: ChildProcess;
  /** the container's name (`docker` only). */
  readonly containerName?: string;
  /** SIGTERM (the runner finishes its batch), SIGKILL after `graceMs`; resolves once it has ended. */
  stop(graceMs?: number): Promise<number | string>;
  /** end it now (a container is removed); resolves once it has ended. */
  kill(): Promise<number | string>;
}

export type LaunchRunner = (options: LaunchOptions) => LaunchedRunner;

/** A runner as a plain child process of the host (the default). */
export const launchProcessRunner: LaunchRunner = (options) => {
  const child = spawnRunner({ workspace: options.workspace, env: options.env, logFile: options.logFile });
  const exited = exitOf(child);
  return {
    kind: 'process',
    child,
    stop: (graceMs = 5000) => stopRunner(child, graceMs),
    kill: () => {
      child.kill('SIGKILL');
      return exited;
    },
  };
};

/** The launcher the configuration asks for (PINCER_RUNNER). */
export function launcherFor(config: HostConfig['runners']): LaunchRunner {
  if (config.kind === 'process') return launchProcessRunner;
  // src/container's Docker and bubblewrap launchers, configured from the runners' environment (DOCKER_HOST,
  // PINCER_CONTAINER_*, PINCER_BWRAP_NETWORK); read here, at the host's start, so a bad value fails it at once.
  const launcher = createLauncher({ ...loadLauncherConfig(config.env, CLI_ENTRY), kind: config.kind });
  return (options) => launcher.launch(options);
}

/** Resolves with the exit code (or signal) once `child` has exited, at once if it already has. */
export function exitOf(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? child.signalCode ?? -1);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
}
