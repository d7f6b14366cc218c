import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { getSessionValue, readRunnerState } from '../src/db/state.js';
import { claudeTestEnv, cleanUpClaudeRunsAfterEach, fakeAnthropic, startClaudeRunner } from './support/claude.js';
import { FIXTURES } from './support/media-fixtures.js';
import { startRunner } from './support/runner-harness.js';
import { createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The Claude provider end to end: the real `pincer runner` process, the real Claude Agent SDK and its Claude Code
 * binary, and the scripted fake Anthropic server on 127.0.0.1.
 */
cleanUpClaudeRunsAfterEach();

const ROUTING = { platformId: 'chat-42', channelType: 'terminal', threadId: 'thread-7' };

describe('pincer runner with the Claude provider', () => {
  it('answers a chat message with the model text, routed to the message, and records the session', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    fs.writeFileSync(path.join(session.paths.agent, 'CLAUDE.md'), 'You are Pincer test agent NUMBER-SEVEN.');
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake, { AGENT_PROVIDER: 'claude-code', ANTHROPIC_MODEL: 'claude-fake-model-9' }));
    fake.script({ text: 'Hello Alice!' });

    const { id } = session.chat('hi, who are you?', ROUTING);
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 20_000 });

    const [reply, ...rest] = session.outbound();
    expect(rest).toEqual([]);
    expect(JSON.parse(reply!.content)).toEqual({ text: 'Hello Alice!' });
    expect(reply).toMatchObject({ in_reply_to: id, platform_id: 'chat-42', channel_type: 'terminal', thread_id: 'thread-7' });
    const [request] = fake.modelRequests();
    expect(request!.system).toContain('NUMBER-SEVEN');
    expect(request!.body.model).toBe('claude-fake-model-9');
    expect(request!.lastUserText).toContain('hi, who are you?</message>');
    expect(request!.lastUserText).not.toContain('chat-42'); // routing never reaches the model
    expect(getSessionValue(session.db, 'claude:session_id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(getSessionValue(session.db, 'claude:resume_at')).toMatch(/^[0-9a-f-]{36}$/);
    expect(runner.stderr()).toContain('[runner] ready: provider claude (session policy ');
    expect(await runner.stop()).toBe(0);
  });

  it('pushes a follow-up that arrives while the turn runs into the same query', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    fake.script({ until: gate, then: { toolUse: { name: 'Bash', input: { command: 'echo checked' } } } }, { text: 'both answered' });

    const first = session.chat('first question');
    await waitFor('the first model request', () => fake.modelRequests().length === 1, { timeoutMs: 20_000 });
    const second = session.chat('second question, sent while the model thinks');
    await waitFor('the follow-up pushed', () => readRunnerState(session.db)?.batchIds.includes(second.id));
    release();

    await waitFor('both completed', () => [first.id, second.id].every((id) => session.inbound(id).status === 'completed'), { timeoutMs: 20_000 });
    const requests = fake.modelRequests();
    expect(requests).toHaveLength(2);
    expect(requests[1]!.allText).toContain('second question, sent while the model thinks');
    expect(requests[1]!.allText).toContain('checked'); // the Bash tool result of the same turn
    expect(session.outboundContents()).toEqual([{ text: 'both answered' }]);
    expect(await runner.stop()).toBe(0);
  });

  it('resumes the same Claude session after a runner restart, sending the earlier history', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const env = claudeTestEnv(fake);
    fake.script({ text: 'The secret word is PAPAYA.' }, { text: 'You asked about the secret word.' });

    const first = await startClaudeRunner(session.paths.root, env);
    const a = session.chat('remember a secret word for me');
    await waitFor('first answer', () => session.inbound(a.id).status === 'completed', { timeoutMs: 20_000 });
    const sessionId = getSessionValue(session.db, 'claude:session_id');
    expect(await first.stop()).toBe(0);

    const second = await startClaudeRunner(session.paths.root, env);
    const b = session.chat('what did I ask before?');
    await waitFor('second answer', () => session.inbound(b.id).status === 'completed', { timeoutMs: 20_000 });

    const resumed = fake.modelRequests()[1]!;
    expect(resumed.allText).toContain('remember a secret word for me');
    expect(resumed.allText).toContain('The secret word is PAPAYA.');
    expect(resumed.lastUserText).toContain('what did I ask before?');
    expect(getSessionValue(session.db, 'claude:session_id')).toBe(sessionId);
    expect(second.stderr()).toMatch(new RegExp(`resuming ${sessionId} at [0-9a-f-]{36}`));
    expect(second.stderr()).not.toContain('[claude] warn');
    expect(await second.stop()).toBe(0);
  });

  it('with PINCER_CLAUDE_PREWARM=1 answers the next query from a prewarmed process, resumed where the last ended', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake, { PINCER_CLAUDE_PREWARM: '1' }));
    fake.script({ text: 'first answer' }, { text: 'second answer' });

    const a = session.chat('first question');
    await waitFor('first answer', () => session.inbound(a.id).status === 'completed', { timeoutMs: 20_000 });
    const b = session.chat('second question');
    await waitFor('second answer', () => session.inbound(b.id).status === 'completed', { timeoutMs: 20_000 });

    expect(runner.stderr()).toMatch(/\[claude\] using the prewarmed Claude Code resuming [0-9a-f-]{36} at [0-9a-f-]{36}/);
    expect(fake.modelRequests()[1]!.allText).toContain('first answer');
    expect(session.outboundContents()).toEqual([{ text: 'first answer' }, { text: 'second answer' }]);
    expect(await runner.stop()).toBe(0);
  });

  it('runs Bash without the API key or other secrets in its environment', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const env = claudeTestEnv(fake, { PAYMENTS_API_TOKEN: 'tok-very-secret', HARMLESS_SETTING: 'visible-value' });
    const runner = await startClaudeRunner(session.paths.root, env);
    const probe = 'echo "key=${ANTHROPIC_API_KEY:-none} token=${PAYMENTS_API_TOKEN:-none} other=${HARMLESS_SETTING:-none}"';
    fake.script({ toolUse: { name: 'Bash', input: { command: probe } } }, { text: 'looked' });

    const { id } = session.chat('check your environment');
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 20_000 });

    const toolResult = fake.modelRequests()[1]!.lastUserText;
    expect(toolResult).toContain('key=none token=none other=visible-value');
    expect(fake.modelRequests()[1]!.allText).not.toContain(env.ANTHROPIC_API_KEY);
    expect(fake.requests[0]!.headers['x-api-key']).toBe(env.ANTHROPIC_API_KEY); // Claude Code itself still has it
    expect(await runner.stop()).toBe(0);
  });

  it('sends an image attachment to the model as a native image block', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    fake.script({ text: 'I see a one-pixel image.' });

    const { id } = session.insert({
      kind: 'chat',
      content: { text: 'what is this?', sender: 'alice', attachments: [{ type: 'image', name: 'dot.png', data: FIXTURES.png.toString('base64') }] },
    });
    await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 20_000 });

    const blocks = fake.modelRequests()[0]!.body.messages!.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
    expect(blocks.find((b) => b.type === 'image')?.source).toEqual({
      type: 'base64',
      media_type: 'image/png',
      data: FIXTURES.png.toString('base64'),
    });
    expect(fake.modelRequests()[0]!.lastUserText).toContain('what is this?');
    expect(session.outboundContents()).toEqual([{ text: 'I see a one-pixel image.' }]);
    expect(await runner.stop()).toBe(0);
  });
});

