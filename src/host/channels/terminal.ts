import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { errorMessage } from '../../shared/log.js';
import type { ConversationRef } from '../types.js';
import type { ChannelAdapter, DeliveryReceipt, HostApi, OutboundDelivery } from './types.js';

/**
 * The terminal channel (`pincer chat`): each line typed is a chat message of one conversation; what the agent sends
 * is printed as `agent> …`. While a question is open, the next line answers it (its number or its label).
 */
export interface TerminalChannelOptions {
  input: Readable;
  output: Writable;
  /** the conversation id (platform id) of this terminal. */
  conversation: string;
  sender: string;
  /** show a `you> ` prompt (interactive terminal). */
  interactive: boolean;
  /** called once the input has ended (Ctrl-D, or the end of piped input). */
  onInputEnd?: () => void;
}

export class TerminalChannel implements ChannelAdapter {
  readonly type = 'terminal';
  private rl: readline.Interface | null = null;
  private openQuestion: { questionId: string; options: { label: string; value: string }[] } | null = null;
  private delivered = 0;

  constructor(private readonly options: TerminalChannelOptions) {}

  get conversation(): ConversationRef {
    return { channelType: 'terminal', platformId: this.options.conversation, threadId: null };
  }

  async start(host: HostApi): Promise<void> {
    const { input, output, interactive } = this.options;
    const rl = readline.createInterface({ input, output, terminal: interactive });
    this.rl = rl;
    rl.setPrompt('you> ');
    rl.on('line', (line) => {
      const text = line.trim();
      try {
        if (text.length > 0) this.onLine(host, text);
      } catch (err) {
        this.write(`pincer: ${errorMessage(err)}`);
      }
      this.prompt();
    });
    rl.on('close', () => this.options.onInputEnd?.());
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

  async stop(): Promise<void> {
    const rl = this.rl;
    this.rl = null;
    rl?.removeAllListeners('close');
    rl?.close();
  }

  private onLine(host: HostApi, text: string): void {
    const question = this.openQuestion;
    if (question) {
      const byNumber = question.options[Number(text) - 1];
      const chosen = byNumber ?? question.options.find((o) => o.label.toLowerCase() === text.toLowerCase() || o.value === text);
      if (chosen) {
        this.openQuestion = null;
        host.answerQuestion(this.conversation, { questionId: question.questionId, selectedOption: chosen.value, userId: this.options.sender });
        return;
      }
    }
    host.acceptInbound({ conversation: this.conversation, kind: 'chat', content: { text, sender: this.options.sender, senderId: this.options.sender } });
  }

  private write(text: string): void {
    this.options.output.write(`${this.options.interactive ? '\r' : ''}${text}\n`);
  }

  private prompt(): void {
    if (this.options.interactive) this.rl?.prompt(true);
  }
}
