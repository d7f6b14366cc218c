import type { Command } from 'commander';
import path from 'node:path';
import { TerminalChannel } from '../host/channels/terminal.js';
import { TuiTerminalChannel } from '../host/channels/terminal-tui.js';
import { loadHostConfig, resolveHome } from '../host/config.js';
import { readLock } from '../host/home-lock.js';
import { createHost, type Host } from '../host/host.js';
import type { HostConfig } from '../host/types.js';
import { prepareHome } from '../host/home.js';
import { probeModelServer } from '../runtime/model-server-probe.js';
import { loadResources } from '../runtime/resources/load.js';
import { createLogger, fileSink, isDebugLogging, setLogSink } from '../shared/log.js';
import { PincerError } from '../shared/errors.js';
import { attachToHost } from './chat-attach.js';
import { defaultSender } from './messages.js';
import { chatEnv, chatSelection } from './provider-views.js';
import { readSetting, settingOrDefault } from '../shared/settings-load.js';
import { savedChatGroup } from '../host/chat-group.js';

/**
 * `pincer chat`: talk to an agent from the terminal. Runs the host in-process with the terminal channel: the default
 * agent group (created on first use) gets the chosen provider, this terminal is one conversation of it, and the host
 * starts, stops and restarts the runner child process as it would for any channel.
 */
export function registerChatCommand(program: Command): void {
  program
    .command('chat')
    .description('talk to an agent in this terminal')
    .option('--provider <name>', "pincer | claude | codex | opencode | mock | auto, for this chat (default: AGENT_PROVIDER, else the agent group's provider)")
    .option('--save', "with --provider: save it as the agent group's provider")
    .option('--home <dir>', 'data directory (default: PINCER_HOME, else ~/.pincer)')
    .option('--dir <dir>', 'session folder of this chat (default: <home>/sessions/chat)')
    .action(async (options: ChatOptions) => {
      process.exitCode = await chat(options);
    });
}

interface ChatOptions {
  provider?: string;
  save?: boolean;
  home?: string;
  dir?: string;
}

