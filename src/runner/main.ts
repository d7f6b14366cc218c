import { openSessionDb, isSessionDbError } from '../db/connection.js';
import { initRunnerState } from '../db/state.js';
import { MCP_SERVER_NAME, pincerMcpServer } from '../mcp/config.js';
import { PINCER_TOOLS_INSTRUCTIONS } from '../mcp/instructions.js';
import { registerBuiltInProviders } from '../providers/index.js';
import { createProvider, isProviderError, resolveProvider } from '../providers/registry.js';
import { createLogger, errorMessage } from '../shared/log.js';
import { discoverExtraDirectories, isRunnerConfigError, loadRunnerConfig, loadSystemPrompt } from './config.js';
import { Runner } from './runner.js';
import { Waker } from './wake.js';

/**
 * `pincer runner`: read the configuration, open the session DB, create the provider, run the poll loop until SIGTERM
 * or SIGINT. Returns the exit code: 0 after a clean stop, 2 for bad configuration (one clear line on stderr).
 */
export async function runRunner(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const log = createLogger('runner');
  registerBuiltInProviders();
  let setup;
  try {
    const config = loadRunnerConfig(env);
    const choice = resolveProvider(config.provider, env);
    const db = openSessionDb(config.paths.db);
    const provider = createProvider(choice.name, { env, model: config.model, log: (m) => log.info(m) });
    setup = { config, choice, db, provider };
  } catch (err) {
    if (isRunnerConfigError(err) || isProviderError(err) || isSessionDbError(err)) {
      log.error(err.message);
      return 2;
    }
    throw err;
  }
  const { config, choice, db, provider } = setup;
  initRunnerState(db, process.pid, choice.name);
  const waker = new Waker(config.paths.root, config.wake);
  const runner = new Runner({
    db,
    config,
    providerName: choice.name,
    provider,
    waker,
    log,
    systemPrompt: [loadSystemPrompt(config.paths), PINCER_TOOLS_INSTRUCTIONS].filter(Boolean).join('\n\n'),
    additionalDirectories: discoverExtraDirectories(config.paths),
    mcpServers: { [MCP_SERVER_NAME]: pincerMcpServer(config.paths.root, config.timeZone, env) },
    providerEnv: { ...env },
  });
  const stop = (): void => runner.stop();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // A launcher that holds our stdin open (PINCER_STOP_ON_STDIN_EOF=1) makes it a lifeline: when the host dies, the
  // pipe closes and we stop cleanly, so a container never outlives its host (src/container/).
  const lifeline = env.PINCER_STOP_ON_STDIN_EOF === '1';
  if (lifeline) process.stdin.once('end', stop).once('error', stop).resume();
  log.info(
    `ready: provider ${choice.name} (${choice.reason}), workspace ${config.paths.root}, wake ${config.wake}, pid ${process.pid}`,
  );
  try {
    await runner.run();
  } catch (err) {
    log.error(`poll loop crashed: ${errorMessage(err)}`);
    return 1;
  } finally {
    waker.close();
    if (lifeline) process.stdin.destroy();
    await provider.close?.().catch((err: unknown) => log.warn(`provider close failed: ${errorMessage(err)}`));
    db.close();
  }
  log.info('stopped');
  return 0;
}
