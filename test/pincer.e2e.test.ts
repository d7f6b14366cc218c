import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { closeFakeOpenAIs, startFakeOpenAI, type FakeOpenAI } from './support/fake-openai.js';
import { toolNames } from './support/fake-openai-wire.js';
import { reapSessionProcesses, type SessionProcess } from './support/processes.js';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The built-in runtime (provider `pincer`) end to end: the real `pincer runner` process running pi-agent-core's loop,
 * the real `pincer mcp` server through the official MCP client, and the scripted fake model servers on 127.0.0.1 —
 * Anthropic Messages, OpenAI Responses and Chat Completions, all streaming.
 */
const SLOW = { timeoutMs: 30_000 };
const sessions: TestSession[] = [];
const anthropicFakes: FakeAnthropic[] = [];

function pincerSession(): TestSession {
  const session = createTestSession('pincer-builtin-');
  fs.writeFileSync(path.join(session.paths.agent, 'CLAUDE.md'), 'You are Pincer-under-test.');
  sessions.push(session);
  return session;
}

async function fakeAnthropic(): Promise<FakeAnthropic> {
  const fake = await startFakeAnthropic();
  anthropicFakes.push(fake);
  return fake;
}

const base = { AGENT_PROVIDER: 'pincer', PINCER_MODEL_MAX_RETRIES: '0', PINCER_STOP_GRACE_MS: '300' };
const anthropicEnv = (fake: FakeAnthropic, extra: Record<string, string> = {}): Record<string, string> => ({
  ...base,
  PINCER_MODEL: 'anthropic/claude-sonnet-4-5',
  ANTHROPIC_BASE_URL: fake.url,
  ANTHROPIC_API_KEY: 'test-anthropic-key',
  ...extra,
});
const localEnv = (fake: FakeOpenAI, extra: Record<string, string> = {}): Record<string, string> => ({
  ...base,
  PINCER_MODEL: 'local/qwen3:8b',
  OPENAI_BASE_URL: fake.baseUrl,
  ...extra,
});

const texts = (session: TestSession): string[] => session.outboundContents().map((content) => String(content.text));

afterEach(async () => {
  const runnersLeft = await stopAllRunners();
  const processesLeft: SessionProcess[] = [];
  for (const session of sessions.splice(0)) processesLeft.push(...(await reapSessionProcesses(session.paths.root)));
  await closeFakeOpenAIs();
  await Promise.all(anthropicFakes.splice(0).map((fake) => fake.close()));
  cleanupSessions();
  expect(runnersLeft).toBe(0);
  expect(processesLeft).toEqual([]);
});

/** One route: start its fake, script "call send_message, then answer", and read what the model was offered. */
interface Route {
  name: string;
  start(session: TestSession): Promise<{ env: Record<string, string>; requests: () => { tools: string[]; text: string }[] }>;
}

