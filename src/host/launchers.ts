import { createLauncher, loadLauncherConfig } from '../container/config.js';
import type { LaunchedRunner, LaunchOptions } from '../container/types.js';
import { CLI_ENTRY } from '../shared/cli-entry.js';
import type { HostConfig } from './types.js';

/**
 * How the host starts a runner, behind one seam: `launch(options)` → a handle to stop or kill it. The launchers —
 * plain child process (the default), Docker, bubblewrap — and their types live in src/container.
 */
export type { LaunchedRunner, LaunchOptions, RunnerKind } from '../container/types.js';

/**
 * What the host's supervisor needs of a started runner, whatever started it: a launcher's process, container or
 * sandbox, or a runner in the host's own process (the in-process launcher of src/testing). `pid` is the local
 * process's (the host's own for an in-process runner); undefined when the spawn failed at once.
 */
export interface StartedRunner extends Pick<LaunchedRunner, 'containerName' | 'exited' | 'stop' | 'kill' | 'limitsHit'> {
  readonly kind: LaunchedRunner['kind'] | 'in-process';
  readonly pid: number | undefined;
}

export type LaunchRunner = ((options: LaunchOptions) => StartedRunner) & {
  /** let go of what the launcher keeps between launches (spare runners); called once the host's runners are stopped. */
  close?: () => Promise<void>;
};

/** A launcher's handle as the supervisor sees it (its process's errors are logged; they also end `exited`). */
export function started(runner: LaunchedRunner, warn: (line: string) => void, name = 'a session'): StartedRunner {
  runner.child.on('error', (err) => warn(`runner for ${name}: ${err.message}`));
  const { kind, containerName, exited, stop, kill, limitsHit } = runner;
  return { kind, pid: runner.child.pid, containerName, exited, stop, kill, limitsHit };
}

/**
 * The launcher the configuration asks for (PINCER_RUNNER), configured from the runners' environment (DOCKER_HOST,
 * PINCER_CONTAINER_*, PINCER_BWRAP_NETWORK) and read here, at the host's start, so a bad value fails it at once. Every
 * kind keeps the runner's stdin open as a lifeline: a host that dies, even by SIGKILL, takes its runners with it.
 */
export function launcherFor(config: HostConfig['runners'], warn: (line: string) => void, info: (line: string) => void = () => undefined): LaunchRunner {
  if (config.kind === 'auto') throw new Error('PINCER_RUNNER=auto must be resolved before runners are launched (resolveRunnerKind)');
  // Spares only for process runners: a sandbox binds its session's folders when it starts, so it cannot wait for one.
  const spares = config.kind === 'process' && config.spares ? { count: config.spares, env: config.env, warn, info } : undefined;
  const launcher = createLauncher({ ...loadLauncherConfig(config.env, CLI_ENTRY), kind: config.kind, ...(spares ? { spares } : {}) });
  const launch: LaunchRunner = (options) => started(launcher.launch(options), warn, options.name);
  if (launcher.close) launch.close = () => launcher.close!();
  return launch;
}
