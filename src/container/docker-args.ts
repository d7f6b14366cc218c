import path from 'node:path';
import type { DockerSettings } from './types.js';
import { linkedModules, SANDBOX_GROUP_DIR, SANDBOX_OTLP_DIR, SANDBOX_PROXY_DIR, type RunnerFolders } from './workspace.js';
import { SESSION_NODE_FLAGS } from '../shared/cli-entry.js';

/** Where things are inside the container. */
export const CONTAINER_WORKSPACE = '/workspace';
export const CONTAINER_APP = '/app';
export const CONTAINER_NODE = '/usr/local/bin/node';

/** Labels on every runner container, so leftovers can be found (`listRunnerContainers`). */
export const RUNNER_LABEL = 'io.pincer.runner';
/** One launch's own label: stop and cleanup find exactly its container, never a newer one of the same name. */
export const LAUNCH_LABEL = 'io.pincer.launch';

/** Docker names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]*`; anything else in a session id becomes `-`. */
export function containerNameFor(name: string): string {
  return `pincer-runner-${name.replace(/[^a-zA-Z0-9_.-]/g, '-')}`;
}

export interface DockerRunPlan {
  containerName: string;
  /** unique per launch (`LAUNCH_LABEL`). */
  launchId: string;
  folders: RunnerFolders;
  /** the compiled CLI on the host, inside `settings.appRoot`. */
  cliEntry: string;
  /** names of the runner's variables; their values travel in the docker CLI's environment, never in argv. */
  envNames: string[];
  /** host files mounted read-only at /etc/passwd and /etc/group (naming the runner's uid). */
  identity?: { passwd: string; group: string };
}

/**
 * The `docker run` arguments for one runner (CONTAINER-NOTES.md): attached (the CLI's exit is the runner's), `--init`
 * so SIGTERM reaches Node (without it `docker stop` waits out its timeout), `--rm`, no network by default, no
 * capabilities, read-only root with a /tmp tmpfs, limits, `--mount` (fails on a missing folder where `-v` would create
 * it as root), the app read-only, and `--pull never` (there is no registry; a missing image must fail, not hang).
 */
export function dockerRunArgs(settings: DockerSettings, plan: DockerRunPlan): string[] {
  const { folders } = plan;
  const mounts = [`type=bind,src=${folders.workspace},dst=${CONTAINER_WORKSPACE}`];
  if (folders.groupDir) mounts.push(`type=bind,src=${folders.groupDir},dst=${SANDBOX_GROUP_DIR},readonly`);
  if (folders.globalDir) mounts.push(`type=bind,src=${folders.globalDir},dst=${CONTAINER_WORKSPACE}/global,readonly`);
  if (folders.proxySocketDir) mounts.push(`type=bind,src=${folders.proxySocketDir},dst=${SANDBOX_PROXY_DIR},readonly`);
  if (folders.traceRelayDir) mounts.push(`type=bind,src=${folders.traceRelayDir},dst=${SANDBOX_OTLP_DIR},readonly`);
  mounts.push(`type=bind,src=${settings.appRoot},dst=${CONTAINER_APP},readonly`);
  const modules = linkedModules(settings.appRoot);
  if (modules) mounts.push(`type=bind,src=${modules},dst=${modules},readonly`);
  if (plan.identity) {
    mounts.push(`type=bind,src=${plan.identity.passwd},dst=/etc/passwd,readonly`);
    mounts.push(`type=bind,src=${plan.identity.group},dst=/etc/group,readonly`);
  }
  const entry = path.posix.join(CONTAINER_APP, path.relative(settings.appRoot, plan.cliEntry).split(path.sep).join('/'));
  return [
    'run',
    '-i',
    '--rm',
    '--init',
    '--pull',
    'never',
    '--name',
    plan.containerName,
    '--label',
    `${RUNNER_LABEL}=1`,
    '--label',
    `${LAUNCH_LABEL}=${plan.launchId}`,
    '--network',
    settings.network,
    '--user',
    runnerUser(settings, folders),
    '--read-only',
    '--tmpfs',
    '/tmp',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--pids-limit',
    String(settings.pids),
    '--memory',
    settings.memory,
    '--cpus',
    settings.cpus,
    // a write past it fails (EFBIG); no core files (a 2 GiB runner's core would land on the host's disk)
    ...(settings.fileSizeBytes === undefined ? [] : ['--ulimit', `fsize=${settings.fileSizeBytes}`]),
    '--ulimit',
    'core=0',
    ...mounts.flatMap((mount) => ['--mount', mount]),
    '--workdir',
    CONTAINER_WORKSPACE,
    '-e',
    `PINCER_WORKSPACE=${CONTAINER_WORKSPACE}`,
    '-e',
    'HOME=/tmp',
    ...[...plan.envNames].sort().flatMap((name) => ['-e', name]),
    settings.image,
    CONTAINER_NODE,
    ...SESSION_NODE_FLAGS,
    entry,
    'runner',
  ];
}

/** `--user`: the configured one, else the session folder's owner (who must be able to write its DB files). */
export function runnerUser(settings: DockerSettings, folders: RunnerFolders): string {
  return settings.user ?? folders.owner;
}
