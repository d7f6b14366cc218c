import { describe, expect, it } from 'vitest';
import { startFakeOpenAI, unreachableBaseUrl, type FakeOpenAI } from './support/fake-openai.js';
import { toolNames } from './support/fake-openai-wire.js';
import { cleanUpProviderRunsAfterEach, providerSession, replies, SLOW } from './support/openai-provider-e2e.js';
import { processesUsing } from './support/processes.js';
import { startRunner } from './support/runner-harness.js';
import type { TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The OpenCode provider end to end: the real `pincer runner` process, the real `opencode` server from opencode-ai,
 * and the scripted fake OpenAI-compatible server (Chat Completions) on 127.0.0.1. The server starts in seconds, so
 * waits here are generous.
 */
const openCodeSession = (): TestSession => providerSession('pincer-opencode-');

function openCodeEnv(baseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    AGENT_PROVIDER: 'opencode',
    OPENCODE_BASE_URL: baseUrl,
    OPENCODE_API_KEY: 'test-key',
    OPENCODE_MODEL: 'fake-model',
    PINCER_STOP_GRACE_MS: '500',
    ...extra,
  };
}

const storedSession = (session: TestSession): string | undefined =>
  (session.db.prepare("SELECT value FROM session_state WHERE key = 'opencode:session_id'").get() as { value: string } | undefined)?.value;

cleanUpProviderRunsAfterEach();

