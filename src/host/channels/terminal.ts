import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { mb } from '../../runner/media/acquire.js';
import { errorMessage } from '../../shared/log.js';
import { DISK_FULL_NOTICE, isDiskFull } from '../errors.js';
import { saveAttachments } from '../incoming-files.js';
import type { ConversationRef } from '../types.js';
import { durationMs, type ToolActivity } from '../../db/tool-activity.js';
import type { ChannelAdapter, DeliveryReceipt, HostApi, OutboundDelivery } from './types.js';

/**
 * The terminal channel (`pincer chat`): each line typed is a chat message of one conversation; what the agent sends
 * is printed as `agent> …`. While a question is open, the next line answers it (its number or its label). In an
 * interactive terminal it behaves like a REPL: a banner before the first prompt, `working… 4 s` in the prompt while
 * the agent works, local `/help` and `/quit`, and Ctrl-C / Ctrl-D handed to `onQuit` (the chat decides whether to
 * wait for answers still due). `/attach <file> [text]` sends one of the user's files with a message.
 */
export interface TerminalChannelOptions {
  input: Readable;
  output: Writable;
  /** the conversation id (platform id) of this terminal. */
  conversation: string;
  sender: string;
  /** show a `you> ` prompt (interactive terminal). */
  interactive: boolean;
  /** lines printed before the first prompt (interactive only). */
  banner?: string[];
  /** the user asked to leave: Ctrl-D, the end of piped input, `/quit`, or Ctrl-C while input is read. */
  onQuit?: () => void;
}

const PROMPT = 'you> ';
/** Clear the current terminal line (the prompt and what was typed) before printing over it. */
const CLEAR_LINE = '\r\x1b[2K';

export const LOCAL_HELP = [
  'commands:',
  '  /help        this list',
  '  /quit        leave (also Ctrl-D; Ctrl-C twice leaves at once)',
  '  /clear       the agent forgets this conversation and starts a new one',
  '  /attach <file> [text]   send a file (a picture, a PDF, …) with an optional message; quote a path with spaces',
  '  /<name> …    a prompt of the agent group (prompts/<name>.md), or the provider’s own command (e.g. /compact)',
  'anything else is sent to the agent; when it asks a question, answer with the number or the label of an option.',
].join('\n');

export class TerminalChannel implements ChannelAdapter {
  readonly type = 'terminal';
  /** the user's own keyboard, in a `pincer chat` process that comes and goes */
  readonly capabilities = { localInput: true, attachable: true };
  private rl: readline.Interface | null = null;
  protected openQuestion: { questionId: string; options: { label: string; value: string }[] } | null = null;
  private delivered = 0;
  private working: { since: number; timer: NodeJS.Timeout } | null = null;
  /** the user asked to leave: input is still read (so a second Ctrl-C is seen at once) but no longer sent. */
  protected leaving = false;
  /** lines are handled one after another (a file is saved before its message is sent, and before the next line). */
  protected lines: Promise<void> = Promise.resolve();

  constructor(protected readonly options: TerminalChannelOptions) {}

  get conversation(): ConversationRef {
    return { channelType: 'terminal', platformId: this.options.conversation, threadId: null };
  }

  async start(host: HostApi): Promise<void> {
    const { input, output, interactive } = this.options;
    if (interactive) for (const line of this.options.banner ?? []) output.write(`${line}\n`);
    const rl = readline.createInterface({ input, output, terminal: interactive });
    this.rl = rl;
    rl.setPrompt(PROMPT);
    rl.on('line', (line) => {
      const text = line.trim();
      if (text.length === 0) return this.prompt();
      if (this.leaving) {
        this.write('pincer: leaving, not sent (Ctrl-C to quit now)');
        return this.prompt();
      }
      this.lines = this.lines
        .then(() => this.onLine(host, text))
        .catch((err: unknown) => this.write(`pincer: ${isDiskFull(err) ? DISK_FULL_NOTICE : errorMessage(err)}`))
        .finally(() => this.prompt());
    });
    // Ctrl-C while reading (raw mode: no signal reaches the process) and Ctrl-D / end of input both mean "leave".
    rl.on('SIGINT', () => this.options.onQuit?.());
    rl.on('close', () => {
      this.rl = null;
      this.options.onQuit?.();
    });
    this.prompt();
  }

