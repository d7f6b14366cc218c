import { visibleWidth, type Terminal } from '@mariozechner/pi-tui';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { ToolActivity } from '../src/db/tool-activity.js';
import { TuiTerminalChannel } from '../src/host/channels/terminal-tui.js';
import { tuiPalette } from '../src/host/channels/tui/palette.js';
import { StatusLine } from '../src/host/channels/tui/status-line.js';
import { ToolLine } from '../src/host/channels/tui/tool-line.js';
import type { HostApi } from '../src/host/channels/types.js';

/** The terminal UI's parts without a terminal: each component's lines, and the channel drawn on a terminal of strings. */
const plain = tuiPalette(undefined);
const T0 = Date.parse('2026-12-03T10:00:00.000Z');

function activity(status: ToolActivity['status'], endedAfterMs?: number): ToolActivity {
  return {
    id: 7,
    callId: 'c',
    name: 'bash',
    preview: 'ls -la',
    status,
    startedAt: new Date(T0).toISOString(),
    endedAt: endedAfterMs === undefined ? null : new Date(T0 + endedAfterMs).toISOString(),
    routing: { channel_type: null, platform_id: null, thread_id: null },
  };
}

describe('terminal UI components', () => {
  it.each([
    ['running', activity('running'), '  … bash ls -la  2 s'],
    ['done', activity('ok', 420), '  ✓ bash ls -la  0.4 s'],
    ['failed', activity('error', 1250), '  ✗ bash ls -la failed after 1.3 s'],
  ])('a tool line %s', (_name, tool, text) => {
    expect(new ToolLine(tool, plain, () => T0 + 2500).text()).toBe(text);
  });

  it('a tool line is cut to the width, colours and all', () => {
    const coloured = tuiPalette({ agent: '#111111', user: '#222222', tool: '#333333', notice: '#444444', error: '#555555', accent: '#666666' });
    const line = new ToolLine({ ...activity('running'), preview: 'x'.repeat(300) }, coloured, () => T0);
    const [rendered] = line.render(40);
    expect(visibleWidth(rendered!)).toBeLessThanOrEqual(40);
    expect(rendered).toContain('\x1b[38;2;51;51;51m'); // the theme's tool colour
  });

  it('the status line names provider and model, the working time and the tool running, and leaving', () => {
    let now = T0;
    const status = new StatusLine('provider pincer · model local/x', plain, () => now);
    expect(status.text()).toBe('provider pincer · model local/x');
    status.setWorking(true);
    now += 4200;
    status.setTool('bash ls');
    expect(status.text()).toBe('provider pincer · model local/x · working… 4 s · bash ls');
    status.setWorking(false);
    status.setLeaving();
    expect(status.text()).toBe('provider pincer · model local/x · leaving once answered — Ctrl-C again to quit');
  });
});

/** A terminal that keeps what is written (pi-tui's `Terminal` contract), 80×24, its input fed by the test. */
class StringTerminal implements Terminal {
  written = '';
  input: (data: string) => void = () => undefined;
  start(onInput: (data: string) => void): void {
    this.input = onInput;
  }
  stop(): void {}
  async drainInput(): Promise<void> {}
  write(data: string): void {
    this.written += data;
  }
  get columns(): number {
    return 80;
  }
  get rows(): number {
    return 24;
  }
  get kittyProtocolActive(): boolean {
    return false;
  }
  moveBy(): void {}
  hideCursor(): void {}
  showCursor(): void {}
  clearLine(): void {}
  clearFromCursor(): void {}
  clearScreen(): void {}
  setTitle(): void {}
  setProgress(): void {}
}

describe('the terminal UI channel', () => {
  function open(): { channel: TuiTerminalChannel; terminal: StringTerminal; quits: number[]; sent: unknown[] } {
    const terminal = new StringTerminal();
    const quits: number[] = [];
    const sent: unknown[] = [];
    const channel = new TuiTerminalChannel({
      input: new PassThrough(),
      output: new PassThrough(),
      conversation: 'local',
      sender: 'me',
      interactive: true,
      banner: ['Pincer chat — provider mock'],
      describe: 'provider mock',
      terminal,
      onQuit: () => quits.push(1),
    });
    const host = { acceptInbound: async (m: unknown) => (sent.push(m), { sessionId: 's', id: 'i', seq: 1 }) } as unknown as HostApi;
    void channel.start(host);
    return { channel, terminal, quits, sent };
  }
  const conversation = { channelType: 'terminal', platformId: 'local', threadId: null };
  const rendered = (channel: TuiTerminalChannel): string => (channel as unknown as { tui: { render(w: number): string[] } }).tui.render(80).join('\n');

  it('renders answers as markdown, one line per tool call updated in place, and sends what is typed', async () => {
    const { channel, terminal, sent } = open();
    await channel.deliver({
      sessionId: 's',
      id: 'o',
      seq: 2,
      conversation,
      inReplyTo: null,
      payload: { type: 'chat', text: '# Title\n\n**bold** and `code`', files: [] },
    });
    await channel.showToolActivity(conversation, activity('running'));
    await channel.showToolActivity(conversation, activity('ok', 300));
    const screen = rendered(channel);
    expect(screen).toContain('agent>');
    expect(screen).toContain('bold and code');
    expect(screen).not.toContain('**');
    expect(screen.match(/bash ls -la/g)).toHaveLength(1);
    expect(screen).toContain('✓ bash ls -la');
    terminal.input('hello');
    terminal.input('\r');
    await channel.drained();
    expect(sent).toMatchObject([{ kind: 'chat', content: { text: 'hello', sender: 'me' } }]);
    expect(rendered(channel)).toContain('you> hello');
    await channel.stop();
  });

  it('Ctrl-C goes to onQuit, and Ctrl-D only on an empty line', async () => {
    const { channel, terminal, quits } = open();
    terminal.input('\x03');
    expect(quits).toHaveLength(1);
    terminal.input('x');
    terminal.input('\x04');
    expect(quits).toHaveLength(1);
    await channel.stop();
  });
});
