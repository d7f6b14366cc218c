import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { taskRowsOf as taskRows } from './support/platform-host.js';
import { waitFor } from './support/wait.js';

/**
 * Cancelling a scheduled task means the same whoever does it — the agent with its `cancel_task` tool, the agent with a
 * `cancel_task` action row, or a client of the HTTP API (the web page's Cancel button): through a real host, the
 * task's row ends `failed` with its recurrence cleared and `last_error` saying who cancelled it, the task is gone from
 * every list, the session shows no error, and a second cancel finds nothing.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
});

const SLOW = { timeoutMs: 45_000 };

type Cancel = (host: HostHandle, conversation: string, sessionId: string, taskId: string) => Promise<void>;

interface EntryPoint {
  name: string;
  /** the host's environment (the provider of the agent that cancels) and how to cancel; resolves once answered. */
  start(): Promise<{ env: Record<string, string>; cancel: Cancel }>;
  /** `last_error` of the cancelled row. */
  by: string;
}

const entryPoints: EntryPoint[] = [
  {
    name: "the agent's cancel_task tool",
    start: async () => {
      const fake = await startFakeOpenAI();
      const env = { AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' };
      const cancel: Cancel = async (host, conversation, _sessionId, taskId) => {
        fake.script({ call: 'mcp__pincer__cancel_task', args: { taskId } }, { text: 'cancelled it' });
        const stream = host.stream(conversation);
        await host.request('POST', `/v1/conversations/${conversation}/messages`, { text: 'cancel my standup reminder' });
        await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'cancelled it', SLOW.timeoutMs);
        stream.close();
        expect(JSON.stringify(fake.modelRequests()[1]!.body)).toContain(`Task ${taskId} cancelled.`);
      };
      return { env, cancel };
    },
    by: 'cancelled by the agent',
  },
  {
    name: "the agent's cancel_task action",
    start: async () => ({
      env: {},
      cancel: async (host, conversation, sessionId, taskId) => {
        const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
        const routing = { channelType: 'http', platformId: conversation, threadId: null, inReplyTo: null };
        insertOutbound(db, { kind: 'system', content: { action: 'cancel_task', taskId }, routing });
        const answer = () =>
          (db.prepare(`SELECT content FROM messages_in WHERE kind = 'system'`).all() as { content: string }[])
            .map((row) => JSON.parse(row.content) as Record<string, unknown>)
            .find((content) => content.action === 'cancel_task');
        expect(await waitFor('the action answered', answer)).toMatchObject({ status: 'success', result: { taskId } });
        db.close();
      },
    }),
    by: 'cancelled by the agent',
  },
  {
    name: 'the HTTP API',
    start: async () => ({
      env: {},
      cancel: async (host, _conversation, _sessionId, taskId) => {
        expect((await host.request('POST', `/v1/tasks/${taskId}/cancel`)).body).toEqual({ id: taskId, status: 'cancelled' });
      },
    }),
    by: 'cancelled over HTTP',
  },
];

describe('cancelling a task', { timeout: 90_000 }, () => {
  it.each(entryPoints)('through $name: failed, recurrence cleared, gone from the lists', async (entry) => {
    const { env, cancel } = await entry.start();
    const host = await startHost(env);
    const created = await host.request('POST', '/v1/conversations/standup/tasks', { prompt: 'Standup reminder', recurrence: '0 9 * * 1-5' });
    expect(created.status).toBe(202);
    const { id, sessionId } = created.body as { id: string; sessionId: string };

    await cancel(host, 'standup', sessionId, id);

    expect(taskRows(host, sessionId)).toEqual([expect.objectContaining({ id, status: 'failed', recurrence: null, last_error: entry.by, tries: 0 })]);
    expect((await host.request('GET', '/v1/tasks')).body.tasks).toEqual([]);
    expect((await host.request('GET', `/v1/tasks/${id}`)).status).toBe(404);
    // a cancel is no error: the session's last error stays empty (the web page's Sessions view)
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; lastError: string | null }[];
    expect(sessions.find((session) => session.id === sessionId)).toMatchObject({ lastError: null });
    // a second cancel, by any way, finds no active task
    const again = await host.request('POST', `/v1/tasks/${id}/cancel`);
    expect(again.status).toBe(404);
    expect(again.body.error).toMatch(/no active task/);
    expect(await host.stop()).toBe(0);
  });
});
