import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { descendants } from './support/processes.js';
import { waitFor } from './support/wait.js';

/**
 * The built-in runtime serves the Pincer tools inside its runner process (the MCP SDK's linked in-memory transport)
 * instead of a `pincer mcp` child: through a real host and a real runner against the fake OpenAI-compatible server,
 * the tools keep their behaviour (rows written, refusals reaching the model as tool errors) and the session is one
 * process.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
});

const commandOf = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '(exited)';
  }
};

describe('built-in runtime: the Pincer tools in the runner process', { timeout: 90_000 }, () => {
  it('calls send_message and schedule_task, gets a refusal back as a tool error, and starts no pincer mcp child', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'mcp__pincer__send_message', args: { text: 'working on it' } },
      { call: 'mcp__pincer__schedule_task', args: { prompt: 'water the plants', processAfter: '2099-01-01T09:00:00Z' } },
      { call: 'mcp__pincer__schedule_task', args: { prompt: 'no time given' } },
      { text: 'all done' },
    );
    const host = await startHost({ AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' });
    const stream = host.stream('linked');
    const sent = (await host.request('POST', '/v1/conversations/linked/messages', { text: 'please plan my week' })).body as { sessionId: string };
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'all done');
    const chats = stream.events.filter((e) => e.event === 'chat').map((e) => e.data.text);
    expect(chats).toEqual(['working on it', 'all done']);

    // The task row was written by the tool, in the session DB, with its time.
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const tasks = db.prepare("SELECT id, process_after, content FROM messages_in WHERE kind = 'task'").all() as { id: string; process_after: string; content: string }[];
    db.close();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.process_after).toBe('2099-01-01T09:00:00.000Z');
    expect(tasks[0]!.content).toContain('water the plants');

    // The model saw the task id, then the server's refusal of the second call as a tool error.
    const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(requests).toHaveLength(4);
    expect(requests[2]).toContain(`Task ${tasks[0]!.id} scheduled`);
    expect(requests[3]).toContain('give processAfter (when to run), or a recurrence, or both');

    // One process for the whole session: the runner, with no child (no `pincer mcp`, no agent binary).
    const [runnerPid] = host.runnerPids();
    expect(runnerPid).toBeDefined();
    expect(commandOf(runnerPid!)).toMatch(/ runner$/);
    expect(descendants(runnerPid!).map(commandOf)).toEqual([]);
    const runnerLog = fs.readFileSync(path.join(host.home, 'logs', `${sent.sessionId}.log`), 'utf8');
    expect(runnerLog).toMatch(/MCP server pincer: \d+ tools/);

    stream.close();
    expect(await host.stop()).toBe(0);
    await waitFor('runner gone', () => !fs.existsSync(`/proc/${runnerPid}`) || commandOf(runnerPid!) === '(exited)');
  });
});
