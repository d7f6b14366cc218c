import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { insertInbound } from '../src/db/messages.js';
import { claudeTestEnv, cleanUpClaudeRunsAfterEach, fakeAnthropic, startClaudeRunner } from './support/claude.js';
import type { FakeReply, FakeRequest } from './support/fake-anthropic.js';
import { createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';
import { runPipedChat } from './support/chat-process.js';

/**
 * The Claude provider with the real Pincer MCP server: Claude Code starts `pincer mcp` from the runner's `mcpServers`,
 * the scripted model calls `mcp__pincer__<tool>`, and the tool writes its rows with the routing of the batch in flight.
 */
cleanUpClaudeRunsAfterEach();

const ROUTING = { platformId: 'C-100', channelType: 'slack', threadId: '1700000000.5' };

/** The model calls one Pincer tool. */
const call = (tool: string, input: Record<string, unknown>): FakeReply => ({ toolUse: { name: `mcp__pincer__${tool}`, input } });

/** The text of the tool result the model was last sent. */
const toolResult = (request: FakeRequest): string => request.lastUserText;

describe('Claude provider with the Pincer MCP server', () => {
  it('writes a send_message row with the batch routing and in_reply_to, then the final text as a second row', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    fake.script(call('send_message', { text: 'On it, checking now.' }), { text: 'All checked: nothing to do.' });

    const { id } = session.chat('please check the build', ROUTING);
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 30_000 });

    const rows = session.outbound();
    expect(rows.map((row) => JSON.parse(row.content))).toEqual([{ text: 'On it, checking now.' }, { text: 'All checked: nothing to do.' }]);
    for (const row of rows) {
      expect(row).toMatchObject({ in_reply_to: id, platform_id: 'C-100', channel_type: 'slack', thread_id: '1700000000.5', kind: 'chat' });
    }
    const [first, second] = fake.modelRequests();
    expect(first!.toolNames).toContain('mcp__pincer__send_message'); // loaded up front, not behind ToolSearch
    expect(first!.system).toContain('## Pincer tools');
    expect(toolResult(second!)).toMatch(/Sent as message \d+\./);
    expect(await runner.stop()).toBe(0);
  });

  it('refuses a tool call over the 1 MiB MCP message limit with a tool error the model sees, and serves the next call', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    fake.script(call('send_message', { text: 'z'.repeat(12 * 1024 * 1024) }), call('send_message', { text: 'a shorter one' }), { text: 'done' });
    const { id } = session.chat('write me everything', ROUTING);
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 60_000 });
    const [, second, third] = fake.modelRequests();
    expect(toolResult(second!)).toContain('is 12.0 MiB, over the 1 MiB limit of one MCP message');
    expect(toolResult(third!)).toMatch(/Sent as message \d+\./);
    expect(session.outbound().map((row) => JSON.parse(row.content))).toEqual([{ text: 'a shorter one' }, { text: 'done' }]);
    expect(await runner.stop()).toBe(0);
  }, 90_000);

  it('lets the model use every Pincer tool once, each leaving its row', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    fs.writeFileSync(path.join(session.paths.agent, 'report.txt'), 'quarterly numbers\n');
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    const seqIn = (text: string, pattern: RegExp): string => {
      const found = pattern.exec(text)?.[1];
      if (!found) throw new Error(`no match for ${pattern} in: ${text}`);
      return found;
    };
    let taskId = '';
    fake.script(
      call('send_message', { text: 'starting' }),
      (req) => call('edit_message', { messageId: Number(seqIn(toolResult(req), /Sent as message (\d+)/)), text: 'starting (edited)' }),
      (req) => call('add_reaction', { messageId: Number(seqIn(req.allText, /<message id="(\d+)"/)), emoji: '👍' }),
      call('send_card', { card: { title: 'Build status', children: [{ type: 'text', text: 'green' }] }, fallbackText: 'Build: green' }),
      call('send_file', { path: 'report.txt', text: 'the report' }),
      call('send_to_agent', { agentGroupId: 'research', text: 'please dig into Q3' }),
      call('register_agent_group', { name: 'Research', folder: 'research', platformId: 'C-200', channelType: 'slack' }),
      call('schedule_task', { prompt: 'water the plants', processAfter: '2099-01-01T09:00:00' }),
      (req) => {
        taskId = seqIn(toolResult(req), /Task ([0-9a-f-]{36}) scheduled/);
        return call('list_tasks', {});
      },
      (req) => {
        expect(toolResult(req)).toContain(taskId);
        return call('pause_task', { taskId });
      },
      () => call('resume_task', { taskId }),
      () => call('update_task', { taskId, prompt: 'water all the plants' }),
      () => call('cancel_task', { taskId }),
      call('ask_user_question', { title: 'Deploy?', question: 'Deploy the build now?', options: ['yes', 'no'], timeout: 60 }),
      (req) => ({ text: `Done; the user said: ${toolResult(req)}` }),
    );

    const { id, seq } = session.chat('do all the things', ROUTING);
    const question = await waitFor(
      'the question',
      () => {
        const row = session.outbound().find((r) => JSON.parse(r.content).operation === 'ask_question');
        return row && (JSON.parse(row.content) as { questionId: string });
      },
      { timeoutMs: 60_000 },
    );
    insertInbound(session.db, { kind: 'system', content: { type: 'question_response', questionId: question.questionId, selectedOption: 'yes' } });
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 30_000 });

    const out = session.outbound().map((row) => ({ ...row, body: JSON.parse(row.content) as Record<string, unknown> }));
    const sent = out.find((r) => r.body.text === 'starting')!;
    expect(out.map((r) => r.body)).toEqual([
      { text: 'starting' },
      { operation: 'edit', messageId: sent.seq, text: 'starting (edited)' },
      { operation: 'reaction', messageId: seq, emoji: '👍' },
      { type: 'card', card: { title: 'Build status', children: [{ type: 'text', text: 'green' }] }, fallbackText: 'Build: green' },
      { text: 'the report', files: ['report.txt'] },
      { text: 'please dig into Q3' },
      { action: 'register_agent_group', name: 'Research', folder: 'research', platformId: 'C-200', channelType: 'slack' },
      { action: 'update_task', taskId, prompt: 'water all the plants' },
      {
        operation: 'ask_question',
        questionId: question.questionId,
        title: 'Deploy?',
        question: 'Deploy the build now?',
        options: [
          { label: 'yes', value: 'yes' },
          { label: 'no', value: 'no' },
        ],
        expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
      { text: 'Done; the user said: The user chose: yes' },
    ]);
    for (const row of out) expect(row.in_reply_to).toBe(id);
    expect(out.find((r) => r.body.type === 'card')!.kind).toBe('chat-sdk');
    expect(out.find((r) => r.body.action)!.kind).toBe('system');
    expect(out.find((r) => r.body.text === 'please dig into Q3')).toMatchObject({ channel_type: 'agent', platform_id: 'research' });
    const file = out.find((r) => r.body.files)!;
    expect(fs.readFileSync(path.join(session.paths.outbox, file.id, 'report.txt'), 'utf8')).toBe('quarterly numbers\n');
    const task = session.allInbound().find((row) => row.kind === 'task')!;
    expect(task).toMatchObject({ id: taskId, status: 'failed', last_error: 'cancelled by the agent', platform_id: 'C-100' });
    // every tool call succeeded: no tool result the model saw was an error
    const results = fake.modelRequests().slice(1).map(toolResult);
    expect(results.filter((text) => /error|invalid|no active task/i.test(text))).toEqual([]);
    expect(results.join('\n')).toContain(`Task ${taskId} paused.`);
    expect(results.join('\n')).toContain(`Task ${taskId} resumed`);
    expect(results.join('\n')).toContain(`Task ${taskId} cancelled.`);
    expect(await runner.stop()).toBe(0);
  });
});

describe('pincer chat --provider claude', () => {
  it('answers piped input through the host, a runner and Claude Code, then exits', async () => {
    const fake = await fakeAnthropic();
    fake.script(call('send_message', { text: 'Looking…' }), { text: 'Hello from Claude.' });
    // the default runner kind (auto), as a user gets it
    const chat = await runPipedChat(['--provider', 'claude'], { PINCER_RUNNER: 'auto', ...claudeTestEnv(fake) }, 'hi there\n');
    try {
      expect(chat.code).toBe(0);
      expect(chat.stdout).toContain('Looking…');
      expect(chat.stdout).toContain('Hello from Claude.');
      expect(fake.modelRequests()[0]!.lastUserText).toContain('hi there</message>');
    } finally {
      chat.cleanup();
    }
  });
});
