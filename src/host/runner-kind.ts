import { spawnSync } from 'node:child_process';
import { USR_ROOT } from '../container/bwrap.js';
import { createLauncher, loadLauncherConfig } from '../container/config.js';
import { CLI_ENTRY } from '../shared/cli-entry.js';
import type { RunnerKind } from '../container/types.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { HostConfig } from './types.js';

/**
 * `PINCER_RUNNER=auto` (the default): agents run sandboxed whenever this machine can. bubblewrap when it is installed
 * and works (user namespaces allowed), else Docker when a daemon answers and the runner image is there, else a plain
 * process — with one warning, since then an agent has the host user's rights.
 */
export const UNSANDBOXED_WARNING = 'agents run unsandboxed: install bubblewrap or Docker';

export async function resolveRunnerKind(runners: Pick<HostConfig['runners'], 'kind' | 'env'>, log?: Logger): Promise<{ kind: RunnerKind; why: string }> {
  if (runners.kind !== 'auto') return { kind: runners.kind, why: 'PINCER_RUNNER' };
  const config = loadLauncherConfig(runners.env, CLI_ENTRY);
  if (bwrapWorks()) return { kind: 'bwrap', why: 'auto: bubblewrap works here' };
  try {
    await createLauncher({ ...config, kind: 'docker' }).check();
    return { kind: 'docker', why: 'auto: the Docker daemon answers and the runner image exists' };
  } catch (err) {
    log?.debug(`auto runner: no Docker (${errorMessage(err)})`);
  }
  log?.warn(UNSANDBOXED_WARNING);
  return { kind: 'process', why: `auto: ${UNSANDBOXED_WARNING}` };
}

/** bwrap is on PATH and can create its namespaces (a kernel or container may forbid user namespaces). */
export function bwrapWorks(): boolean {
  const probe = spawnSync('bwrap', ['--unshare-all', ...USR_ROOT, '/usr/bin/true'], { stdio: 'ignore', timeout: 5000 });
  return probe.status === 0;
}
