import { Container, Editor, Markdown, matchesKey, ProcessTerminal, SelectList, Spacer, Text, TUI, type Terminal } from '@mariozechner/pi-tui';
import { errorMessage } from '../../shared/log.js';
import type { ToolActivity } from '../../db/tool-activity.js';
import { DISK_FULL_NOTICE, isDiskFull } from '../errors.js';
import type { ConversationRef } from '../types.js';
import { TerminalChannel, type TerminalChannelOptions } from './terminal.js';
import { tuiPalette, type TuiPalette } from './tui/palette.js';
import { StatusLine } from './tui/status-line.js';
import { ToolLine } from './tui/tool-line.js';
import type { DeliveryReceipt, HostApi, OutboundDelivery } from './types.js';

/**
 * `pincer chat` in an interactive terminal, drawn with pi-tui (differential rendering): the banner, the transcript
 * (the user's lines, the agent's answers as markdown, one live line per tool call, Pincer's notices), an editor line
 * and a status line (provider, model, working… and the tool running). A question is a list chosen with the arrow
 * keys and Enter. What a line does (answers, /help, /quit, /attach) is the line REPL's (terminal.ts); Ctrl-C and
 * Ctrl-D (on an empty line) go to `onQuit` as there. Piped input and TERM=dumb keep the line REPL.
 */
export interface TuiTerminalOptions extends TerminalChannelOptions {
  /** `provider mock · model …`: the status line's first part. */
  describe: string;
  /** the terminal to draw on (default: this process's stdin/stdout). */
  terminal?: Terminal;
}

/** How often the status line's seconds and running tools' durations are redrawn. */
const TICK_MS = 1000;

export class TuiTerminalChannel extends TerminalChannel {
  private tui: TUI | null = null;
  private readonly transcript = new Container();
  private editor: Editor | null = null;
  private readonly status: StatusLine;
  private colours: TuiPalette;
  private readonly tools = new Map<number, ToolLine>();
  private ticker: NodeJS.Timeout | null = null;
  private host: HostApi | null = null;
  private choosing: SelectList | null = null;

  constructor(private readonly tuiOptions: TuiTerminalOptions) {
    super({ ...tuiOptions, interactive: true });
    this.colours = tuiPalette(undefined);
    this.status = new StatusLine(tuiOptions.describe, this.colours);
  }

  override useTheme(colours: Parameters<TerminalChannel['useTheme']>[0]): void {
    this.colours = tuiPalette(colours);
    this.status.palette = this.colours;
    if (this.editor) this.editor.borderColor = this.colours.dim;
  }

  override async start(host: HostApi): Promise<void> {
    this.host = host;
    const tui = new TUI(this.tuiOptions.terminal ?? new ProcessTerminal());
    this.tui = tui;
    const banner = this.options.banner ?? [];
    if (banner.length > 0) tui.addChild(new Text(banner.map((line, i) => (i === 0 ? this.colours.bold(line) : this.colours.dim(line))).join('\n'), 0, 0));
    tui.addChild(this.transcript);
    tui.addChild(new Spacer(1));
    const editor = new Editor(tui, { borderColor: this.colours.dim, selectList: this.colours.selectList });
    this.editor = editor;
    editor.onSubmit = (line) => this.submit(host, line);
    tui.addChild(editor);
    tui.addChild(this.status);
    tui.setFocus(editor);
    tui.addInputListener((data) => {
      // raw mode: no SIGINT reaches the process; the chat decides what Ctrl-C means (leave once answered, then quit)
      if (matchesKey(data, 'ctrl+c') || (matchesKey(data, 'ctrl+d') && editor.getText() === '' && !this.choosing)) {
        this.options.onQuit?.();
        return { consume: true };
      }
      return undefined;
    });
    tui.start();
  }

  private submit(host: HostApi, line: string): void {
    const text = line.trim();
    if (text.length === 0) return;
    this.editor?.addToHistory(text);
    this.add(new Text(`${this.colours.user('you>')} ${text}`, 0, 0));
    if (this.leaving) return this.write('pincer: leaving, not sent (Ctrl-C to quit now)');
    this.lines = this.lines
      .then(() => this.onLine(host, text))
      .catch((err: unknown) => this.write(`pincer: ${isDiskFull(err) ? DISK_FULL_NOTICE : errorMessage(err)}`));
  }

