import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { createLogger } from '../shared/log.js';
import { sandboxEnvironment } from './env.js';
import { ContainerError } from './errors.js';
import { launchedRunner, lifelineEnv, lockedCommand, onPath, runnerStdio, sendStdinDocument } from './handle.js';
import type { BwrapSettings, LaunchedRunner, LaunchOptions, RunnerLauncher } from './types.js';
import { linkedModules, resolveFolders, SANDBOX_GROUP_DIR, SANDBOX_OTLP_DIR, SANDBOX_PROXY_DIR, type RunnerFolders } from './workspace.js';
import { heldBy, makeRunnerCgroup, planCgroups, type CgroupPlan, type RunnerCgroup } from './cgroup.js';
import { limitedCommand, prlimitOptions, runnerLimits } from './limits.js';
import { SESSION_NODE_FLAGS } from '../shared/cli-entry.js';
import { NO_NETWORK_ENV } from '../shared/sandbox-network.js';

const log = createLogger('container');

/**
 * Runners in a bubblewrap sandbox (CONTAINER-NOTES.md): no daemon, ~0.14 s to start, works as non-root. A tmpfs root
 * with the host's /usr and a few files of /etc read-only, the session at /workspace, the app read-only at /app, new namespaces
 * (only loopback inside unless PINCER_BWRAP_NETWORK=host), no capabilities, a clean environment, and `--die-with-parent` plus
 * the stdin lifeline so a runner never outlives its host. bwrap does not forward SIGTERM, so `stop()` signals the runner's Node process directly.
 */
export class BwrapLauncher implements RunnerLauncher {
  readonly kind = 'bwrap' as const;

  private cgroups?: CgroupPlan;

  constructor(
    private readonly settings: BwrapSettings,
    private readonly cliEntry: string,
  ) {}

  /** The cgroups this host can make (looked at once). */
  get cgroupPlan(): CgroupPlan {
    this.cgroups ??= planCgroups();
    return this.cgroups;
  }

  async check(): Promise<void> {
    if (onPath('bwrap') === undefined) throw new ContainerError('bwrap-unavailable', 'bwrap not found on PATH (install bubblewrap)');
  }

  launch(options: LaunchOptions): LaunchedRunner {
    const folders = resolveFolders(options);
    // the lifeline too, not only --die-with-parent: bwrap arms that only once its sandbox is set up, so a host killed
    // in the first milliseconds of a start left the sandbox running with no parent (and a second runner beside the
    // next host's); a runner whose stdin closes stops by itself
    const env: Record<string, string> = { ...sandboxEnvironment(options, this.settings.extraEnv), ...lifelineEnv(options) };
    if (this.settings.isolateNetwork) env[NO_NETWORK_ENV] = 'PINCER_BWRAP_NETWORK=host';
    const stdio = runnerStdio(options);
    const plan = this.cgroupPlan;
    const limits = this.settings.limits ?? runnerLimits();
    let cgroup: RunnerCgroup | undefined;
    try {
      if (Object.keys(plan.parents).length > 0) cgroup = makeRunnerCgroup(plan, limits);
    } catch (error) {
      stdio.close();
      throw new ContainerError('limits', `cannot set the runner's resource limits: ${(error as Error).message}`);
    }
    const options_ = prlimitOptions(limits, heldBy(plan), process.getuid?.() ?? 0);
    const limited = limitedCommand(
      cgroup?.dirs ?? [],
      onPath('prlimit'),
      options_,
      onPath('bwrap') ?? 'bwrap',
      bwrapArgs(this.settings, folders, this.cliEntry),
    );
    const command = lockedCommand(options.lockFile, limited.file, limited.args);
    const child = spawn(command.file, command.args, { env: {}, stdio: [...stdio.stdio, 'pipe'] });
    stdio.close();
    // The environment goes through fd 3 (`--args 3`), never on the command line: any local user reads
    // /proc/<pid>/cmdline, and it held the placeholder key and the proxy's address.
    const envPipe = child.stdio[ENV_FD] as Writable | null;
    envPipe?.on('error', () => undefined); // bwrap ended before reading it: its exit says why
    envPipe?.end(
      bwrapEnvArgs(env)
        .map((arg) => `${arg}\0`)
        .join(''),
    );
    sendStdinDocument(child, options);
    log.info(`started bwrap runner for ${folders.workspace} (${Object.keys(env).length} variables)`);
    return launchedRunner('bwrap', child, {
      terminate: () => {
        const runner = child.pid === undefined ? undefined : runnerUnder(child.pid);
        if (runner !== undefined) signal(runner, 'SIGTERM');
        else child.kill('SIGKILL'); // not started yet (or still waiting for the launch lock): nothing to lose
      },
      forceKill: () => child.kill('SIGKILL'), // --die-with-parent takes the sandbox down with bwrap
      killMarginMs: 0,
      afterExit: async () => {
        const events = await cgroup?.close();
        if (events?.oomKills) log.warn(`a process of the bwrap runner for ${folders.workspace} was killed at its memory limit (${events.oomKills} times)`);
        if (events?.forksRefused) log.warn(`the bwrap runner for ${folders.workspace} reached its process limit (${events.forksRefused} forks refused)`);
        return events;
      },
    });
  }
}

