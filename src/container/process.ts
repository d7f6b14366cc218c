import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { CLI_ENTRY, SESSION_NODE_FLAGS } from '../shared/cli-entry.js';
import { stdinDocumentLine } from '../shared/stdin-document.js';
import { LIFELINE_ENV, launchedRunner, lifelineEnv, lockedCommand, onPath, runnerStdio, sendStdinDocument } from './handle.js';
import { SpareRunners } from './spare.js';
import type { LaunchedRunner, LaunchOptions, RunnerLauncher } from './types.js';

/**
 * A plain process runner runs a task's script as the host's user, outside any sandbox: refused unless the
 * administrator turned it on (PINCER_UNSANDBOXED_SCRIPTS=1; docs/security.md, "Task scripts").
 */
export const SCRIPTS_REFUSED_UNSANDBOXED =
  'task scripts do not run in an unsandboxed (process) runner: run runners in bubblewrap or Docker, or set PINCER_UNSANDBOXED_SCRIPTS=1 on the host';

/**
 * The default: the runner as a plain child process with the host's environment (as `spawnRunner`), behind the
 * launcher interface so the host treats every kind alike. `cliEntry` is the compiled CLI (tests pass dist's).
 */
export class ProcessLauncher implements RunnerLauncher {
  readonly kind = 'process' as const;

  private readonly spares: SpareRunners | undefined;

  constructor(
    private readonly cliEntry: string = CLI_ENTRY,
    /** run task scripts (PINCER_UNSANDBOXED_SCRIPTS=1); refused otherwise. */
    private readonly scriptsAllowed = false,
    /** keep `count` runners started without a session, in the host's runner environment `env` (PINCER_SPARE_RUNNERS). */
    spares?: { count: number; env: NodeJS.ProcessEnv; warn?: (line: string) => void; info?: (line: string) => void },
  ) {
    this.spares = spares && spares.count > 0 ? new SpareRunners(cliEntry, spares.env, spares.count, spares.warn, spares.info) : undefined;
  }

  async check(): Promise<void> {}

  /** pids of the spare runners waiting for a session. */
  sparePids(): number[] {
    return this.spares?.pids() ?? [];
  }

  async close(): Promise<void> {
    await this.spares?.close();
  }

  launch(options: LaunchOptions): LaunchedRunner {
    const spare = this.spares?.take();
    if (spare) return this.assign(spare, options);
    const stdio = runnerStdio(options);
    const command = lockedCommand(options.lockFile, process.execPath, [...SESSION_NODE_FLAGS, this.cliEntry, 'runner']);
    const child = spawn(command.file, command.args, {
      env: { ...this.sessionEnv(options), ...lifelineEnv(options) },
      stdio: stdio.stdio,
    });
    stdio.close();
    sendStdinDocument(child, options);
    return this.handle(child);
  }

  private sessionEnv(options: LaunchOptions): NodeJS.ProcessEnv {
    return {
      ...options.env,
      ...(this.scriptsAllowed ? {} : { PINCER_SCRIPTS_REFUSED: SCRIPTS_REFUSED_UNSANDBOXED }),
      PINCER_WORKSPACE: options.workspace,
    };
  }

  /**
   * Give a spare its session: the environment a launch would have started it with, the secrets and the launch lock in
   * one document on its stdin (which stays its lifeline), its stderr from now on to the session's log.
   */
  private assign(child: ChildProcess, options: LaunchOptions): LaunchedRunner {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries({ ...this.sessionEnv(options), ...LIFELINE_ENV })) if (value !== undefined) env[name] = value;
    const flock = options.lockFile === undefined ? undefined : onPath('flock');
    const lock = options.lockFile !== undefined && flock !== undefined ? { file: options.lockFile, flock } : undefined;
    const stderr = child.stderr!;
    if (options.logFile) {
      const fd = runnerStdio(options).stdio[2] as number; // opened owner-only, never through a link
      stderr.pipe(fs.createWriteStream(options.logFile, { fd }));
    } else if (options.stderr !== 'pipe') stderr.pipe(process.stderr, { end: false });
    child.stdin!.write(stdinDocumentLine({ secrets: options.secrets ?? {}, env, ...(lock ? { lock } : {}) }));
    this.spares?.assigned();
    return this.handle(child);
  }

  private handle(child: ChildProcess): LaunchedRunner {
    return launchedRunner('process', child, {
      terminate: () => child.kill('SIGTERM'),
      forceKill: () => child.kill('SIGKILL'),
      killMarginMs: 0,
    });
  }
}