  override async deliver(message: OutboundDelivery): Promise<DeliveryReceipt> {
    const p = message.payload;
    if (p.type === 'chat') {
      const files = p.files.length ? `\n\n*files: ${p.files.map((f) => f.path).join(', ')}*` : '';
      this.add(new Text(this.colours.agent('agent>'), 0, 0));
      this.add(new Markdown(`${p.text}${files}`, 2, 0, this.colours.markdown));
      return this.receipt();
    }
    if (p.type === 'question') {
      this.openQuestion = { questionId: p.questionId, options: p.options };
      this.add(new Text(`${this.colours.agent('agent asks:')} ${this.colours.bold(p.title)}\n  ${p.question}`, 0, 0));
      this.choose(p.options.map((o, i) => ({ value: String(i + 1), label: o.label })));
      return this.receipt();
    }
    return super.deliver(message);
  }

  /** A question's options as a list: arrows and Enter answer it (through the line REPL's answer), Esc types instead. */
  private choose(items: { value: string; label: string }[]): void {
    const tui = this.tui;
    const host = this.host;
    if (!tui || !host) return;
    const list = new SelectList(items, Math.min(items.length, 8), this.colours.selectList);
    const done = (): void => {
      this.transcript.removeChild(list);
      this.choosing = null;
      tui.setFocus(this.editor);
      tui.requestRender();
    };
    list.onSelect = (item) => {
      done();
      this.submit(host, item.value);
    };
    list.onCancel = done;
    this.choosing = list;
    this.transcript.addChild(list);
    tui.setFocus(list);
    tui.requestRender();
  }

  private deliveredCount = 0;

  private receipt(): DeliveryReceipt {
    this.deliveredCount += 1;
    return { platformMessageId: `terminal-tui-${this.deliveredCount}` };
  }

  override async setTyping(_conversation: ConversationRef, active: boolean): Promise<void> {
    this.status.setWorking(active);
    if (active && !this.ticker) {
      this.ticker = setInterval(() => this.tui?.requestRender(), TICK_MS);
      this.ticker.unref();
    } else if (!active && this.ticker && ![...this.tools.values()].some((t) => t.running)) {
      clearInterval(this.ticker);
      this.ticker = null;
    }
    this.tui?.requestRender();
  }

  override async showToolActivity(_conversation: ConversationRef, activity: ToolActivity): Promise<void> {
    const line = this.tools.get(activity.id);
    if (line) line.update(activity);
    else {
      const added = new ToolLine(activity, this.colours);
      this.tools.set(activity.id, added);
      this.add(added);
    }
    if (this.tools.size > 200) for (const id of [...this.tools.keys()].slice(0, this.tools.size - 200)) this.tools.delete(id);
    this.status.setTool(activity.status === 'running' ? `${activity.name}${activity.preview ? ` ${activity.preview.slice(0, 40)}` : ''}` : null);
    this.tui?.requestRender();
  }

  override say(text: string): void {
    this.write(`pincer: ${text}`);
  }

  override leave(): void {
    this.leaving = true;
    this.status.setLeaving();
    this.tui?.requestRender();
  }

  override async stop(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    const tui = this.tui;
    this.tui = null;
    tui?.stop();
  }

  protected override write(text: string): void {
    const paint = text.startsWith('agent')
      ? this.colours.agent
      : /^pincer: (cannot|.*\bfailed\b)/.test(text)
        ? this.colours.error
        : text.startsWith('pincer:')
          ? this.colours.notice
          : (t: string) => t;
    this.add(new Text(paint(text), 0, 0));
  }

  private add(component: Text | Markdown | ToolLine): void {
    // the choice list stays last while a question is open
    if (this.choosing) this.transcript.removeChild(this.choosing);
    this.transcript.addChild(component);
    if (this.choosing) this.transcript.addChild(this.choosing);
    this.tui?.requestRender();
  }
}
