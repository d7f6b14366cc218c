import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { errorMessage } from '../../shared/log.js';
import type { ConversationRef } from '../types.js';
import type { ChannelAdapter, DeliveryReceipt, HostApi, OutboundDelivery } from './types.js';

/**
 * The terminal channel (`pincer chat`): each line typed is a chat message of one conversation; what the agent sends
 * is printed as `agent> …`. While a question is open, the next line answers it (its number or its label). In an
 * interactive terminal it behaves like a REPL: a banner before the first prompt, `working… 4 s` in the prompt while
 * the agent works, local `/help` and `/quit`, and Ctrl-C / Ctrl-D handed to `onQuit` (the chat decides whether to
 * wait for answers still due).
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
  '  /<name> …    a prompt of the agent group (prompts/<name>.md), or the provider’s own command (e.g. /compact)',
  'anything else is sent to the agent; when it asks a question, answer with the number or the label of an option.',
].join('\n');

export class TerminalChannel implements ChannelAdapter {
  readonly type = 'terminal';
  private rl: readline.Interface | null = null;
  private openQuestion: { questionId: string; options: { label: string; value: string }[] } | null = null;
  private delivered = 0;
  private working: { since: number; timer: NodeJS.Timeout } | null = null;
  /** the user asked to leave: input is still read (so a second Ctrl-C is seen at once) but no longer sent. */
  private leaving = false;

  constructor(private readonly options: TerminalChannelOptions) {}

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
      try {
        if (text.length > 0) this.onLine(host, text);
      } catch (err) {
        this.write(`pincer: ${errorMessage(err)}`);
      }
      this.prompt();
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
        this.write(`agent asks: ${p.title}\n  ${p.question}\n${p.options.map((o, i) => `  ${i + 1}. ${o.label}`).join('\n')}\n  (answer with a number or a label)`);
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
    }
    this.prompt();
  }

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

  private onLine(host: HostApi, text: string): void {
    if (this.leaving) return this.write('pincer: leaving, not sent (Ctrl-C to quit now)');
    const question = this.openQuestion;
    if (question) {
      const byNumber = /^\d+$/.test(text) ? question.options[Number(text) - 1] : undefined;
      const chosen = byNumber ?? question.options.find((o) => o.label.toLowerCase() === text.toLowerCase() || o.value === text);
      if (chosen) {
        this.openQuestion = null;
        host.answerQuestion(this.conversation, { questionId: question.questionId, selectedOption: chosen.value, userId: this.options.sender });
        this.write(`pincer: answered "${chosen.label}"`);
        return;
      }
    }
    if (text === '/help') return this.write(LOCAL_HELP);
    if (text === '/quit' || text === '/exit') return this.options.onQuit?.();
    host.acceptInbound({ conversation: this.conversation, kind: 'chat', content: { text, sender: this.options.sender, senderId: this.options.sender } });
  }

  private write(text: string): void {
    this.options.output.write(`${this.options.interactive ? CLEAR_LINE : ''}${text}\n`);
  }

  private prompt(): void {
    if (!this.options.interactive) return;
    const status = this.working ? `working… ${Math.floor((Date.now() - this.working.since) / 1000)} s` : '';
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
