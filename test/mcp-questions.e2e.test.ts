import { afterEach, describe, expect, it } from 'vitest';
import { insertInbound } from '../src/db/messages.js';
import { readRunnerState, setRunnerBatch, setRunnerStateName } from '../src/db/state.js';
import type { OutboundRow } from '../src/db/types.js';
import { closeAllMcpClients, isAlive, putBatchInFlight, startMcpClient, type ToolOutcome } from './support/mcp-client.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * ask_user_question through the real `pincer mcp` process. The fallback interval is set to a minute, so a call that
 * returns within the test's deadlines was woken by the change to the session DB, not by polling.
 */
afterEach(async () => {
  expect(await closeAllMcpClients()).toBe(0);
  cleanupSessions();
});

const NO_POLLING = { PINCER_POLL_IDLE_MS: '60000' };

interface AskedQuestion {
  row: OutboundRow;
  questionId: string;
  content: Record<string, unknown>;
}

async function asked(s: TestSession, count = 1): Promise<AskedQuestion[]> {
  const rows = await waitFor(`${count} question row(s)`, () => {
    const found = s.outbound().filter((row) => row.content.includes('"ask_question"'));
    return found.length >= count && found;
  });
  return rows.map((row) => {
    const content = JSON.parse(row.content) as Record<string, unknown>;
    return { row, questionId: String(content.questionId), content };
  });
}

function answer(s: TestSession, questionId: string, selectedOption: string): string {
  return insertInbound(s.db, { kind: 'system', content: { type: 'question_response', questionId, selectedOption, userId: 'u1' } }).id;
}

async function setUp() {
  const s = createTestSession();
  const msg = s.chat('delete the old logs?', { platformId: 'C1', channelType: 'slack', threadId: 'T1' });
  putBatchInFlight(s.db, msg.id);
  const mcp = await startMcpClient(s.paths.root, NO_POLLING);
  return { s, msg, mcp };
}

const state = (s: TestSession): string | undefined => readRunnerState(s.db)?.state;

describe('ask_user_question', () => {
  it('writes the question, waits as waiting_user, takes the matching answer and restores the state', async () => {
    const { s, msg, mcp } = await setUp();
    const call = mcp.call('ask_user_question', {
      title: 'Confirm deletion',
      question: 'Delete 3 GB of logs?',
      options: ['Yes', { label: 'No, keep them', selectedLabel: 'Kept', value: 'no' }],
    });
    const [question] = await asked(s);
    expect(question!.row).toMatchObject({ kind: 'chat', in_reply_to: msg.id, platform_id: 'C1', channel_type: 'slack', thread_id: 'T1' });
    expect(question!.content).toEqual({
      operation: 'ask_question',
      questionId: question!.questionId,
      title: 'Confirm deletion',
      question: 'Delete 3 GB of logs?',
      options: [
        { label: 'Yes', value: 'Yes' },
        { label: 'No, keep them', selectedLabel: 'Kept', value: 'no' },
      ],
      // until when the answer is taken (the default timeout, 300 s); a later answer reaches the agent as a message
      expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const leftMs = Date.parse(String(question!.content.expiresAt)) - Date.parse(question!.row.timestamp);
    expect(Math.abs(leftMs - 300_000)).toBeLessThan(60_000);
    await waitFor('waiting_user', () => state(s) === 'waiting_user');

    // A follow-up pushed by the runner meanwhile keeps the state; an answer to another question is left alone.
    setRunnerBatch(s.db, 'busy', [msg.id], readRunnerState(s.db)!.routing);
    expect(state(s)).toBe('waiting_user');
    const other = answer(s, 'another-question', 'Yes');
    const mine = answer(s, question!.questionId, 'no');

    expect(await call).toEqual({ isError: false, text: 'The user chose: no (No, keep them)' });
    expect(s.inbound(mine).status).toBe('completed');
    expect(s.inbound(other).status).toBe('pending');
    expect(state(s)).toBe('busy');
    await mcp.close();
  });

  it('times out with a clear error and restores the state', async () => {
    const { s, mcp } = await setUp();
    const result = await mcp.call('ask_user_question', { title: 'Quick', question: 'Now?', options: ['ok'], timeout: 0.5 });
    expect(result).toEqual({ isError: true, text: 'the user did not answer within 0.5 s; ask again later or go on without an answer' });
    expect(state(s)).toBe('busy');
    await mcp.close();
  });

  it('fails an answer row that is not a valid question_response, and keeps waiting for a valid one', async () => {
    const { s, mcp } = await setUp();
    const call = mcp.call('ask_user_question', { title: 'Pick', question: 'Which?', options: ['a', 'b'] });
    const [question] = await asked(s);
    const bad = insertInbound(s.db, { kind: 'system', content: { type: 'question_response', questionId: question!.questionId } }).id;
    await waitFor('bad answer failed', () => s.inbound(bad).status === 'failed');
    expect(s.inbound(bad).last_error).toMatch(/^invalid answer to question .*selectedOption/);
    answer(s, question!.questionId, 'b');
    expect(await call).toEqual({ isError: false, text: 'The user chose: b' });
    await mcp.close();
  });

  it('stays waiting_user until the last of two open questions is answered', async () => {
    const { s, mcp } = await setUp();
    const first = mcp.call('ask_user_question', { title: 'One', question: '1?', options: ['x'] });
    const second = mcp.call('ask_user_question', { title: 'Two', question: '2?', options: ['y'] });
    const questions = await asked(s, 2);
    const byTitle = (title: string) => questions.find((q) => q.content.title === title)!.questionId;
    answer(s, byTitle('One'), 'x');
    expect((await first).isError).toBe(false);
    expect(state(s)).toBe('waiting_user');
    answer(s, byTitle('Two'), 'y');
    expect((await second).isError).toBe(false);
    expect(state(s)).toBe('busy');
    await mcp.close();
  });

  it('leaves a state the runner set meanwhile (idle after its query ended) as it is', async () => {
    const { s, mcp } = await setUp();
    const call = mcp.call('ask_user_question', { title: 'Pick', question: 'Which?', options: ['a'] });
    const [question] = await asked(s);
    await waitFor('waiting_user', () => state(s) === 'waiting_user');
    setRunnerStateName(s.db, 'idle');
    answer(s, question!.questionId, 'a');
    expect((await call).isError).toBe(false);
    expect(state(s)).toBe('idle');
    await mcp.close();
  });

  it('when the client goes away mid-question, the server restores the state and exits', async () => {
    const { s, mcp } = await setUp();
    const call = mcp
      .call('ask_user_question', { title: 'Pick', question: 'Which?', options: ['a'] })
      .catch((err: Error): ToolOutcome => ({ isError: true, text: err.message }));
    await asked(s);
    await waitFor('waiting_user', () => state(s) === 'waiting_user');
    await mcp.close();
    expect((await call).isError).toBe(true);
    await waitFor('server exited', () => !isAlive(mcp.pid));
    expect(state(s)).toBe('busy');
  });
});
