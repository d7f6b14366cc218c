import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startFakeOpenAI, unreachableBaseUrl, type FakeOpenAI } from './support/fake-openai.js';
import { toolNames } from './support/fake-openai-wire.js';
import { cleanUpProviderRunsAfterEach, providerSession, replies, SLOW } from './support/openai-provider-e2e.js';
import { holdStart, processesUsing } from './support/processes.js';
import { startRunner } from './support/runner-harness.js';
import type { TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The Codex provider end to end: the real `pincer runner` process, the real `codex` binary from @openai/codex-sdk,
 * and the scripted fake OpenAI-compatible server (Responses API) on 127.0.0.1.
 */
const codexSession = (): TestSession => providerSession('pincer-codex-');

function codexEnv(baseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    AGENT_PROVIDER: 'codex',
    OPENAI_BASE_URL: baseUrl,
    OPENAI_API_KEY: 'test-key',
    CODEX_MODEL: 'fake-model',
    CODEX_MAX_RETRIES: '0',
    PINCER_STOP_GRACE_MS: '500',
    ...extra,
  };
}

cleanUpProviderRunsAfterEach();

describe('codex provider', { timeout: 90_000 }, () => {
  let fake: FakeOpenAI;

  it('answers a chat message with the model text, passing the system prompt as developer instructions', async () => {
    fake = await startFakeOpenAI();
    fake.script({ text: 'hello from codex' });
    const session = codexSession();
    // A PATH without node_modules/.bin: the SDK finds the codex binary itself.
    const runner = startRunner(session.paths.root, codexEnv(fake.baseUrl, { PATH: '/usr/bin:/bin' }));
    await runner.ready();
    const { id } = session.chat('hi there');
    const [reply] = await waitFor('a reply', () => session.outbound().length > 0 && session.outbound(), SLOW);
    expect(JSON.parse(reply!.content).text).toBe('hello from codex');
    expect(reply!.in_reply_to).toBe(id);
    await waitFor('completed', () => session.inbound(id).status === 'completed');

    const [request] = fake.modelRequests();
    expect(request!.api).toBe('responses');
    expect(request!.userTexts.at(-1)).toContain('hi there</message>');
    expect(request!.systemTexts.join('\n')).toContain('You are Pincer-under-test.');
    const threadId = session.db.prepare("SELECT value FROM session_state WHERE key = 'codex:session_id'").get() as { value: string };
    expect(threadId.value).toMatch(/^[0-9a-f-]{36}$/);
    // Codex kept its thread inside the session folder, not in the user's home; the agent folder became a git
    // repository; the runner archived the conversation (Codex has no compaction hook).
    expect(fs.readdirSync(path.join(session.paths.root, '.codex'))).toContain('sessions');
    expect(fs.existsSync(path.join(session.paths.agent, '.git'))).toBe(true);
    const conversations = path.join(session.paths.agent, 'conversations');
    const archived = (): string =>
      fs.existsSync(conversations)
        ? fs
            .readdirSync(conversations)
            .map((f) => fs.readFileSync(path.join(conversations, f), 'utf8'))
            .join('')
        : '';
    await waitFor('the archived answer', () => archived().includes('hello from codex'));
    expect(await runner.stop()).toBe(0);
  });

  it("lets the model call Pincer's send_message, even when the MCP server is slow to start: the row carries the routing and in_reply_to, then the final text", async () => {
    fake = await startFakeOpenAI();
    fake.script({ tool: 'send_message', args: { text: 'working on it' } }, { text: 'all done' });
    const session = codexSession();
    const runner = startRunner(session.paths.root, codexEnv(fake.baseUrl));
    await runner.ready();
    // `pincer mcp` starting as on a machine under heavy load: Codex gives an optional MCP server about a second, then
    // starts the turn without its tools; Pincer's server is required, so the first request waits for it.
    const held = holdStart(session.paths.root, / mcp$/, 3000);
    const { id } = session.chat('do the thing', { platformId: 'chat-42', channelType: 'terminal', threadId: 'thread-7' });
    await held;
    // the last answer and the batch's completion are one transaction: every reply is there once it is completed
    await waitFor('completed', () => session.inbound(id).status === 'completed', SLOW);
    expect(session.outbound()).toHaveLength(2);
    const [progress, final] = session.outbound();
    expect(JSON.parse(progress!.content)).toEqual({ text: 'working on it' });
    expect(JSON.parse(final!.content)).toEqual({ text: 'all done' });
    for (const row of [progress!, final!]) {
      expect(row).toMatchObject({ in_reply_to: id, platform_id: 'chat-42', channel_type: 'terminal', thread_id: 'thread-7' });
    }
    expect(toolNames(fake.modelRequests()[0]!.body)).toContain('mcp__pincer/send_message');
    // The tool result went back to the model in the next request.
    expect(JSON.stringify(fake.modelRequests()[1]!.body)).toMatch(/Sent as message \d+/);
    expect(await runner.stop()).toBe(0);
  });

  it("never answers without Pincer's tools: an MCP server that cannot start fails the turn, nothing reaches the model", async () => {
    fake = await startFakeOpenAI();
    const session = codexSession();
    // a setting only the MCP server reads, so the runner starts and `pincer mcp` exits 2 at once
    const runner = startRunner(session.paths.root, codexEnv(fake.baseUrl, { PINCER_MAX_FILE_BYTES: 'lots' }));
    await runner.ready();
    const { id } = session.chat('hi there');
    await waitFor('the turn failed', () => session.inbound(id).last_error, SLOW);
    expect(session.inbound(id).last_error).toContain('required MCP servers failed to initialize: pincer');
    expect(session.inbound(id).status).toBe('processing'); // left for the host to retry
    expect(fake.requests).toEqual([]);
    expect(session.outbound()).toEqual([]);
    expect(await runner.stop()).toBe(0);
  });

  it('answers a follow-up pushed mid-turn in the same query (abort + restart on the same thread)', async () => {
    fake = await startFakeOpenAI();
    fake.script({ stall: true }, { text: (request) => `both: ${request.userTexts.filter((t) => t.includes('</message>')).length}` });
    const session = codexSession();
    const runner = startRunner(session.paths.root, codexEnv(fake.baseUrl));
    await runner.ready();
    const first = session.chat('first question');
    await waitFor('the first turn to stall', () => fake.stalled() === 1, SLOW);
    const second = session.chat('second question');
    await waitFor('a reply', () => session.outbound().length > 0, SLOW);
    await waitFor('both completed', () => session.inbound(second.id).status === 'completed' && session.inbound(first.id).status === 'completed');

    const requests = fake.modelRequests();
    expect(requests).toHaveLength(2);
    // The restarted turn carries the interrupted message in the thread history and the follow-up as the new input.
    expect(requests[1]!.userTexts.some((text) => text.includes('first question'))).toBe(true);
    expect(requests[1]!.userTexts.at(-1)).toContain('second question');
    expect(replies(session)).toEqual(['both: 2']);
    expect(await runner.stop()).toBe(0);
  });

  it('resumes the thread after a runner restart, sending the history to the server', async () => {
    fake = await startFakeOpenAI();
    const session = codexSession();
    let runner = startRunner(session.paths.root, codexEnv(fake.baseUrl));
    await runner.ready();
    session.chat('remember the word pelican');
    await waitFor('the first reply', () => session.outbound().length === 1, SLOW);
    const threadId = (session.db.prepare("SELECT value FROM session_state WHERE key = 'codex:session_id'").get() as { value: string }).value;
    expect(await runner.stop()).toBe(0);

    runner = startRunner(session.paths.root, codexEnv(fake.baseUrl));
    await runner.ready();
    session.chat('which word?');
    await waitFor('the second reply', () => session.outbound().length === 2, SLOW);
    const last = fake.modelRequests().at(-1)!;
    expect(last.userTexts.some((text) => text.includes('remember the word pelican'))).toBe(true);
    expect(last.userTexts.at(-1)).toContain('which word?');
    const after = (session.db.prepare("SELECT value FROM session_state WHERE key = 'codex:session_id'").get() as { value: string }).value;
    expect(after).toBe(threadId);
    expect(await runner.stop()).toBe(0);
  });

  it('turns an HTTP 500 into last_error, leaves the batch processing and keeps the runner alive', async () => {
    fake = await startFakeOpenAI();
    fake.script({ status: 500, message: 'the fake model is down' });
    const session = codexSession();
    const runner = startRunner(session.paths.root, codexEnv(fake.baseUrl));
    await runner.ready();
    const { id } = session.chat('will fail');
    const row = await waitFor('last_error', () => (session.inbound(id).last_error ? session.inbound(id) : null), SLOW);
    expect(row.status).toBe('processing');
    // Codex words a 5xx its own way ("We're currently experiencing high demand…"); classified as an API error.
    expect(row.last_error).toMatch(/^api error: /);
    expect(session.outbound()).toHaveLength(0);

    // Still alive: the next message is answered.
    const next = session.chat('are you there?');
    await waitFor('the next reply', () => session.outbound().length === 1, SLOW);
    expect(session.outbound()[0]!.in_reply_to).toBe(next.id);
    expect(await runner.stop()).toBe(0);
  });

  it.each([
    ['an unreachable server', async () => ({ baseUrl: await unreachableBaseUrl(), fake: null })],
    [
      'a stalled stream',
      async () => {
        const server = await startFakeOpenAI();
        server.setDefault({ stall: true });
        return { baseUrl: server.baseUrl, fake: server };
      },
    ],
  ])('reports %s as an error after the provider deadline', async (_name, setup) => {
    const { baseUrl } = await setup();
    const session = codexSession();
    // Codex's own retries are left on: the provider deadline must end the wait.
    const runner = startRunner(session.paths.root, codexEnv(baseUrl, { PINCER_PROVIDER_TIMEOUT_MS: '2000', CODEX_MAX_RETRIES: '' }));
    await runner.ready();
    const { id } = session.chat('anyone?');
    const row = await waitFor('last_error', () => (session.inbound(id).last_error ? session.inbound(id) : null), SLOW);
    expect(row.status).toBe('processing');
    expect(row.last_error).toMatch(/transport error|no answer from the model server/);
    expect(runner.child.exitCode).toBeNull();
    expect(await runner.stop()).toBe(0);
  });

  it('stops a turn in flight on shutdown and leaves no child process behind', async () => {
    fake = await startFakeOpenAI();
    fake.setDefault({ stall: true });
    const session = codexSession();
    const runner = startRunner(session.paths.root, codexEnv(fake.baseUrl));
    await runner.ready();
    const { id } = session.chat('take your time');
    await waitFor('the turn to stall', () => fake.stalled() === 1, SLOW);
    expect(processesUsing(session.paths.root).some((p) => /codex/.test(p.command))).toBe(true);
    expect(await runner.stop()).toBe(0);
    expect(session.inbound(id).last_error).toMatch(/runner stopped/);
    await waitFor('the stalled stream to close', () => fake.stalled() === 0);
    expect(processesUsing(session.paths.root)).toEqual([]);
  });
});