describe('Claude provider: compaction and configuration', () => {
  it('archives the conversation to agent/conversations before /compact compacts it', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    fake.script({ text: 'Noted: the launch is on Friday.' });
    const a = session.chat('the launch is on Friday, remember that');
    await waitFor('first answer', () => session.inbound(a.id).status === 'completed', { timeoutMs: 20_000 });

    fake.defaultText = 'Summary: the user said the launch is on Friday.';
    const compact = session.chat('/compact');
    await waitFor('compacted', () => session.inbound(compact.id).status === 'completed', { timeoutMs: 20_000 });

    const dir = path.join(session.paths.agent, 'conversations');
    const [file, ...others] = fs.readdirSync(dir);
    expect(others).toEqual([]);
    expect(file).toMatch(/^\d{4}-\d{2}-\d{2}-the-launch-is-on-friday-remember\.md$/);
    const archive = fs.readFileSync(path.join(dir, file!), 'utf8');
    expect(archive).toMatch(/## Prompt · [^\n]+\n\n`{3}text\n<context timezone="UTC"\/>[\s\S]*the launch is on Friday, remember that/);
    expect(archive).toMatch(/## Agent · [^\n]+\n\n`{3}text\nNoted: the launch is on Friday.\n`{3}/);
    expect(fake.modelRequests().at(-1)!.allText).toContain('the launch is on Friday'); // the summary request
    expect(session.outboundContents()).toEqual([{ text: 'Noted: the launch is on Friday.' }, { text: 'Conversation compacted.' }]);
    expect(session.outbound()[1]!.in_reply_to).toBe(compact.id);

    // the next query goes on from the compacted conversation, not from before it
    fake.script({ text: 'Still Friday.' });
    const b = session.chat('when is the launch?');
    await waitFor('answer after compaction', () => session.inbound(b.id).status === 'completed', { timeoutMs: 20_000 });
    const after = fake.modelRequests().at(-1)!;
    expect(after.lastUserText).toContain('when is the launch?');
    expect(after.allText).toContain('Summary: the user said the launch is on Friday.');
    expect(after.allText).not.toContain('Noted: the launch is on Friday.');
    expect(runner.stderr()).not.toContain('[claude] warn'); // resumed at the compacted conversation's last entry
    expect(await runner.stop()).toBe(0);
  });

  it('fails closed with one clear line when claude is configured without credentials', async () => {
    const session = createTestSession();
    const env = claudeTestEnv({ url: 'http://127.0.0.1:9' });
    delete env.ANTHROPIC_API_KEY;
    const runner = startRunner(session.paths.root, env);
    expect(await runner.exited).toBe(2);
    expect(
      runner
        .stderr()
        .trim()
        .replace(/^\S+Z /, ''),
    ).toBe(
      '[runner] error: provider "claude" (session policy "claude") has no credentials: set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_AUTH_TOKEN',
    );
  });

  it('fails closed with one clear line on a bad provider setting', async () => {
    const session = createTestSession();
    const runner = startRunner(session.paths.root, claudeTestEnv({ url: 'http://127.0.0.1:9' }, { PINCER_PROVIDER_TIMEOUT_MS: 'soon' }));
    expect(await runner.exited).toBe(2);
    expect(runner.stderr().trim()).toMatch(/^[0-9T:.Z-]+ \[runner\] error: provider "claude": bad environment: PINCER_PROVIDER_TIMEOUT_MS: [^\n]+$/);
  });

  it('is what auto picks when an API key is present', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake, { AGENT_PROVIDER: 'auto' }));
    expect(runner.stderr()).toContain('[runner] ready: provider claude (auto (session policy "auto"): first installed provider with credentials)');
    expect(await runner.stop()).toBe(0);
  });
});
