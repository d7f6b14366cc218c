import { InvalidArgumentError, type Command } from 'commander';
import net from 'node:net';
import path from 'node:path';
import { loadHostConfig } from '../host/config.js';
import { isPincerError, PincerError } from '../shared/errors.js';
import { createHost, type Host } from '../host/host.js';
import { ChatSocketServer } from '../host/channels/chat-socket.js';
import { defaultSender } from './messages.js';
import { prepareHome } from '../host/home.js';
import { loadOrCreateToken } from '../host/http-token.js';
import { openCentralDb } from '../host/central-db/store.js';
import type { ChannelAdapter } from '../host/channels/types.js';
import { PLATFORM_SECRETS, platformsIn } from '../host/platforms/catalog.js';
import { createLogger, redactInLogs } from '../shared/log.js';
import { SETTINGS } from '../shared/settings.js';
import { startTracing } from '../shared/tracing.js';
import type { HttpSetup } from './host-http.js';
import { registerHostControl } from './host-control.js';
import { describeChoice, hostSelection } from './provider-views.js';

/**
 * `pincer host [--http PORT]`: run the host until SIGTERM/SIGINT. With `--http`, the HTTP channel listens on
 * PINCER_HTTP_HOST (default 127.0.0.1); its bearer token is PINCER_HTTP_TOKEN, else `<home>/http-token` (created once).
 */
export function registerHostCommand(program: Command): void {
  const host = program
    .command('host')
    .description('run the host: sessions, channels, sweep, delivery, runners')
    .option('--http <port>', 'serve the HTTP API on this port (0: any free port)', parsePort)
    .option('--http-host <addr>', 'address to listen on (default PINCER_HTTP_HOST or 127.0.0.1)')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .option(
      '--provider <name>',
      "the default agent group's provider while this host runs (its saved provider: AGENT_PROVIDER when the group is created, else auto)",
    )
    .option('--save', "with --provider: save it as the default agent group's provider")
    .action(async (options: HostCommandOptions) => {
      process.exitCode = await runHost(options);
    });
  registerHostControl(host);
}

interface HostCommandOptions {
  http?: number;
  httpHost?: string;
  home?: string;
  provider?: string;
  save?: boolean;
}