  async deliver(message: OutboundDelivery): Promise<DeliveryReceipt> {
    const p = message.payload;
    switch (p.type) {
      case 'chat':
        this.write(`agent> ${p.text}${p.files.length ? ` [files: ${p.files.map((f) => f.path).join(', ')}]` : ''}`);
        break;
      case 'edit':
        this.write(`agent (edits #${p.messageId})> ${p.text}`);
        break;
      case 'reaction':
        this.write(`agent reacted ${p.emoji} to #${p.messageId}`);
        break;
      case 'card':
        this.write(`agent> ${p.fallbackText ?? JSON.stringify(p.card)}`);
        break;
      case 'question':
        this.openQuestion = { questionId: p.questionId, options: p.options };
        this.write(
          `agent asks: ${p.title}\n  ${p.question}\n${p.options.map((o, i) => `  ${i + 1}. ${o.label}`).join('\n')}\n  (answer with a number or a label)`,
        );
        break;
      case 'notice':
        this.write(`pincer: ${p.text}`);
        break;
    }
    this.delivered += 1;
    this.prompt();
    return { platformMessageId: `terminal-${this.delivered}` };
  }

  /** While the agent works: `working… 4 s` in front of the prompt, counting, without touching what is being typed. */
  async setTyping(_conversation: ConversationRef, active: boolean): Promise<void> {
    if (!this.options.interactive) return;
    if (active && !this.working) {
      const timer = setInterval(() => this.prompt(), 1000);
      timer.unref();
      this.working = { since: Date.now(), timer };
    } else if (!active && this.working) {
      clearInterval(this.working.timer);
      this.working = null;
      this.runningTool = null;
    }
    this.prompt();
  }

  /**
   * A tool call: while it runs its name and arguments follow `working… 4 s` in the prompt; when it ends, one line says
   * how it went (`· bash ls -la — done in 0.4 s`). Interactive only: piped output stays the conversation alone.
   */
  async showToolActivity(_conversation: ConversationRef, activity: ToolActivity): Promise<void> {
    if (!this.options.interactive) return;
    if (activity.status === 'running') {
      this.runningTool = activity;
    } else {
      if (this.runningTool?.id === activity.id) this.runningTool = null;
      this.write(toolLine(activity));
    }
    this.prompt();
  }

  private runningTool: ToolActivity | null = null;

  /** A line from Pincer itself (not the agent), e.g. `waiting for 1 answer — Ctrl-C again to quit`. */
  say(text: string): void {
    this.write(`pincer: ${text}`);
    this.prompt();
  }

  /**
   * The chat is leaving (waiting for answers still due): lines typed now are not sent, and the prompt shows only the
   * agent's status. Input stays open, so a second Ctrl-C reaches `onQuit` however fast it comes.
   */
  leave(): void {
    this.leaving = true;
    this.prompt();
  }

  async stop(): Promise<void> {
    if (this.working) clearInterval(this.working.timer);
    this.working = null;
    if (this.options.interactive && (this.leaving || !this.rl)) this.options.output.write(CLEAR_LINE);
    const rl = this.rl;
    this.rl = null;
    rl?.removeAllListeners('close');
    rl?.close();
  }

  /** Resolves once every line read so far has been handled. */
  drained(): Promise<void> {
    return this.lines;
  }

  protected async onLine(host: HostApi, text: string): Promise<void> {
    const question = this.openQuestion;
    if (question) {
      const byNumber = /^\d+$/.test(text) ? question.options[Number(text) - 1] : undefined;
      const chosen = byNumber ?? question.options.find((o) => o.label.toLowerCase() === text.toLowerCase() || o.value === text);
      if (chosen) {
        this.openQuestion = null;
        await host.answerQuestion(this.conversation, { questionId: question.questionId, selectedOption: chosen.value, userId: this.options.sender });
        this.write(`pincer: answered "${chosen.label}"`);
        return;
      }
    }
    if (text === '/help') return this.write(LOCAL_HELP);
    if (text === '/quit' || text === '/exit') return this.options.onQuit?.();
    if (text === '/attach' || text.startsWith('/attach ')) return this.attach(host, text.slice('/attach'.length).trim());
    await host.acceptInbound({ conversation: this.conversation, kind: 'chat', content: { text, sender: this.options.sender, senderId: this.options.sender } });
  }

