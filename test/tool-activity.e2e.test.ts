import { afterEach, describe, expect, it } from 'vitest';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';

/**
 * Tool progress through a real host: the built-in runtime in a runner child process runs the tools a scripted model
 * calls; the runner records each call in the session database (tool_activity) and the host streams it to the
 * conversation's SSE clients as `tool` events — running, then done or failed — before the answer. An argument with
 * escape sequences arrives cleaned.
 */
afterEach(async () => {
  await closeFakeOpenAIs();
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('tool activity', { timeout: 120_000 }, () => {
  it('streams each tool call of a turn as it starts and ends, cleaned, before the answer', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'bash', args: { command: 'echo \x1b[2Jhello && sleep 1' } },
      { call: 'read', args: { path: 'no-such-file.txt' } },
      { text: 'tools ran' },
    );
    const host = await startHost({ AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' });
    const stream = host.stream('tools');
    expect((await host.request('POST', '/v1/conversations/tools/messages', { text: 'run them' })).status).toBe(202);
    const answer = await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'tools ran', 90_000);
    const tools = stream.events.filter((e) => e.event === 'tool').map((e) => e.data);
    expect(tools.map((t) => [t.name, t.status])).toEqual([
      ['bash', 'running'],
      ['bash', 'ok'],
      ['read', 'running'],
      ['read', 'error'],
    ]);
    expect(tools[0]).toMatchObject({ type: 'tool', preview: 'echo hello && sleep 1', endedAt: null, threadId: null });
    expect(tools[1]!.id).toBe(tools[0]!.id);
    expect(typeof tools[1]!.durationMs).toBe('number');
    expect(tools[3]).toMatchObject({ preview: 'no-such-file.txt' });
    // every tool event came before the answer
    expect(stream.events.indexOf(answer)).toBeGreaterThan(stream.events.findLastIndex((e) => e.event === 'tool'));
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