const routes: Route[] = [
  {
    name: 'Anthropic Messages',
    start: async () => {
      const fake = await fakeAnthropic();
      fake.script({ toolUse: { name: 'mcp__pincer__send_message', input: { text: 'working on it' } } }, { text: 'all done' });
      return { env: anthropicEnv(fake), requests: () => fake.modelRequests().map((r) => ({ tools: r.toolNames, text: `${r.system}\n${r.allText}` })) };
    },
  },
  {
    name: 'OpenAI Responses',
    start: async (session) => {
      const fake = await startFakeOpenAI();
      fake.script({ call: 'mcp__pincer__send_message', args: { text: 'working on it' } }, { text: 'all done' });
      // A custom endpoint speaks Chat Completions unless the model entry says otherwise.
      fs.writeFileSync(session.paths.config, JSON.stringify({ models: { 'openai/gpt-5': { api: 'openai-responses' } } }));
      const requests = () =>
        fake.modelRequests().map((r) => {
          expect(r.api).toBe('responses');
          return { tools: toolNames(r.body), text: JSON.stringify(r.body) };
        });
      return { env: { ...base, PINCER_MODEL: 'openai/gpt-5', OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test-openai-key' }, requests };
    },
  },
  {
    name: 'Chat Completions (local server)',
    start: async () => {
      const fake = await startFakeOpenAI();
      fake.script({ call: 'mcp__pincer__send_message', args: { text: 'working on it' } }, { text: 'all done' });
      const requests = () =>
        fake.modelRequests().map((r) => {
          expect(r.api).toBe('chat');
          return { tools: toolNames(r.body), text: JSON.stringify(r.body) };
        });
      return { env: localEnv(fake), requests };
    },
  },
];

describe('built-in runtime (provider pincer)', { timeout: 60_000 }, () => {
  it.each(routes)('$name: a turn that calls mcp__pincer__send_message and then answers', async (route) => {
    const session = pincerSession();
    const { env, requests } = await route.start(session);
    const runner = startRunner(session.paths.root, env);
    await runner.ready(SLOW.timeoutMs);
    const { id } = session.chat('please report back');
    await waitFor('both messages', () => session.outbound().length >= 2, SLOW);
    expect(texts(session)).toEqual(['working on it', 'all done']);
    expect(session.outbound().every((row) => row.in_reply_to === id)).toBe(true);
    await waitFor('completed', () => session.inbound(id).status === 'completed');

    const [first, second] = requests();
    // Pincer's MCP tools first-class beside the built-in ones, named as Claude names them.
    expect(first!.tools).toEqual(expect.arrayContaining(['read', 'write', 'edit', 'bash', 'mcp__pincer__send_message', 'mcp__pincer__schedule_task']));
    expect(first!.text).toContain('You are Pincer-under-test.');
    expect(first!.text).toContain('please report back');
    // The tool's result went back to the model.
    expect(second!.text).toMatch(/sent|message/i);
    // The turn's usage reached the session DB with the answer.
    const usage = session.db.prepare('SELECT provider, input_tokens, output_tokens FROM turn_usage').all() as { provider: string; input_tokens: number }[];
    expect(usage).toHaveLength(1);
    expect(usage[0]!.provider).toBe('pincer');
    expect(usage[0]!.input_tokens).toBeGreaterThan(0);
    expect(runner.stderr()).toMatch(/\[runner\] provider pincer: session policy "pincer"/);
    expect(await runner.stop()).toBe(0);
  });

  it('runs bash in the agent folder without secrets, and keeps file tools inside it', async () => {
    const fake = await fakeAnthropic();
    fake.script(
      { toolUse: { name: 'bash', input: { command: 'pwd; echo "key=[$ANTHROPIC_API_KEY]"; echo hi > made-by-bash.txt' } } },
      { toolUse: { name: 'read', input: { path: '../config.json' } } },
      { text: 'done' },
    );
    const session = pincerSession();
    const runner = startRunner(session.paths.root, anthropicEnv(fake));
    await runner.ready(SLOW.timeoutMs);
    session.chat('run a command');
    await waitFor('the answer', () => texts(session).includes('done'), SLOW);
    const [, afterBash, afterRead] = fake.modelRequests();
    expect(afterBash!.lastUserText).toContain(fs.realpathSync(session.paths.agent));
    expect(afterBash!.lastUserText).toContain('key=[]');
    expect(afterBash!.lastUserText).toContain('[exit code 0]');
    expect(fs.readFileSync(path.join(session.paths.agent, 'made-by-bash.txt'), 'utf8')).toBe('hi\n');
    expect(afterRead!.lastUserText).toContain('../config.json is outside the agent folder');
    // Anthropic's catalogue prices the model: the cost is on the turn's usage.
    const usage = session.db.prepare('SELECT model, cost_usd FROM turn_usage').get() as { model: string; cost_usd: number };
    expect(usage.model).toBe('claude-sonnet-4-5');
    expect(usage.cost_usd).toBeGreaterThan(0);
    expect(await runner.stop()).toBe(0);
  });

  it('resumes the conversation after a runner restart', async () => {
    const fake = await startFakeOpenAI();
    const session = pincerSession();
    const first = startRunner(session.paths.root, localEnv(fake));
    await first.ready(SLOW.timeoutMs);
    session.chat('remember the word PELICAN');
    await waitFor('the first answer', () => session.outbound().length === 1, SLOW);
    expect(await first.stop()).toBe(0);
    const stored = session.db.prepare("SELECT value FROM session_state WHERE key = 'pincer:session_id'").get() as { value: string };
    expect(fs.existsSync(path.join(session.paths.root, '.pincer-sessions', `${stored.value}.jsonl`))).toBe(true);

    const second = startRunner(session.paths.root, localEnv(fake));
    await second.ready(SLOW.timeoutMs);
    session.chat('which word?');
    await waitFor('the second answer', () => session.outbound().length === 2, SLOW);
    const request = fake.modelRequests().at(-1)!;
    expect(request.userTexts.join('\n')).toContain('remember the word PELICAN');
    expect(request.userTexts.at(-1)).toContain('which word?');
    expect(second.stderr()).toContain(`resuming conversation ${stored.value}`);
    expect(await second.stop()).toBe(0);
  });

  it('pushes a follow-up into the running loop', async () => {
    const fake = await fakeAnthropic();
    let release!: () => void;
    fake.script({ until: new Promise<void>((resolve) => (release = resolve)), then: { text: 'first answer' } }, { text: 'second answer' });
    const session = pincerSession();
    const runner = startRunner(session.paths.root, anthropicEnv(fake));
    await runner.ready(SLOW.timeoutMs);
    const one = session.chat('first question');
    await waitFor('the model working on it', () => fake.modelRequests().length === 1, SLOW);
    const two = session.chat('second question');
    await waitFor('the push', () => runner.stderr().includes('pushed 1 follow-up message'), SLOW);
    release();
    await waitFor('both answers', () => session.outbound().length === 2, SLOW);
    expect(texts(session)).toEqual(['first answer', 'second answer']);
    // One query: the follow-up reached the model in the same loop, after the first answer, with the history.
    const second = fake.modelRequests()[1]!;
    expect(second.lastUserText).toContain('second question');
    expect(second.allText).toContain('first answer');
    await waitFor('both completed', () => [one, two].every(({ id }) => session.inbound(id).status === 'completed'));
    expect(runner.stderr().match(/picked \d+ message/g)).toHaveLength(1);
    expect(await runner.stop()).toBe(0);
  });

  it('compacts near a small context window, archiving the transcript, and resumes from the summary', async () => {
    const fake = await fakeAnthropic();
    fake.script({ text: 'noted one' }, { text: 'SUMMARY: the user sent MARKER notes' }, { text: 'noted two' }, { text: 'noted three' });
    const session = pincerSession();
    const env = anthropicEnv(fake, { PINCER_CONTEXT_WINDOW: '400' });
    const runner = startRunner(session.paths.root, env);
    await runner.ready(SLOW.timeoutMs);
    const note = (tag: string): string => `${tag} ${'lorem ipsum dolor sit amet '.repeat(25)}`;
    session.chat(note('MARKER-ONE'));
    await waitFor('the first answer', () => session.outbound().length === 1, SLOW);
    session.chat(note('MARKER-TWO'));
    await waitFor('the second answer', () => session.outbound().length === 2, SLOW);
    expect(texts(session)).toEqual(['noted one', 'noted two']);

    const [, summaryRequest, afterCompaction] = fake.modelRequests();
    expect(summaryRequest!.toolNames).toEqual([]);
    expect(summaryRequest!.allText).toContain('MARKER-ONE');
    expect(afterCompaction!.allText).toContain('SUMMARY: the user sent MARKER notes');
    expect(afterCompaction!.allText).not.toContain('MARKER-ONE');
    expect(afterCompaction!.lastUserText).toContain('MARKER-TWO');
    expect(runner.stderr()).toMatch(/\[pincer\] compacted 2 messages .* window 400/);
    // The compacted part was archived like Claude's PreCompact transcript.
    const conversations = path.join(session.paths.agent, 'conversations');
    const archived = fs
      .readdirSync(conversations)
      .map((f) => fs.readFileSync(path.join(conversations, f), 'utf8'))
      .join('');
    expect(archived).toContain('MARKER-ONE');
    expect(await runner.stop()).toBe(0);

    // A restarted runner continues from the summary, not from the compacted messages.
    const again = startRunner(session.paths.root, env);
    await again.ready(SLOW.timeoutMs);
    session.chat('and now?');
    await waitFor('the third answer', () => session.outbound().length === 3, SLOW);
    const resumed = fake.modelRequests().at(-1)!;
    expect(resumed.allText).toContain('SUMMARY: the user sent MARKER notes');
    expect(resumed.allText).not.toContain('MARKER-ONE');
    expect(await again.stop()).toBe(0);
  });

  it('aborts a running turn on SIGTERM: the stream is closed and the message stays for a retry', async () => {
    const fake = await startFakeOpenAI();
    fake.script({ stall: true });
    const session = pincerSession();
    const runner = startRunner(session.paths.root, localEnv(fake));
    await runner.ready(SLOW.timeoutMs);
    const { id } = session.chat('this will hang');
    await waitFor('a stalled stream', () => fake.stalled() === 1, SLOW);
    expect(await runner.stop()).toBe(0);
    await waitFor('the stream closed', () => fake.stalled() === 0);
    const row = session.inbound(id);
    expect(row.status).toBe('processing');
    expect(row.last_error).toBe('runner stopped before the answer was complete');
    expect(session.outbound()).toEqual([]);
  });

  it('an API error leaves the batch for a retry with a classified error, never another runtime', async () => {
    const fake = await fakeAnthropic();
    fake.script({ status: 401, message: 'invalid x-api-key' });
    const session = pincerSession();
    const runner = startRunner(session.paths.root, anthropicEnv(fake));
    await runner.ready(SLOW.timeoutMs);
    const { id } = session.chat('hello?');
    await waitFor('the error recorded', () => session.inbound(id).last_error, SLOW);
    expect(session.inbound(id).last_error).toMatch(/^auth error: .*401.*invalid x-api-key/);
    expect(session.inbound(id).status).toBe('processing');
    const state = session.db.prepare('SELECT provider FROM runner_state').get() as { provider: string };
    expect(state.provider).toBe('pincer');
    expect(await runner.stop()).toBe(0);
  });
});

describe('built-in runtime start-up errors', () => {
  it.each([
    {
      case: 'no model',
      env: { PINCER_MODEL: '' },
      line: /^[0-9T:.Z-]+ \[runner\] error: provider "pincer" \(session policy "pincer"\) has no model: set PINCER_MODEL=<provider>\/<model>/,
    },
    {
      case: 'a model without a provider',
      env: { PINCER_MODEL: 'qwen3' },
      line: /^[0-9T:.Z-]+ \[runner\] error: pincer: model "qwen3" needs a provider prefix/,
    },
    {
      case: 'a local model without a server',
      env: { PINCER_MODEL: 'local/qwen3' },
      line: /^[0-9T:.Z-]+ \[runner\] error: provider "pincer" \(session policy "pincer"\): model "local\/qwen3": local models need OPENAI_BASE_URL/,
    },
    {
      case: 'an official endpoint without a key',
      env: { PINCER_MODEL: 'anthropic/claude-sonnet-4-5' },
      line: /^[0-9T:.Z-]+ \[runner\] error: provider "pincer" \(session policy "pincer"\) has no credentials: set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN$/,
    },
    {
      case: 'plaintext HTTP to an official endpoint',
      env: { PINCER_MODEL: 'openai/gpt-5', OPENAI_BASE_URL: 'http://api.openai.com/v1', OPENAI_API_KEY: 'k' },
      line: /refusing plaintext HTTP to the official endpoint api\.openai\.com; use https:\/\/api\.openai\.com/,
    },
  ])('exits 2 with one clear line for $case, losing no message', ({ env, line }) => {
    const session = createTestSession();
    const { id } = session.chat('keep me');
    const result = spawnSync(process.execPath, [BUILT_CLI, 'runner'], {
      env: { PATH: process.env.PATH, TZ: 'UTC', PINCER_WORKSPACE: session.paths.root, AGENT_PROVIDER: 'pincer', ...env },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
    expect(session.inbound(id).status).toBe('pending');
  });
});
