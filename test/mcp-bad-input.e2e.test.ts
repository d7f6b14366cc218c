import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllMcpClients, isAlive, putBatchInFlight, startMcpClient, type McpHandle } from './support/mcp-client.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';

/**
 * Bad input to every kind of tool, against one real `pincer mcp` process: each call is a tool error with a clear
 * message, writes no row, and the server keeps serving.
 */
describe('bad input', () => {
  let s: TestSession;
  let mcp: McpHandle;
  let taskId: string;
  beforeAll(async () => {
    s = createTestSession();
    const msg = s.chat('hello', { platformId: 'C1', channelType: 'slack' });
    putBatchInFlight(s.db, msg.id);
    taskId = s.insert({ kind: 'task', content: { prompt: 'p' }, processAfter: '2030-01-01T00:00:00.000Z' }).id;
    mcp = await startMcpClient(s.paths.root);
  });
  afterAll(async () => {
    await mcp.close();
    expect(await closeAllMcpClients()).toBe(0);
    cleanupSessions();
  });
  const counts = (): [number, number] => [s.allInbound().length, s.outbound().length];

  it.each<[string, string, Record<string, unknown>, string]>([
    ['wrong type', 'send_message', { text: 42 }, 'expected string, received number at text'],
    ['missing field', 'send_message', {}, 'expected string, received undefined at text'],
    ['empty text', 'send_message', { text: '  \n ' }, 'text is empty'],
    ['huge text', 'send_message', { text: 'x'.repeat(1_000_000) }, 'text is longer than 64000 characters'],
    ['channel without platformId', 'send_message', { text: 'x', channel: 'telegram' }, 'needs platformId too'],
    ['unknown message id', 'edit_message', { messageId: 999, text: 'x' }, 'there is no message with id 999'],
    ['message id not a number', 'add_reaction', { messageId: 'abc', emoji: 'x' }, 'messageId must be a message id'],
    ['unknown message id (reaction)', 'add_reaction', { messageId: 999, emoji: 'x' }, 'there is no message with id 999'],
    ['empty card', 'send_card', { card: {} }, 'card needs a title or at least one child'],
    ['path outside the workspace', 'send_file', { path: '/etc/passwd' }, 'is outside the workspace'],
    ['invalid cron', 'schedule_task', { prompt: 'p', recurrence: '61 * * * *' }, 'is not a valid cron expression'],
    ['cron with seconds', 'schedule_task', { prompt: 'p', recurrence: '* * * * * *' }, 'is not a cron expression of 5 fields'],
    ['not a time', 'schedule_task', { prompt: 'p', processAfter: 'next tuesday' }, 'is not a time'],
    ['no time at all', 'schedule_task', { prompt: 'p' }, 'give processAfter'],
    ['timeout 0', 'ask_user_question', { title: 't', question: 'q', options: ['a'], timeout: 0 }, 'timeout must be more than 0 seconds'],
    ['negative timeout', 'ask_user_question', { title: 't', question: 'q', options: ['a'], timeout: -5 }, 'timeout must be more than 0 seconds'],
    ['no options', 'ask_user_question', { title: 't', question: 'q', options: [] }, 'options needs at least one choice'],
    ['duplicate options', 'ask_user_question', { title: 't', question: 'q', options: ['a', { label: 'A', value: 'a' }] }, 'two options have the value "a"'],
    ['unknown task id', 'cancel_task', { taskId: 'nope' }, 'no active task "nope"'],
    ['update with nothing to change', 'update_task', { taskId: '$TASK' }, 'nothing to change'],
    ['update with invalid cron', 'update_task', { taskId: '$TASK', recurrence: 'every day' }, 'is not a cron expression'],
    ['folder that climbs out', 'register_agent_group', { name: 'x', folder: '../evil', platformId: 'p', channelType: 'c' }, 'folder must be one folder name'],
    ['empty agent group', 'send_to_agent', { agentGroupId: '', text: 'x' }, 'agentGroupId is empty'],
    ['unknown tool', 'delete_everything', {}, 'Tool delete_everything not found'],
  ])('%s (%s) is a tool error and writes nothing', async (_name, tool, args, message) => {
    const before = counts();
    const resolved = JSON.parse(JSON.stringify(args).replace('$TASK', taskId)) as Record<string, unknown>;
    const result = await mcp.call(tool, resolved);
    expect(result.isError).toBe(true);
    expect(result.text).toContain(message);
    expect(counts()).toEqual(before);
  });

  it.each([
    ['over the limit', 2 * 1024 * 1024, '2.0 MiB'],
    ["over the SDK's 10 MiB line buffer", 12 * 1024 * 1024, '12.0 MiB'],
  ])('a tool call %s is a tool error naming the 1 MiB message limit, and the server answers the next call', async (_name, bytes, size) => {
    const before = counts();
    const result = await mcp.call('send_message', { text: 'y'.repeat(bytes) });
    expect(result.isError).toBe(true);
    expect(result.text).toBe(
      `the call to send_message is ${size}, over the 1 MiB limit of one MCP message: pass less (a long text as several messages, or write it to a file and send its path)`,
    );
    expect(counts()).toEqual(before);
    expect(mcp.stderr()).toContain(`[mcp] warn: refused a ${size} message (tools/call send_message): over the 1 MiB limit`);
    expect(await mcp.call('send_message', { text: 'after the big one' })).toMatchObject({ isError: false });
    expect(JSON.parse(String(s.outbound().at(-1)?.content))).toMatchObject({ text: 'after the big one' });
  });

  it('keeps serving after all of them', async () => {
    expect(isAlive(mcp.pid)).toBe(true);
    expect(await mcp.call('send_message', { text: 'still here' })).toMatchObject({ isError: false });
  });
});
