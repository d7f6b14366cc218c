// first, before any schema is built (see the module)
import '../shared/zod-jitless.js';
import { definitionsDir } from '../db/layout.js';
import { retryWhileBusy } from '../db/busy.js';
import { openSessionDb } from '../db/connection.js';
import { closeQuestionsAsked } from '../db/questions.js';
import { initRunnerState } from '../db/state.js';
import { MCP_SERVER_NAME, pincerMcpServer } from '../mcp/config.js';
import { PINCER_TOOLS_INSTRUCTIONS } from '../mcp/instructions.js';
import { registerBuiltInProviders } from '../providers/index.js';
import { choiceFrom, createProvider, selectProviderFor } from '../providers/registry.js';
import { createRunnerPools } from './pools.js';
import { describeSelection } from '../runtime/selection.js';
import { startTracing } from '../shared/tracing.js';
import { createLogger, errorMessage, type Logger } from '../shared/log.js';
import type { AgentProvider } from '../providers/types.js';
import { describeResources, findExtensions, loadResources, skillsSection } from '../runtime/resources/index.js';
import { loadExtensions } from '../providers/extensions.js';
import { BatchFormatter } from './batch-formatter.js';
import { RUNNER_COMMANDS } from './commands.js';
import { discoverExtraDirectories, loadRunnerConfig, loadSystemPrompt } from './config.js';
import { forwardCredentialProxy, forwardTraceRelay } from './proxy-forward.js';
import { mcpRelayOf, resolveUserMcpServers } from './mcp-servers.js';
import { readStdinDocument } from './stdin-document.js';
import { Runner } from './runner.js';
import { awaitAssignment } from './spare.js';
import { Waker } from '../db/wake.js';
import { identityAt } from '../db/db-file.js';
import { ERROR_CODES, isPincerError } from '../shared/errors.js';
import { rawSetting } from '../shared/settings-load.js';

/** What a runner in the host's own process is given instead of reading it (the in-process launcher of tests). */
export interface RunnerOverrides {
  /** the agent provider to drive instead of the one selection picks (a scripted test double). */
  provider?: AgentProvider;
  /** the secrets the session's MCP servers refer to, instead of reading them from stdin. */
  secrets?: Record<string, string>;
}

