import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { createLogger, errorMessage } from '../shared/log.js';
import { checkDockerDaemon, docker, removeContainer } from './docker-cli.js';
import { containerNameFor, dockerRunArgs, LAUNCH_LABEL, RUNNER_LABEL, runnerUser } from './docker-args.js';
import { sandboxEnvironment } from './env.js';
import { NO_NETWORK_ENV } from '../shared/sandbox-network.js';
import { ContainerError } from './errors.js';
import { launchedRunner, lifelineEnv, lockedCommand, runnerStdio, sendStdinDocument } from './handle.js';
import { identityFiles } from './identity.js';
import type { LimitEvents } from './cgroup.js';
import type { DockerSettings, LaunchedRunner, LaunchOptions, RunnerLauncher } from './types.js';
import { resolveFolders } from './workspace.js';

const log = createLogger('container');

/**
 * Runners in Docker containers through the docker CLI (no SDK: `docker run` attached is the simplest handle whose
 * exit is the container's). The CLI is the local child. The container is named after the session (one per name: a
 * leftover of that name is removed before the run) and carries a per-launch label by which it is always removed:
 * `stop()` is `docker stop` (SIGTERM via tini, SIGKILL after the grace), `kill()` is `docker rm -f`, and whenever the
 * CLI ends — even if it was SIGKILLed and the container still runs — `docker rm -f` runs before `exited` resolves,
 * after the daemon's `oom` events of this launch have been counted (`limitsHit`: the chat is told).
 */
export class DockerLauncher implements RunnerLauncher {
  readonly kind = 'docker' as const;

  constructor(
    private readonly settings: DockerSettings,
    private readonly cliEntry: string,
  ) {}

  async check(): Promise<void> {
    await checkDockerDaemon(this.settings.cliEnv);
    try {
      await docker(['image', 'inspect', '--format', '{{.Id}}', this.settings.image], this.settings.cliEnv, 30_000);
    } catch {
      throw new ContainerError('docker-failed', `runner image "${this.settings.image}" not found: build it with \`pincer container image\``);
    }
  }

  launch(options: LaunchOptions): LaunchedRunner {
    const folders = resolveFolders(options);
    const env: Record<string, string> = { ...sandboxEnvironment(options, this.settings.extraEnv), ...lifelineEnv(options) };
    if (this.settings.network === 'none') env[NO_NETWORK_ENV] = 'PINCER_CONTAINER_NETWORK (e.g. bridge)';
    const containerName = containerNameFor(options.name ?? crypto.randomUUID().slice(0, 12));
    const launchId = crypto.randomUUID();
    const user = runnerUser(this.settings, folders);
    const identity = identityFiles(user);
    const args = dockerRunArgs(this.settings, { containerName, launchId, folders, cliEntry: this.cliEntry, envNames: Object.keys(env), identity });
    const cliEnv = this.settings.cliEnv;
    const stdio = runnerStdio(options);
    // One container per name: a leftover of the same name (a host that died, a run cut short between create and
    // start) is removed first. `exec` keeps the pid: the child is the docker CLI itself, so signals reach it.
    // The launch lock is held by the CLI only; the container itself is kept single by its name.
    const command = lockedCommand(options.lockFile, '/bin/sh', ['-c', 'docker rm -f "$0" >/dev/null 2>&1; exec docker "$@"', containerName, ...args]);
    const child = spawn(command.file, command.args, {
      env: { ...cliEnv, ...env },
      stdio: stdio.stdio,
    });
    stdio.close();
    sendStdinDocument(child, options);
    log.info(`started ${containerName} (image ${this.settings.image}, user ${user}, ${Object.keys(env).length} variables)`);
    // By this launch's label, not by name: once this one is gone, a new runner of the same session may hold the name.
    const ours = async (): Promise<string[]> =>
      (await docker(['ps', '-aq', '--filter', `label=${LAUNCH_LABEL}=${launchId}`], cliEnv, 30_000)).split('\n').filter(Boolean);
    const remove = async (): Promise<void> => {
      try {
        const ids = await ours();
        if (ids.length > 0) await docker(['rm', '-f', ...ids], cliEnv, 30_000);
      } catch (err) {
        log.warn(`cannot remove ${containerName}: ${errorMessage(err)}`);
      }
    };
    const launchedAt = Date.now() / 1000 - 1; // seconds: the window of the daemon's events that are this launch's
    // `--rm` takes State.OOMKilled with the container (and must stay: a host that dies leaves no container behind), so
    // whether the kernel killed a process of it at its memory limit is read from the daemon's own events, by label.
    const afterExit = async (): Promise<LimitEvents> => {
      const events: LimitEvents = { oomKills: 0, forksRefused: 0 };
      try {
        const window = ['--since', launchedAt.toFixed(3), '--until', (Date.now() / 1000).toFixed(3)];
        const filters = ['--filter', `label=${LAUNCH_LABEL}=${launchId}`, '--filter', 'event=oom'];
        const oom = await docker(['events', ...window, ...filters, '--format', '{{.Action}}'], cliEnv, 30_000);
        events.oomKills = oom.split('\n').filter((line) => line.trim() === 'oom').length;
      } catch (err) {
        log.warn(`cannot read how ${containerName} ended: ${errorMessage(err)}`);
      }
      await remove();
      if (events.oomKills) log.warn(`a process of ${containerName} was killed at its memory limit (${events.oomKills} times)`);
      return events;
    };
    const ended = (): boolean => child.exitCode !== null || child.signalCode !== null;
    // Signalling the CLI before its container exists could cut it off between create and start and leave a container
    // nobody removes, so wait for the container (or the CLI's end) and stop the container itself.
    const stopWhenCreated = async (graceMs: number): Promise<void> => {
      const seconds = String(Math.max(1, Math.ceil(graceMs / 1000)));
      const deadline = Date.now() + graceMs;
      while (!ended() && Date.now() < deadline) {
        const ids = await ours().catch(() => []); // the daemon did not answer: the loop tries again until the grace ends
        if (ids.length > 0) {
          await docker(['stop', '--time', seconds, ...ids], cliEnv, graceMs + 30_000).catch(() => undefined); // stopping is best effort: the container is killed after the grace anyway
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    let killing = false;
    return launchedRunner('docker', child, {
      containerName,
      terminate: (graceMs) => void stopWhenCreated(graceMs),
      forceKill: () => {
        if (killing) return;
        killing = true;
        // `rm -f` kills and removes; the attached CLI then exits. If the CLI hangs, it goes too.
        void remove().then(() => {
          const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
          child.once('exit', () => clearTimeout(timer));
          if (child.exitCode !== null || child.signalCode !== null) clearTimeout(timer);
        });
      },
      killMarginMs: 5000,
      afterExit,
    });
  }
}

/** Names of the runner containers on the daemon (running or not), e.g. those left by a host that died. */
export async function listRunnerContainers(cliEnv: NodeJS.ProcessEnv): Promise<string[]> {
  const out = await docker(['ps', '-a', '--filter', `label=${RUNNER_LABEL}`, '--format', '{{.Names}}'], cliEnv);
  return out.split('\n').filter(Boolean).sort();
}

/** Remove runner containers by name (`docker rm -f`); a host calls it at start for its sessions' names. */
export async function removeRunnerContainers(names: string[], cliEnv: NodeJS.ProcessEnv): Promise<void> {
  await Promise.all(names.map((name) => removeContainer(name, cliEnv)));
}
