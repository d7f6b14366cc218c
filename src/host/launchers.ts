import { createLauncher, loadLauncherConfig } from '../container/config.js';
import type { LaunchedRunner, LaunchOptions } from '../container/types.js';
import { CLI_ENTRY } from '../shared/cli-entry.js';
import type { HostConfig } from './types.js';

/**
 * How the host starts a runner, behind one seam: `launch(options)` → a handle to stop or kill it. The launchers —
 * plain child process (the default), Docker, bubblewrap — and their types live in src/container.
 */
export type { LaunchedRunner, LaunchOptions, RunnerKind } from '../container/types.js';

export type LaunchRunner = (options: LaunchOptions) => LaunchedRunner;

/**
 * The launcher the configuration asks for (PINCER_RUNNER), configured from the runners' environment (DOCKER_HOST,
 * PINCER_CONTAINER_*, PINCER_BWRAP_NETWORK) and read here, at the host's start, so a bad value fails it at once. Every
 * kind keeps the runner's stdin open as a lifeline: a host that dies, even by SIGKILL, takes its runners with it.
 */
export function launcherFor(config: HostConfig['runners']): LaunchRunner {
  if (config.kind === 'auto') throw new Error('PINCER_RUNNER=auto must be resolved before runners are launched (resolveRunnerKind)');
  const launcher = createLauncher({ ...loadLauncherConfig(config.env, CLI_ENTRY), kind: config.kind });
  return (options) => launcher.launch(options);
}
