import type { Command } from 'commander';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TerminalChannel } from '../host/channels/terminal.js';
import { loadHostConfig } from '../host/config.js';
import { isHostError } from '../host/errors.js';
import { Host } from '../host/host.js';
import { registerBuiltInProviders } from '../providers/index.js';
import { isProviderError, resolveProvider } from '../providers/registry.js';
import { createLogger } from '../shared/log.js';

/**
 * `pincer chat`: talk to an agent from the terminal. Runs the host in-process with the terminal channel: the default
 * agent group (created on first use) gets the chosen provider, this terminal is one conversation of it, and the host
 * starts, stops and restarts the runner child process as it would for any channel.
 */
export function registerChatCommand(program: Command): void {
  program
    .command('chat')
    .description('talk to an agent in this terminal')
    .option('--provider <name>', 'pincer | claude | codex | opencode | mock | auto', process.env.AGENT_PROVIDER ?? 'auto')
    .option('--dir <dir>', 'session folder of this chat (default: $PINCER_HOME/sessions/chat, PINCER_HOME defaulting to ./.pincer)')
    .action(async (options: { provider: string; dir?: string }) => {
      process.exitCode = await chat(options);
    });
}

async function chat(options: { provider: string; dir?: string }): Promise<number> {
  // `auto` falls back to mock here (not claude), so `npx pincer chat` works without a key; runners inherit it.
  process.env.PINCER_AUTO_FALLBACK ||= 'mock';
  registerBuiltInProviders();
  try {
    resolveProvider(options.provider, process.env);
  } catch (err) {
    if (!isProviderError(err)) throw err;
    process.stderr.write(`pincer: ${err.message}\n`);
    return 2;
  }
  let config;
  try {
    config = loadHostConfig(process.env, { provider: options.provider });
  } catch (err) {
    if (!isHostError(err)) throw err;
    process.stderr.write(`pincer: ${err.message}\n`);
    return 2;
  }
  fs.mkdirSync(config.home, { recursive: true });
  // The host's log goes to a file, so it does not interleave with the conversation (PINCER_LOG_LEVEL=debug: stderr).
  const logFile = path.join(config.home, 'host.log');
  const log = process.env.PINCER_LOG_LEVEL === 'debug' ? createLogger('host') : createLogger('host', (line) => fs.appendFileSync(logFile, line));
  const interactive = process.stdin.isTTY === true;
  const sender = os.userInfo().username;
  let inputEnded!: () => void;
  const ended = new Promise<void>((resolve) => (inputEnded = resolve));
  const terminal = new TerminalChannel({ input: process.stdin, output: process.stdout, conversation: 'local', sender, interactive, onInputEnd: () => inputEnded() });
  const sessionDir = path.resolve(options.dir ?? path.join(config.home, 'sessions', 'chat'));
  let host: Host;
  try {
    host = await Host.start({ config, channels: [terminal], log, sessionFolders: { 'terminal:local': sessionDir } });
  } catch (err) {
    if (!isHostError(err)) throw err;
    process.stderr.write(`pincer: ${err.message}\n`);
    return 2;
  }
  host.hideKeysFromOwnEnvironment();

  // The chat's agent group uses the provider asked for; a change is published as a new configuration generation.
  const { slot, group } = host.sessionOf(terminal.conversation);
  if (group.provider !== options.provider) host.store.updateAgentGroup(group.id, { provider: options.provider });
  if (interactive) process.stdout.write(`Pincer chat (provider ${options.provider}); session ${slot.session.folder}. Ctrl-D to quit.\n`);

  const stop = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  // With piped input (or Ctrl-D), quit once everything typed has been answered and delivered (or given up on).
  const settled = ended.then(async () => {
    while (!host.isSettled(slot.session.id)) await new Promise((r) => setTimeout(r, 50));
  });
  await Promise.race([settled, stop]);
  await host.stop();
  return 0;
}