const ETC_ENTRIES = ['passwd', 'group', 'hosts', 'resolv.conf', 'nsswitch.conf', 'localtime', 'ssl', 'ca-certificates', 'alternatives'];

/** The descriptor bwrap reads the runner's environment from (NUL-separated `--setenv` arguments). */
const ENV_FD = 3;

/** The `--setenv` arguments of the runner's environment: sent through `ENV_FD`, never on the command line. */
export function bwrapEnvArgs(env: Record<string, string>): string[] {
  const setenv = { ...env, PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', PINCER_WORKSPACE: '/workspace' };
  const args: string[] = [];
  for (const [name, value] of Object.entries(setenv).sort(([a], [b]) => a.localeCompare(b))) args.push('--setenv', name, value);
  return args;
}

/**
 * The bwrap arguments (pure, for tests). Host paths are never exposed beyond the listed binds; the environment is
 * not among them (`--args`: see `bwrapEnvArgs`).
 */
/** The sandbox's root: the machine's /usr read-only, with the merged-/usr links beside it (also what the probe runs in). */
export const USR_ROOT: readonly string[] = [
  ['--ro-bind', '/usr', '/usr'],
  ...['lib', 'lib64', 'bin', 'sbin'].map((dir) => ['--symlink', `usr/${dir}`, `/${dir}`]),
].flat();

export function bwrapArgs(settings: BwrapSettings, folders: RunnerFolders, cliEntry: string): string[] {
  const args = ['--unshare-all'];
  if (!settings.isolateNetwork) args.push('--share-net');
  // run by root, bwrap keeps every capability inside unless told otherwise
  args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--clearenv');
  args.push('--args', String(ENV_FD)); // the environment (`bwrapEnvArgs`), read from that descriptor
  args.push(...USR_ROOT, '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--bind', folders.workspace, '/workspace');
  // only the parts of /etc a runner and its tools use: never the whole folder (shadow, keys, host config)
  for (const entry of ETC_ENTRIES) args.push('--ro-bind-try', `/etc/${entry}`, `/etc/${entry}`);
  if (folders.groupDir) args.push('--ro-bind', folders.groupDir, SANDBOX_GROUP_DIR);
  if (folders.globalDir) args.push('--ro-bind', folders.globalDir, '/workspace/global');
  if (folders.proxySocketDir) args.push('--ro-bind', folders.proxySocketDir, SANDBOX_PROXY_DIR);
  if (folders.traceRelayDir) args.push('--ro-bind', folders.traceRelayDir, SANDBOX_OTLP_DIR);
  args.push('--ro-bind', settings.appRoot, '/app');
  const modules = linkedModules(settings.appRoot);
  if (modules) args.push('--ro-bind', modules, modules);
  let node = fs.realpathSync(settings.node);
  if (!node.startsWith('/usr/')) {
    // a Node outside /usr (nvm, a tarball): bind its folder read-only
    args.push('--ro-bind', path.dirname(node), '/opt/pincer-node');
    node = path.join('/opt/pincer-node', path.basename(node));
  }
  const entry = path.posix.join('/app', path.relative(settings.appRoot, cliEntry).split(path.sep).join('/'));
  args.push('--chdir', '/workspace', node, ...SESSION_NODE_FLAGS, entry, 'runner');
  return args;
}

/**
 * The runner under a bwrap pid: the first descendant that is not bwrap itself (bwrap → bwrap as the sandbox's init →
 * node). Deeper processes (a provider's CLI, the MCP server) are the runner's own children and are not chosen.
 */
export function runnerUnder(pid: number): number | undefined {
  const children = new Map<number, Array<{ pid: number; comm: string }>>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may contain spaces, so split around the last ')'.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), { pid: Number(entry), comm }]);
    } catch {
      // the process ended while we looked
    }
  }
  let current = pid;
  for (;;) {
    const next = children.get(current)?.[0];
    if (next === undefined) return undefined;
    if (next.comm !== 'bwrap') return next.pid;
    current = next.pid;
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}