  /**
   * `/attach <file> [text]`: the file is the user's own (read from this machine, `~` and relative paths as in a shell)
   * and is saved into the session's downloads before the message is written; one that cannot be attached is named
   * and nothing is sent, so the user can try again.
   */
  private async attach(host: HostApi, args: string): Promise<void> {
    const parsed = /^(?:"([^"]+)"|(\S+))\s*([\s\S]*)$/.exec(args);
    if (!parsed) return this.write('pincer: /attach needs a file: /attach <file> [text], e.g. /attach ~/photo.png what is in it?');
    const given = (parsed[1] ?? parsed[2])!;
    const file = path.resolve(given.replace(/^~(?=$|\/)/, os.homedir()));
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) return this.write(`pincer: cannot attach ${given}: ${stat ? 'not a file' : 'no such file'}; nothing was sent`);
    const id = randomUUID();
    const name = path.basename(file);
    const [saved] = await saveAttachments(
      [{ type: 'file', name, size: stat.size, fetchData: () => fs.promises.readFile(file) }],
      host.sessionFolderOf(this.conversation),
      id,
    );
    if (saved?.error) return this.write(`pincer: cannot attach ${given}: ${String(saved.error)}; nothing was sent`);
    const { sender } = this.options;
    await host.acceptInbound({
      id,
      conversation: this.conversation,
      kind: 'chat',
      content: { text: parsed[3] ?? '', sender, senderId: sender, attachments: [saved] },
    });
    this.write(`pincer: sent ${name} (${mb(stat.size)})`);
  }

  /**
   * Colour the chat's lines from now on (the agent group's theme). Only for a terminal that shows colour: the caller
   * decides (a pipe, `TERM=dumb` and `NO_COLOR` keep plain text).
   */
  useTheme(colours: { agent: string; user: string; tool: string; notice: string; error: string; accent: string }): void {
    this.palette = colours;
  }

  protected palette: { agent: string; user: string; tool: string; notice: string; error: string; accent: string } | undefined;

  protected write(text: string): void {
    this.options.output.write(`${this.options.interactive ? CLEAR_LINE : ''}${this.paint(text)}\n`);
  }

  private paint(text: string): string {
    const palette = this.palette;
    if (!palette) return text;
    const colour = text.startsWith('agent')
      ? palette.agent
      : text.startsWith('· ')
        ? / — failed( after [\d.]+ s)?$/.test(text)
          ? palette.error
          : palette.notice
        : /^pincer: (cannot|.*\bfailed\b)/.test(text)
          ? palette.error
          : text.startsWith('pincer:')
            ? palette.notice
            : undefined;
    return colour ? `${ansiColour(colour)}${text}\x1b[39m` : text;
  }

  private prompt(): void {
    if (!this.options.interactive) return;
    const tool =
      this.working && this.runningTool ? ` · ${this.runningTool.name}${this.runningTool.preview ? ` ${this.runningTool.preview.slice(0, 40)}` : ''}` : '';
    const status = this.working ? `working… ${Math.floor((Date.now() - this.working.since) / 1000)} s${tool}` : '';
    const rl = this.rl;
    if (rl) {
      rl.setPrompt(this.leaving ? status : status ? `${status}  ${PROMPT}` : PROMPT);
      rl.prompt(true);
    } else if (status) {
      // Input closed (leaving, answers still due): the status alone, rewritten in place.
      this.options.output.write(`${CLEAR_LINE}${status}`);
    }
  }
}

/** A finished tool call in one line: `· bash ls -la — done in 0.4 s` (or `failed after …`). */
export function toolLine(activity: ToolActivity): string {
  const ms = durationMs(activity);
  const took = ms === null ? '' : ` ${activity.status === 'ok' ? 'in' : 'after'} ${(ms / 1000).toFixed(1)} s`;
  return `· ${activity.name}${activity.preview ? ` ${activity.preview}` : ''} — ${activity.status === 'ok' ? 'done' : 'failed'}${took}`;
}

/** `#rrggbb` as a 24-bit foreground colour. */
function ansiColour(hex: string): string {
  const n = Number.parseInt(hex.slice(1), 16);
  return `\x1b[38;2;${(n >> 16) & 255};${(n >> 8) & 255};${n & 255}m`;
}