/** A runner set up and ready to run: `run()` until `stop()`, then `close()` releases what it holds. */
export interface PreparedRunner {
  runner: Runner;
  /** its configuration's environment (the session's runner settings applied). */
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

/**
 * `pincer runner`: read the configuration, open the session DB, create the provider, run the poll loop until SIGTERM
 * or SIGINT. Returns the exit code: 0 after a clean stop, 2 for bad configuration (one clear line on stderr).
 */
export async function runRunner(env: NodeJS.ProcessEnv = process.env, overrides: RunnerOverrides = {}): Promise<number> {
  const log = createLogger('runner');
  if (rawSetting(env, 'PINCER_SPARE') === '1') {
    const assigned = await awaitAssignment(log);
    if (typeof assigned === 'number') return assigned;
    env = assigned.env;
    overrides = { ...overrides, secrets: assigned.secrets };
  }
  // Take SIGTERM before start-up, not after it: a stop that arrives once `ready` is logged (or while starting) is a
  // clean stop, never the default disposition's kill.
  const stopping: { requested: boolean; runner?: PreparedRunner['runner'] } = { requested: false };
  const stop = (): void => {
    stopping.requested = true;
    stopping.runner?.stop();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const prepared = await prepareRunner(env, log, overrides);
  if (typeof prepared === 'number') return prepared;
  const { runner } = prepared;
  stopping.runner = runner;
  if (stopping.requested) runner.stop();
  // A launcher that holds our stdin open (PINCER_STOP_ON_STDIN_EOF=1) makes it a lifeline: when the host dies, the
  // pipe closes and we stop cleanly, so a container never outlives its host (src/container/).
  const lifeline = rawSetting(prepared.env, 'PINCER_STOP_ON_STDIN_EOF') === '1';
  if (lifeline) process.stdin.once('end', stop).once('error', stop).resume();
  try {
    await runner.run();
  } catch (err) {
    log.error(`poll loop crashed: ${errorMessage(err)}`);
    return 1;
  } finally {
    if (lifeline || rawSetting(prepared.env, 'PINCER_STDIN_DOCUMENT') === '1') process.stdin.destroy(); // an open stdin would keep the process alive
    await prepared.close();
  }
  log.info('stopped');
  return 0;
}

/**
 * Everything a runner does before its poll loop: configuration, extensions, provider selection, the session DB, the
 * MCP servers, resources and the system prompt. Returns the exit code instead when the configuration is bad (2, one
 * line logged). The same for a runner process and for one in the host's process (`overrides`).
 */
export async function prepareRunner(env: NodeJS.ProcessEnv, log: Logger, overrides: RunnerOverrides = {}): Promise<PreparedRunner | number> {
  registerBuiltInProviders();
  let setup;
  try {
    const config = loadRunnerConfig(env);
    // from here on, the session's runner settings (config.json `runner`) count as this process's environment
    env = config.env;
    // Extensions first: a harness they register is a runtime the policy may choose (logged once the runner is up).
    const found = findExtensions(definitionsDir(config.paths));
    const extensions = await loadExtensions(found.found, (m) => log.info(m));
    const selection = selectProviderFor(
      {
        session: config.provider,
        group: config.groupProvider,
        model: config.model ? { id: config.model, provider: config.modelProvider } : undefined,
        models: config.models,
        modelProviders: config.modelProviders,
      },
      env,
    );
    // Bad configuration exits with one line (the policy's exact message); the candidates go to the debug log.
    if (!selection.ok) log.debug(describeSelection(selection));
    const choice = choiceFrom(selection);
    const db = openSessionDb(config.paths.db);
    const dbIdentity = identityAt(config.paths.db);
    await forwardCredentialProxy(env, (m) => log.warn(m)); // before the provider's first request
    const pincerServer = pincerMcpServer(config.paths.root, config.timeZone, env);
    // The secrets the servers refer to come on stdin from the launcher, never through the environment or a file.
    const secrets = overrides.secrets ?? (rawSetting(env, 'PINCER_STDIN_DOCUMENT') === '1' ? (await readStdinDocument(process.stdin)).secrets : {});
    const userServers = resolveUserMcpServers(config.mcpServers, {
      // a server's cwd is relative to the agent's own folder, the one it works in (the group's is read-only)
      agentDir: config.paths.agent,
      env,
      secret: (name) => (Object.hasOwn(secrets, name) ? secrets[name] : undefined),
      ...mcpRelayOf(env),
    });
    for (const { name, reason } of userServers.leftOut) log.warn(`MCP server ${name} left out: ${reason}`);
    const provider =
      overrides.provider ??
      (await createProvider(choice.name, {
        env,
        model: config.model,
        models: config.models,
        modelProviders: config.modelProviders,
        extensionTools: extensions.tools,
        // A provider in this process (the built-in runtime) runs the Pincer tools here too, with the child's environment.
        linkedMcpServers: { [MCP_SERVER_NAME]: { connect: async () => (await import('../mcp/linked.js')).connectLinkedPincerServer(pincerServer.env) } },
        log: (m) => log.info(m),
      }));
    const pools = createRunnerPools(env, log);
    setup = { config, choice, db, dbIdentity, provider, pools, selection, extensions, pincerServer, userServers: userServers.servers };
  } catch (err) {
    // The runner's edge of the error vocabulary: a known failure is one line and its exit code (2: fix and retry).
    if (isPincerError(err)) {
      log.error(err.message);
      return ERROR_CODES[err.code].exit;
    }
    throw err;
  }
  const { config, choice, db, dbIdentity, provider, pools, selection, extensions, pincerServer, userServers } = setup;
  for (const loaded of extensions.loaded) log.info(`extension ${loaded}`);
  for (const diagnostic of extensions.diagnostics) log.warn(`resources: ${diagnostic.message}`);
  // Every provider decision is logged with its candidates and reason.
  log.info(describeSelection(selection));
  // Another process holding the DB past its busy timeout delays the start; it never ends it.
  const warn = (line: string): void => log.warn(line);
  await retryWhileBusy(() => initRunnerState(db, process.pid, choice.name), { what: 'runner state', warn });
  // Questions asked by an earlier runner have nobody waiting: their answers reach the agent as messages.
  const lateAnswers = await retryWhileBusy(() => closeQuestionsAsked(db), { what: 'earlier questions', warn });
  if (lateAnswers > 0) log.info(`${lateAnswers} answer(s) to questions of an earlier runner turned into messages`);
  // The agent group's resource package: prompts become commands, skills reach the provider.
  const resources = loadResources(definitionsDir(config.paths), [...RUNNER_COMMANDS, ...provider.nativeSlashCommands]);
  log.info(describeResources(resources));
  for (const diagnostic of resources.diagnostics) log.warn(`resources: ${diagnostic.message}`);
  const skills = provider.nativeSkills ? undefined : skillsSection(resources.skills);
  const systemPrompt = [loadSystemPrompt(config.paths), PINCER_TOOLS_INSTRUCTIONS, skills].filter(Boolean).join('\n\n');
  const waker = new Waker(config.paths.root, config.wake);
  if (waker.pollingBecause) log.warn(`polling every ${config.pollIdleMs} ms: ${waker.pollingBecause}`);
  await forwardTraceRelay(env, (m) => log.warn(m)); // before the first span is exported
  const tracing = await startTracing('pincer-runner', env);
  const runner = new Runner({
    db,
    config,
    providerName: choice.name,
    provider,
    waker,
    log,
    systemPrompt,
    additionalDirectories: discoverExtraDirectories(config.paths),
    // Pincer's own first; a user's server never takes its name (config.json refuses it).
    mcpServers: { [MCP_SERVER_NAME]: pincerServer, ...userServers },
    providerEnv: { ...env },
    formatter: new BatchFormatter(pools.format, pools.formatWorkerBytes, log),
    attachments: pools.attachments,
    prompts: resources.prompts,
    skills: resources.skills,
    tracing,
    ...(dbIdentity ? { dbFile: { path: config.paths.db, identity: dbIdentity } } : {}),
  });
  log.info(
    `ready: provider ${choice.name} (${overrides.provider ? "replaced by the launcher's own" : choice.reason}), workspace ${config.paths.root}, wake ${config.wake}, pid ${process.pid}` +
      (config.generation === undefined ? '' : `, config generation ${config.generation}`) +
      (config.modelGeneration === undefined ? '' : `, model runtime generation ${config.modelGeneration}`),
  );
  const close = async (): Promise<void> => {
    waker.close();
    await provider.close?.().catch((err: unknown) => log.warn(`provider close failed: ${errorMessage(err)}`));
    await pools.close();
    await tracing.shutdown().catch((err: unknown) => log.warn(`trace export failed: ${errorMessage(err)}`));
    db.close();
  };
  return { runner, env, close };
}
