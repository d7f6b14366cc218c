import { spawn } from 'node:child_process';
import { CLI_ENTRY, SESSION_NODE_FLAGS } from '../shared/cli-entry.js';
import { launchedRunner, lifelineEnv, lockedCommand, runnerStdio, sendStdinDocument } from './handle.js';
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

  constructor(
    private readonly cliEntry: string = CLI_ENTRY,
    /** run task scripts (PINCER_UNSANDBOXED_SCRIPTS=1); refused otherwise. */
    private readonly scriptsAllowed = false,
  ) {}

  async check(): Promise<void> {}

  launch(options: LaunchOptions): LaunchedRunner {
    const stdio = runnerStdio(options);
    const command = lockedCommand(options.lockFile, process.execPath, [...SESSION_NODE_FLAGS, this.cliEntry, 'runner']);
    const child = spawn(command.file, command.args, {
      env: {
        ...options.env,
        ...lifelineEnv(options),
        ...(this.scriptsAllowed ? {} : { PINCER_SCRIPTS_REFUSED: SCRIPTS_REFUSED_UNSANDBOXED }),
        PINCER_WORKSPACE: options.workspace,
      },
      stdio: stdio.stdio,
    });
    stdio.close();
    sendStdinDocument(child, options);
    return launchedRunner('process', child, {
      terminate: () => child.kill('SIGTERM'),
      forceKill: () => child.kill('SIGKILL'),
      killMarginMs: 0,
    });
  }
}