async function chat(options: ChatOptions): Promise<number> {
  // A host already runs on this home (`pincer host`): talk to it through its chat socket rather than start a second
  // one. Its agent group's provider answers; a chat in a folder of its own (--dir) needs a host of its own.
  const home = resolveHome(process.env, options.home);
  if (options.save && !options.provider) throw new PincerError('invalid-input', '--save saves the provider of --provider: add --provider P');
  if (options.dir === undefined) {
    const running = readLock(home);
    if (running?.chatSocket) return attachToHost({ ...running, chatSocket: running.chatSocket }, home, options);
  }
  // This chat's provider: --provider, else AGENT_PROVIDER (for this run; saved with --save), else its group's.
  const runProvider = options.provider ?? (readSetting(process.env, 'AGENT_PROVIDER') || undefined);
  const group = savedChatGroup(home, settingOrDefault(process.env, 'PINCER_DEFAULT_GROUP'));
  const provider = runProvider ?? group?.provider ?? 'auto';
  // Decide the provider first, the way the runner will: one line and exit 2 if it cannot start (no key, no model).
  const selection = chatSelection(provider, process.env);
  if (!selection.ok) throw new PincerError('invalid-input', selection.message);
  // A built-in-runtime chat on a server of the user's: a wrong address is said now, not after the first message.
  if (selection.provider === 'pincer') {
    const probe = await probeModelServer(process.env);
    if (probe?.problem) throw new PincerError('invalid-input', probe.problem);
  }
  // `auto` falls back to mock here (not claude), so `npx pincer chat` works without a key; runners inherit it.
  Object.assign(process.env, chatEnv(process.env));
  const config = loadHostConfig(process.env, { provider: runProvider, saveProvider: options.save, providerGroup: group?.name, home: options.home });
  prepareHome(config.home); // an unusable home is one line with advice, before anything else
  // Every log line (host, launcher) goes to a file, so none interleaves with the conversation (PINCER_LOG_LEVEL=debug:
  // stderr). A line that cannot be written is dropped, never the chat.
  const logFile = path.join(config.home, 'host.log');
  if (!isDebugLogging()) setLogSink(fileSink(logFile));
  const log = createLogger('host');
  const interactive = process.stdin.isTTY === true;
  const sessionDir = path.resolve(options.dir ?? path.join(config.home, 'sessions', 'chat'));

  let quitAsked = false;
  let leave!: () => void;
  const left = new Promise<void>((resolve) => (leave = resolve));
  let quitNow!: () => void;
  const forced = new Promise<void>((resolve) => (quitNow = resolve));
  // Filled once the host has started (Ctrl-C may come before).
  const started: { host?: Host; sessionId?: string } = {};
  // First Ctrl-C / Ctrl-D / /quit: leave once what was typed is answered (saying so when that means waiting).
  // A second Ctrl-C: leave now; what is still due stays in the session and is answered next time.
  const quit = (): void => {
    if (quitAsked) return quitNow();
    quitAsked = true;
    terminal.leave();
    const open = started.host && started.sessionId ? started.host.openMessages(started.sessionId) : Promise.resolve(0);
    void open.then((n) => {
      if (n > 0 && interactive) terminal.say(`waiting for ${n} answer${n === 1 ? '' : 's'} — Ctrl-C again to quit`);
    });
    leave();
  };
  // the model the runner takes: PINCER_MODEL, else the group's
  const model = readSetting(process.env, 'PINCER_MODEL') || group?.model || config.defaultGroup?.model || undefined;
  const terminalOptions = {
    input: process.stdin,
    output: process.stdout,
    conversation: 'local',
    sender: defaultSender(),
    interactive,
    banner: banner(selection, config.home, sessionDir, runOnlyNote(runProvider, options.save, group, config), model),
    onQuit: quit,
  };
  // A terminal both ways gets the terminal UI; a pipe, TERM=dumb or PINCER_CHAT_UI=plain the line REPL.
  const drawable = interactive && process.stdout.isTTY === true && process.env.TERM !== 'dumb' && settingOrDefault(process.env, 'PINCER_CHAT_UI') === 'tui';
  const terminal = drawable
    ? new TuiTerminalChannel({ ...terminalOptions, describe: `provider ${selection.provider}${model ? ` · model ${model}` : ''}` })
    : new TerminalChannel(terminalOptions);
  process.on('SIGINT', quit);
  process.once('SIGTERM', () => quitNow());

  const host = await createHost({ config, channels: [terminal], log, sessionFolders: { 'terminal:local': sessionDir } });
  host.hideKeysFromOwnEnvironment();
  host.announce({ command: 'chat' });
  started.host = host;
  // (the host ran the chat's group on this provider from its start, before any runner: config.runProvider)
  const { pipeline, group: chatGroup } = await host.sessionOf(terminal.conversation);
  started.sessionId = pipeline.id;
  // The group's theme colours the chat, where the terminal shows colour.
  if (interactive && process.stdout.isTTY === true && process.env.TERM !== 'dumb' && process.env.NO_COLOR === undefined) {
    const resources = loadResources(host.sessions.groupDir(chatGroup));
    terminal.useTheme(resources.theme.colours);
  }

  // Once the user leaves, wait until everything typed has been answered and delivered (or given up on).
  const settled = left.then(async () => {
    await terminal.drained(); // a line read before leaving (a file being attached) is still sent
    while (!(await host.isSettled(pipeline.id))) await new Promise((r) => setTimeout(r, 50));
  });
  await Promise.race([settled, forced]);
  process.off('SIGINT', quit);
  await host.stop();
  return 0;
}

/** `--provider P` without `--save`, on a group whose saved provider is another: the banner says it is for this chat. */
function runOnlyNote(
  runProvider: string | undefined,
  save: boolean | undefined,
  group: { name: string; provider: string } | undefined,
  config: HostConfig,
): string | undefined {
  const saved = group ?? (config.defaultGroup ? { name: config.defaultGroup.name, provider: config.defaultGroup.provider } : undefined);
  if (!runProvider || save || !saved || saved.provider === runProvider) return undefined;
  return `  ${runProvider} for this chat only: agent group ${saved.name} keeps provider ${saved.provider} (--save makes ${runProvider} its provider)`;
}

/** What the chat runs on and why, where its data is, and how to leave — before the first prompt. */
function banner(
  selection: { provider: string; reason: string },
  home: string,
  sessionDir: string,
  note: string | undefined,
  model: string | undefined,
): string[] {
  // the built-in runtime is only as good as its model: the banner names it
  const withModel = selection.provider === 'pincer' && model ? ` · model ${model}` : '';
  const lines = [`Pincer chat — provider ${selection.provider}: ${selection.reason}${withModel}`];
  if (note) lines.push(note);
  if (selection.provider === 'mock') lines.push('  the mock agent echoes what it is sent; set ANTHROPIC_API_KEY (or see pincer doctor) to talk to a real one');
  lines.push(`home ${home}${sessionDir === path.join(home, 'sessions', 'chat') ? '' : ` · session ${sessionDir}`}`);
  lines.push('/help for commands · /quit or Ctrl-D to leave');
  return lines;
}
