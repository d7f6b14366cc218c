import type { LaunchOptions, LaunchRunner, StartedRunner } from '../host/launchers.js';
import type { AgentProvider } from '../providers/types.js';
import { prepareRunner, type PreparedRunner } from '../runner/main.js';
import { createLogger, errorMessage, type Logger } from '../shared/log.js';

/**
 * Runners in the host's own process, for tests of the host without child processes: the runner's own set-up and poll
 * loop (`prepareRunner`, as `pincer runner` does it) over the session folder, with the provider the test gives. It
 * has no sandbox, no lock held by the OS and no process of its own: `pid` is the host's, and `kill()` cannot end the
 * loop at once — it stops it as `stop()` does, and the provider's query is aborted after the runner's stop grace.
 */
export function inProcessLauncher(options: {
  /** the provider a session's runner drives (called once per launch, with the session id) */
  provider: (sessionId: string) => AgentProvider;
  log?: Logger;
}): LaunchRunner {
  const log = options.log ?? createLogger('runner');
  return (launch: LaunchOptions): StartedRunner => {
    let prepared: PreparedRunner | undefined;
    let stopping = false;
    const env = { ...launch.env, PINCER_WORKSPACE: launch.workspace };
    const exited = (async (): Promise<number | string> => {
      try {
        const setup = await prepareRunner(env, log, { provider: options.provider(launch.name ?? ''), secrets: launch.secrets ?? {} });
        if (typeof setup === 'number') return setup;
        prepared = setup;
        if (stopping) setup.runner.stop();
        try {
          await setup.runner.run();
          return 0;
        } finally {
          await setup.close();
        }
      } catch (err) {
        log.error(`in-process runner for ${launch.name ?? 'a session'} crashed: ${errorMessage(err)}`);
        return 1;
      }
    })();
    const stop = (): Promise<number | string> => {
      stopping = true;
      prepared?.runner.stop();
      return exited;
    };
    return { kind: 'in-process', pid: process.pid, containerName: undefined, exited, stop, kill: stop };
  };
}
