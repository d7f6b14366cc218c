import { InvalidArgumentError, type Command } from 'commander';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { HttpMailbox } from '../host/channels/http/mailbox.js';
import { HttpChannel } from '../host/channels/http/channel.js';
import { loadHostConfig } from '../host/config.js';
import { Host } from '../host/host.js';
import { openCentralDb } from '../host/central-db/store.js';
import { createLogger } from '../shared/log.js';
import { hostSelection } from './provider-views.js';

/**
 * `pincer host [--http PORT]`: run the host until SIGTERM/SIGINT. With `--http`, the HTTP channel listens on
 * PINCER_HTTP_HOST (default 127.0.0.1); its bearer token is PINCER_HTTP_TOKEN, else `<home>/http-token` (created once).
 */
export function registerHostCommand(program: Command): void {
  program
    .command('host')
    .description('run the host: sessions, channels, sweep, delivery, runners')
    .option('--http <port>', 'serve the HTTP API on this port (0: any free port)', parsePort)
    .option('--http-host <addr>', 'address to listen on (default PINCER_HTTP_HOST or 127.0.0.1)')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .option('--provider <name>', 'provider of the default agent group (default: AGENT_PROVIDER when the group is created, else auto)')
    .action(async (options: { http?: number; httpHost?: string; home?: string; provider?: string }) => {
      process.exitCode = await runHost(options);
    });
}

async function runHost(options: { http?: number; httpHost?: string; home?: string; provider?: string }): Promise<number> {
  const log = createLogger('host');
  // Errors (bad configuration, another host on this home) go to the command's one-line report, exit 2.
  const config = loadHostConfig(process.env, {
    home: options.home,
    provider: options.provider,
    http: options.http === undefined ? undefined : { port: options.http, host: options.httpHost },
  });
  fs.mkdirSync(config.home, { recursive: true });
  const channels = [];
  let mailboxDb: ReturnType<typeof openCentralDb> | null = null;
  if (config.http) {
    const token = config.http.token ?? loadOrCreateToken(path.join(config.home, 'http-token'), log);
    mailboxDb = openCentralDb(path.join(config.home, 'pincer.db'));
    channels.push(new HttpChannel({ port: config.http.port, host: config.http.host, token, mailbox: new HttpMailbox(mailboxDb), log }));
  }
  let host: Host;
  try {
    host = await Host.start({ config, channels, log });
  } catch (err) {
    mailboxDb?.close();
    throw err;
  }
  // Run until told to stop (listening before the lines below say the host is up): the timer keeps Node alive when
  // nothing else does (no channel listening).
  const stopAsked = new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const keepAlive = setInterval(() => undefined, 1 << 30);
  // An explicit --provider is the default group's provider from now on, as `pincer chat --provider` does for its group.
  const defaultGroup = config.defaultGroup && host.store.findAgentGroup(config.defaultGroup.name);
  if (options.provider && defaultGroup && defaultGroup.provider !== options.provider) {
    host.store.updateAgentGroup(defaultGroup.id, { provider: options.provider });
    log.info(`agent group ${defaultGroup.name}: provider ${options.provider} (--provider)`);
  }
  // A group whose runners cannot start is said at once, in one line, not found later in a crash loop.
  for (const group of host.store.listAgentGroups()) {
    const selection = hostSelection(group.provider, process.env);
    if (!selection.ok) log.warn(`agent group ${group.name} cannot start its agent: ${selection.message}`);
  }
  if (channels.length === 0) log.info('no channel enabled: scheduled tasks still run; add --http PORT to reach the agents (pincer chat talks to them in a terminal)');
  await stopAsked;
  clearInterval(keepAlive);
  log.info('stopping');
  await host.stop();
  mailboxDb?.close();
  return 0;
}

function loadOrCreateToken(file: string, log: ReturnType<typeof createLogger>): string {
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const token = randomBytes(24).toString('hex');
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  log.info(`http token created in ${file}`);
  return token;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('must be a port number (0–65535)');
  return port;
}
