import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { TerminalChannel } from '../src/host/channels/terminal.js';
import type { HostApi, InboundEnvelope } from '../src/host/channels/types.js';
import { TaskBoard } from '../src/host/tasks.js';
import { waitFor } from './support/wait.js';

/** The terminal channel over in-memory streams, with a HostApi that records what it is asked. */
function setup() {
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = '';
  output.setEncoding('utf8').on('data', (c: string) => (printed += c));
  const inbound: InboundEnvelope[] = [];
  const answers: { questionId: string; selectedOption: string; userId?: string }[] = [];
  const host: HostApi = {
    acceptInbound: async (m) => (inbound.push(m), { sessionId: 's', id: `i${inbound.length}`, seq: inbound.length }),
    answerQuestion: async (_c, a) => (answers.push(a), { sessionId: 's', id: 'a', seq: 99 }),
    scheduleTask: async () => ({ sessionId: 's', id: 't', seq: 1 }),
    listSessions: async () => [],
    stopRunner: async () => undefined,
    restartRunner: async () => undefined,
    runnerLogTail: async () => [],
    tasks: new TaskBoard(() => []),
    modelCatalogue: () => [],
    groupOf: () => {
      throw new Error('not used by the terminal');
    },
    sessionFolderOf: () => {
      throw new Error('not used by the terminal');
    },
  };
  const channel = new TerminalChannel({ input, output, conversation: 'local', sender: 'ann', interactive: false });
  return { input, printed: () => printed, inbound, answers, host, channel };
}

const conversation = { channelType: 'terminal', platformId: 'local', threadId: null };

describe('terminal channel', () => {
  it('sends each line as a chat message and prints what the agent sends', async () => {
    const t = setup();
    await t.channel.start(t.host);
    t.input.write('hello there\n\n');
    await waitFor('line accepted', () => t.inbound.length === 1);
    expect(t.inbound[0]).toEqual({ conversation, kind: 'chat', content: { text: 'hello there', sender: 'ann', senderId: 'ann' } });
    await t.channel.deliver({ sessionId: 's', id: 'o1', seq: 2, conversation, inReplyTo: 'i1', payload: { type: 'chat', text: 'hi ann', files: [] } });
    await t.channel.deliver({ sessionId: 's', id: null, seq: null, conversation, inReplyTo: null, payload: { type: 'notice', text: 'gave up' } });
    expect(t.printed()).toBe('agent> hi ann\npincer: gave up\n');
    await t.channel.stop();
  });

  it('answers an open question with the next line, by number or label; other lines stay messages', async () => {
    const t = setup();
    await t.channel.start(t.host);
    await t.channel.deliver({
      sessionId: 's',
      id: 'o1',
      seq: 2,
      conversation,
      inReplyTo: null,
      payload: {
        type: 'question',
        questionId: 'q1',
        title: 'Deploy?',
        question: 'Ship it now?',
        options: [
          { label: 'Yes', value: 'y' },
          { label: 'Later', value: 'later' },
        ],
      },
    });
    expect(t.printed()).toContain('  2. Later');
    t.input.write('maybe\n');
    t.input.write('2\n');
    await waitFor('answered', () => t.answers.length === 1);
    expect(t.answers[0]).toEqual({ questionId: 'q1', selectedOption: 'later', userId: 'ann' });
    expect(t.printed()).toContain('pincer: answered "Later"\n');
    expect(t.inbound.map((m) => (m.content as { text: string }).text)).toEqual(['maybe']);
    t.input.write('2\n');
    await waitFor('after the answer, a plain message', () => t.inbound.length === 2);
    expect(t.answers).toHaveLength(1);
    await t.channel.stop();
  });

  it('answers /help itself, leaves on /quit, and passes other slash commands to the agent', async () => {
    const t = setup();
    let quit = 0;
    const out = new PassThrough();
    let printed = '';
    out.setEncoding('utf8').on('data', (c: string) => (printed += c));
    const local: TerminalChannel = new TerminalChannel({
      input: t.input,
      output: out,
      conversation: 'local',
      sender: 'ann',
      interactive: false,
      onQuit: () => {
        quit += 1;
        local.leave(); // as pincer chat does
      },
    });
    await local.start(t.host);
    t.input.write('/help\n/compact\n/clear\n');
    await waitFor('slash commands', () => t.inbound.length === 2);
    expect(printed).toContain('/quit        leave');
    expect(t.inbound.map((m) => (m.content as { text: string }).text)).toEqual(['/compact', '/clear']);
    t.input.write('/quit\n');
    await waitFor('quit', () => quit === 1);
    t.input.write('after quit\n');
    await waitFor('the not-sent line', () => printed.includes('pincer: leaving, not sent (Ctrl-C to quit now)'));
    expect(t.inbound).toHaveLength(2);
    await local.stop();
  });
});