async function runHost(options: HostCommandOptions): Promise<number> {
  const log = createLogger('host');
  if (options.save && !options.provider) throw new PincerError('invalid-input', '--save saves the provider of --provider: add --provider P');
  // Errors (bad configuration, another host on this home) go to the command's one-line report, exit 2.
  const config = loadHostConfig(process.env, {
    home: options.home,
    provider: options.provider,
    saveProvider: options.save,
    http: options.http === undefined ? undefined : { port: options.http, host: options.httpHost },
  });
  const platforms = platformsIn(process.env);
  // no token or key of the host in any log line (an SDK's error may quote its HTTP client's configuration)
  redactInLogs([...SETTINGS.filter((s) => s.secret).map((s) => s.name), ...PLATFORM_SECRETS].map((name) => process.env[name]));
  const refusal = [
    ...platforms.incomplete,
    ...(config.http
      ? []
      : platforms.enabled
          .filter((p) => p.inbound === 'webhook' && p.spec.name !== 'telegram')
          .map((p) => `${p.spec.title} receives its events by webhook: start the host with --http PORT`)),
  ];
  if (refusal.length > 0) {
    for (const line of refusal) log.error(line);
    return 2;
  }
  // A taken port is one line before anything starts (not a host started and stopped again around it).
  if (config.http && config.http.port !== 0) await checkPortFree(config.http.host, config.http.port);
  const channels: ChannelAdapter[] = [];
  let mailboxDb: ReturnType<typeof openCentralDb> | null = null;
  let token: string | undefined;
  if (config.http) {
    try {
      prepareHome(config.home);
      token = config.http.token ?? loadOrCreateToken(path.join(config.home, 'http-token'), log);
      redactInLogs([token]);
    } catch (err) {
      if (!isPincerError(err)) throw err;
      log.error(err.message);
      return 2;
    }
  }
  if (config.http || platforms.enabled.length > 0) {
    prepareHome(config.home);
    mailboxDb = openCentralDb(path.join(config.home, 'pincer.db'));
  }
  // Loaded only when a platform is configured: the Chat SDK is not needed otherwise.
  const platformChannels =
    platforms.enabled.length > 0 && mailboxDb
      ? await import('../host/platforms/channel.js').then(({ PlatformChannel }) =>
          platforms.enabled.map(
            ({ spec }) => new PlatformChannel({ spec, env: process.env, db: mailboxDb!, userName: config.defaultGroup?.name ?? 'pincer', log }),
          ),
        )
      : [];
  channels.push(...platformChannels);
  // The HTTP channel, its routes and the metrics it serves (hono, prom-client) are loaded only when it is on.
  let metrics: HttpSetup['metrics'] | undefined;
  let httpChannel: HttpSetup['channel'] | undefined;
  if (config.http && mailboxDb && token !== undefined) {
    const { createHttpChannel } = await import('./host-http.js');
    const http = createHttpChannel({ http: config.http, home: config.home, token, db: mailboxDb, platformChannels, log });
    channels.push(http.channel);
    metrics = http.metrics;
    httpChannel = http.channel;
  }
  // Run until told to stop. Listening from before the start: a stop asked while the host starts (its channels may
  // already answer) is carried out once it has started, never the default kill.
  const stopAsked = new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  let host: Host;
  try {
    // a `pincer chat` on this home talks to its terminal conversation: its answers wait for the next one
    host = await createHost({
      config,
      channels,
      attachableChannels: ['terminal'],
      // the folder `pincer chat` gives its conversation, whichever of the two creates it
      sessionFolders: { 'terminal:local': path.join(config.home, 'sessions', 'chat') },
      log,
      metrics,
      tracing: await startTracing('pincer-host', process.env),
    });
  } catch (err) {
    mailboxDb?.close();
    throw err;
  }
  host.hideKeysFromOwnEnvironment();
  const chatSocket = await ChatSocketServer.listen({
    home: config.home,
    host,
    sender: defaultSender(),
    describeProvider: (groupId, policy) => describeChoice(host.generations.published(groupId)?.selection ?? hostSelection(policy, process.env)),
    log,
  });
  host.announce({ command: 'host', url: httpChannel?.url(), ...(chatSocket ? { chatSocket: chatSocket.path } : {}) });
  const keepAlive = setInterval(() => undefined, 1 << 30);
  // A group whose runners cannot start is said at once, in one line, not found later in a crash loop: from its
  // published generation (the environment and the secrets store as the runners get them), else the selection now.
  for (const group of host.store.listAgentGroups()) {
    const selection = host.generations.published(group.id)?.selection ?? hostSelection(group.provider, process.env);
    if (!selection.ok) log.warn(`agent group ${group.name} cannot start its agent: ${selection.message}`);
  }
  if (channels.length === 0)
    log.info('no channel enabled: scheduled tasks still run; add --http PORT to reach the agents (pincer chat talks to them in a terminal)');
  await stopAsked;
  clearInterval(keepAlive);
  log.info('stopping');
  await host.stop();
  await chatSocket?.close(); // after the host's stop: an attached chat still gets the answers delivered while it stops
  mailboxDb?.close();
  return 0;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('must be a port number (0–65535)');
  return port;
}

/** Refuses, in one line, a port another program listens on (the HTTP channel would fail the same way, later). */
async function checkPortFree(host: string, port: number): Promise<void> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') return resolve(); // the channel's own start says what else is wrong
      reject(
        new PincerError('config', `--http ${port}: ${host}:${port} is taken by another program; stop it, or choose another port (--http 0 picks a free one)`),
      );
    });
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