describe('opencode provider', { timeout: 90_000 }, () => {
  let fake: FakeOpenAI;

  // One runner for two queries: OpenCode's server start dominates these tests, and the second query proves it is reused.
  it('answers with the model text (system prompt first, title request answered), then a send_message call with routing, on one server', async () => {
    fake = await startFakeOpenAI();
    fake.script({ text: 'hello from opencode' }, { tool: 'send_message', args: { text: 'working on it' } }, { text: 'all done' });
    const session = openCodeSession();
    // A PATH without node_modules/.bin: the provider finds the opencode binary itself.
    const runner = startRunner(session.paths.root, openCodeEnv(fake.baseUrl, { PATH: '/usr/bin:/bin' }));
    await runner.ready();
    const first = session.chat('hi there');
    const [reply] = await waitFor('a reply', () => session.outbound().length > 0 && session.outbound(), SLOW);
    expect(JSON.parse(reply!.content).text).toBe('hello from opencode');
    expect(reply!.in_reply_to).toBe(first.id);
    await waitFor('completed', () => session.inbound(first.id).status === 'completed');

    const [request] = fake.modelRequests();
    expect(request!.api).toBe('chat');
    const prompt = request!.userTexts.at(-1)!;
    expect(prompt).toMatch(/^<system>\n[^]*You are Pincer-under-test\.[^]*\n<\/system>\n\n/);
    expect(prompt).toContain('hi there</message>');
    expect(toolNames(request!.body)).toContain('pincer_send_message');
    expect(fake.requests.some((r) => r.title)).toBe(true);
    expect(storedSession(session)).toMatch(/^ses_/);

    // The model calls Pincer's send_message: the row carries the batch's routing and in_reply_to, then the final text.
    const { id } = session.chat('do the thing', { platformId: 'chat-42', channelType: 'terminal', threadId: 'thread-7' });
    await waitFor('two more replies', () => session.outbound().length === 3, SLOW);
    const [, progress, final] = session.outbound();
    expect(JSON.parse(progress!.content)).toEqual({ text: 'working on it' });
    expect(JSON.parse(final!.content)).toEqual({ text: 'all done' });
    for (const row of [progress!, final!]) {
      expect(row).toMatchObject({ in_reply_to: id, platform_id: 'chat-42', channel_type: 'terminal', thread_id: 'thread-7' });
    }
    await waitFor('completed', () => session.inbound(id).status === 'completed');
    // The tool result went back to the model; the second query ran on the same server and session (history).
    const last = fake.modelRequests().at(-1)!;
    expect(JSON.stringify(last.body)).toMatch(/Sent as message \d+/);
    expect(last.userTexts.some((text) => text.includes('hi there'))).toBe(true);
    expect(runner.stderr().match(/\[opencode\] server http:\/\/127\.0\.0\.1:\d+ \(pid \d+\) ready in \d+ ms/g)).toHaveLength(1);
    expect(await runner.stop()).toBe(0);
  });

  it('answers a follow-up pushed mid-turn in the same query (abort + re-prompt)', async () => {
    fake = await startFakeOpenAI();
    fake.script({ stall: true }, { text: (request) => `both: ${request.userTexts.filter((t) => t.includes('</message>')).length}` });
    const session = openCodeSession();
    const runner = startRunner(session.paths.root, openCodeEnv(fake.baseUrl));
    await runner.ready();
    const first = session.chat('first question');
    await waitFor('the first turn to stall', () => fake.stalled() === 1, SLOW);
    const second = session.chat('second question');
    await waitFor('a reply', () => session.outbound().length > 0, SLOW);
    await waitFor('both completed', () => session.inbound(second.id).status === 'completed' && session.inbound(first.id).status === 'completed');

    const requests = fake.modelRequests();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.userTexts.some((text) => text.includes('first question'))).toBe(true);
    expect(requests[1]!.userTexts.at(-1)).toContain('second question');
    expect(replies(session)).toEqual(['both: 2']);
    expect(await runner.stop()).toBe(0);
  });

  it('resumes the session after the runner was killed (SIGKILL), sending the history to the server', async () => {
    fake = await startFakeOpenAI();
    const session = openCodeSession();
    let runner = startRunner(session.paths.root, openCodeEnv(fake.baseUrl));
    await runner.ready();
    const first = session.chat('remember the word pelican');
    await waitFor('the first reply', () => session.outbound().length === 1, SLOW);
    await waitFor('completed', () => session.inbound(first.id).status === 'completed');
    const sessionId = storedSession(session);
    expect(await runner.kill('SIGKILL')).toBe('SIGKILL');
    // The server's guard notices the runner is gone and takes the server and its MCP servers down with it.
    await waitFor('the orphaned server to go', () => processesUsing(session.paths.root).length === 0);

    runner = startRunner(session.paths.root, openCodeEnv(fake.baseUrl));
    await runner.ready();
    session.chat('which word?');
    await waitFor('the second reply', () => session.outbound().length === 2, SLOW);
    const last = fake.modelRequests().at(-1)!;
    expect(last.userTexts.some((text) => text.includes('remember the word pelican'))).toBe(true);
    expect(last.userTexts.at(-1)).toContain('which word?');
    expect(storedSession(session)).toBe(sessionId);
    expect(await runner.stop()).toBe(0);
  });

  it('turns a non-retryable HTTP 400 (session.error APIError) into last_error and answers the next message', async () => {
    fake = await startFakeOpenAI();
    fake.setDefault({ status: 400, message: 'the fake model refuses' });
    const session = openCodeSession();
    const runner = startRunner(session.paths.root, openCodeEnv(fake.baseUrl));
    await runner.ready();
    const { id } = session.chat('bad request');
    const row = await waitFor('last_error', () => (session.inbound(id).last_error ? session.inbound(id) : null), SLOW);
    expect(row.status).toBe('processing');
    expect(row.last_error).toMatch(/^api error: HTTP 400: .*the fake model refuses/);

    // The error stopped the server (abort); the runner lives on, and the next message starts a new one.
    fake.setDefault({ text: 'back again' });
    const next = session.chat('try again');
    await waitFor('the next reply', () => session.outbound().length === 1, SLOW);
    expect(session.outbound()[0]!.in_reply_to).toBe(next.id);
    expect(runner.stderr().match(/\[opencode\] server .* ready in/g)).toHaveLength(2);
    expect(await runner.stop()).toBe(0);
  });

  it.each([
    ['HTTP 500 from the server', false],
    ['an unreachable server', true],
  ])('reports %s as an error with last_error and keeps the runner alive', async (_name, unreachable) => {
    let fake: FakeOpenAI | null = null;
    if (!unreachable) {
      fake = await startFakeOpenAI();
      fake.setDefault({ status: 500, message: 'the fake model is down' });
    }
    const baseUrl = fake ? fake.baseUrl : await unreachableBaseUrl();
    const session = openCodeSession();
    const runner = startRunner(session.paths.root, openCodeEnv(baseUrl, { PINCER_PROVIDER_TIMEOUT_MS: '3000' }));
    await runner.ready();
    const { id } = session.chat('anyone?');
    const row = await waitFor('last_error', () => (session.inbound(id).last_error ? session.inbound(id) : null), SLOW);
    expect(row.status).toBe('processing');
    expect(row.last_error).toMatch(/^(transport|api) error: /);
    // The deadline counts from the model request on, not from OpenCode's start-up: the request was made (and failed).
    expect(row.last_error).toMatch(unreachable ? /\(Cannot connect.*\)$/ : /\(the fake model is down\)$/);
    if (!unreachable) expect(fake!.modelRequests().length).toBeGreaterThan(0);
    expect(runner.child.exitCode).toBeNull();
    // The error closed the server (abort); nothing of it is left, and the runner goes on.
    await waitFor('the server to be gone', () => !processesUsing(session.paths.root).some((p) => /opencode/.test(p.command)));
    expect(await runner.stop()).toBe(0);
  });

  it('stops a turn in flight on shutdown and leaves no child process behind', async () => {
    fake = await startFakeOpenAI();
    fake.setDefault({ stall: true });
    const session = openCodeSession();
    const runner = startRunner(session.paths.root, openCodeEnv(fake.baseUrl));
    await runner.ready();
    const { id } = session.chat('take your time');
    await waitFor('the turn to stall', () => fake.stalled() === 1, SLOW);
    expect(processesUsing(session.paths.root).some((p) => /opencode/.test(p.command))).toBe(true);
    expect(await runner.stop()).toBe(0);
    expect(session.inbound(id).last_error).toMatch(/runner stopped/);
    expect(processesUsing(session.paths.root)).toEqual([]);
  });
});
