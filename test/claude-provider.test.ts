import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ClaudeProvider } from '../src/providers/claude/provider.js';
import type { ContentBlock, ProviderEvent, QueryInput } from '../src/providers/types.js';
import { claudeTestEnv, cleanupClaude, fakeAnthropic } from './support/claude.js';
import type { FakeAnthropic } from './support/fake-anthropic.js';

/**
 * The Claude provider in-process with the real SDK and Claude Code binary against the fake model server, for what
 * the runner cannot produce yet (content-block prompts) and for the provider's own deadline.
 */
const dirs: string[] = [];

afterEach(async () => {
  const left = await cleanupClaude();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  expect(left).toBe(0);
});

async function setUp(timeoutMs = 60_000): Promise<{ fake: FakeAnthropic; provider: ClaudeProvider; input: (prompt: QueryInput['prompt']) => QueryInput }> {
  const fake = await fakeAnthropic();
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-claude-cwd-'));
  dirs.push(cwd);
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...claudeTestEnv(fake) };
  const provider = new ClaudeProvider({ model: undefined, timeoutMs, prewarm: false });
  return { fake, provider, input: (prompt) => ({ prompt, cwd, env, mcpServers: {} }) };
}

async function collect(events: AsyncIterable<ProviderEvent>, onResult?: () => void): Promise<ProviderEvent[]> {
  const seen: ProviderEvent[] = [];
  for await (const event of events) {
    seen.push(event);
    if (event.type === 'result') onResult?.();
  }
  return seen;
}

// 1×1 transparent PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

describe('Claude provider (in-process, real SDK and binary, fake model server)', () => {
  it('sends content-block prompts as native image and document blocks', async () => {
    const { fake, provider, input } = await setUp();
    fake.script({ text: 'a tiny image' });
    const prompt: ContentBlock[] = [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: Buffer.from('%PDF-1.4 fake').toString('base64') } },
      { type: 'text', text: 'what is in the picture?' },
    ];
    const query = provider.query(input(prompt));
    const events = await collect(query.events, () => query.end());

    expect(events.filter((e) => e.type === 'result')).toEqual([
      { type: 'result', text: 'a tiny image', resumeAt: expect.any(String), usage: expect.objectContaining({ inputTokens: 10, outputTokens: 5 }) },
    ]);
    const [request] = fake.modelRequests();
    const blocks = request!.body.messages!.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
    expect(blocks.find((b) => b.type === 'image')?.source).toEqual({ type: 'base64', media_type: 'image/png', data: PNG });
    expect(blocks.find((b) => b.type === 'document')?.source?.media_type).toBe('application/pdf');
    expect(request!.lastUserText).toContain('what is in the picture?');
  });

  it('ends a query whose model never answers with one timeout error (PINCER_PROVIDER_TIMEOUT_MS)', async () => {
    const { fake, provider, input } = await setUp(1500);
    fake.script({ stall: true });
    const query = provider.query(input('hello?'));
    const events = await collect(query.events);

    expect(events.map((e) => e.type)).toEqual(['init', 'error']);
    expect(events[1]).toMatchObject({ type: 'error', classification: 'timeout', retryable: true });
    expect((events[1] as { message: string }).message).toMatch(/^the model did not answer within 1500 ms/);
    expect(fake.modelRequests()).toHaveLength(1);
  });

  it('turns an API error that Claude Code does not retry (an is_error result, then a throw) into exactly one error', async () => {
    const { fake, provider, input } = await setUp();
    fake.script({ status: 500, message: 'boom' });
    const extra = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-claude-extra-'));
    dirs.push(extra);
    const base = input('hello?');
    const query = provider.query({ ...base, env: { ...base.env, CLAUDE_CODE_MAX_RETRIES: '0' }, additionalDirectories: [extra] });
    const events = await collect(query.events);

    expect(events.map((e) => e.type)).toEqual(['init', 'error']);
    expect(events[1]).toMatchObject({ type: 'error', classification: 'server', retryable: true });
    expect((events[1] as { message: string }).message).toContain('API Error: 500');
    expect(fake.modelRequests()).toHaveLength(1);
    expect(JSON.stringify(fake.modelRequests()[0]!.body)).toContain(extra); // the additional directory is the agent's
  });

  it('starts a new conversation when the session to resume is gone from the config dir', async () => {
    const { fake, provider, input } = await setUp();
    fake.script({ text: 'hello again' });
    const lost = '3f0e7a36-1111-4222-8333-944455556666';
    const query = provider.query({ ...input('hello?'), sessionId: lost, resumeAt: '0b7c43a1-1111-4222-8333-944455556666' });
    const events = await collect(query.events, () => query.end());

    expect(events.map((e) => e.type)).toEqual(['init', 'result']);
    expect(events[0]).toMatchObject({ type: 'init', sessionId: expect.not.stringMatching(lost) });
    expect(events[1]).toMatchObject({ type: 'result', text: 'hello again' });
  });

  it('resumes from the end of the session when the stored resume point is no longer on its conversation', async () => {
    const { fake, provider, input } = await setUp();
    fake.script({ text: 'first answer' }, { text: 'second answer' });
    const first = provider.query(input('first question'));
    const firstEvents = await collect(first.events, () => first.end());
    const sessionId = (firstEvents[0] as { sessionId: string }).sessionId;

    const stale = '0b7c43a1-1111-4222-8333-944455556666';
    const second = provider.query({ ...input('second question'), sessionId, resumeAt: stale });
    const events = await collect(second.events, () => second.end());

    expect(events).toEqual([
      { type: 'init', sessionId },
      { type: 'result', text: 'second answer', resumeAt: expect.any(String), usage: expect.objectContaining({ inputTokens: 10, outputTokens: 5 }) },
    ]);
    expect(fake.modelRequests()[1]!.allText).toContain('first answer');
  });
});
