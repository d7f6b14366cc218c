import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { onPath } from './support/dockerd.js';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { runPipedChat } from './support/chat-process.js';

/**
 * `AGENT_PROVIDER=pincer PINCER_MODEL=… pincer chat` through the whole system: the in-process host with the
 * terminal channel, a runner child process on the built-in runtime, its `pincer mcp` child, and a fake model server
 * (any OpenAI-compatible server for `local/…`, the Anthropic Messages API for `anthropic/…`). With bubblewrap installed
 * (the default runner then) each case also runs in a sandbox without a network of its own: the model server is reached
 * through the host's credential proxy, a keyless local server included.
 */
const MODES = onPath('bwrap') ? ['process', 'bwrap'] : ['process'];
if (MODES.length === 1) console.warn('[pincer] bubblewrap is not installed: the built-in runtime chat runs with process runners only');
const anthropicFakes: FakeAnthropic[] = [];

afterEach(async () => {
  await closeFakeOpenAIs();
  await Promise.all(anthropicFakes.splice(0).map((fake) => fake.close()));
});

const cases = [
  {
    name: 'local/<model> on an OpenAI-compatible server',
    start: async () => {
      const fake = await startFakeOpenAI();
      fake.script({ call: 'mcp__pincer__send_message', args: { text: 'Looking…' } }, { text: 'Hello from a local model.' });
      return { env: { PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl }, asked: () => fake.modelRequests()[0]!.userTexts.join('\n') };
    },
    answer: 'Hello from a local model.',
  },
  {
    name: 'anthropic/<model> on the Messages API',
    start: async () => {
      const fake = await startFakeAnthropic();
      anthropicFakes.push(fake);
      fake.script({ toolUse: { name: 'mcp__pincer__send_message', input: { text: 'Looking…' } } }, { text: 'Hello from Claude, no binary.' });
      return {
        env: { PINCER_MODEL: 'anthropic/claude-sonnet-4-5', ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: 'test-key' },
        asked: () => fake.modelRequests()[0]!.lastUserText,
      };
    },
    answer: 'Hello from Claude, no binary.',
  },
];

describe('pincer chat on the built-in runtime', { timeout: 90_000 }, () => {
  const table = MODES.flatMap((runner) => cases.map((c) => ({ ...c, runner })));
  it.each(table)('answers piped input with $name ($runner runner), then exits', async ({ start, answer, runner }) => {
    const { env, asked } = await start();
    const chat = await runPipedChat([], { AGENT_PROVIDER: 'pincer', PINCER_RUNNER: runner, PINCER_MODEL_MAX_RETRIES: '0', ...env }, 'hi there\n');
    try {
      expect(chat.code).toBe(0);
      // the terminal is the conversation's: every log line (the sandbox launcher's too) goes to the home's host.log
      expect(chat.stderr).toBe('');
      if (runner === 'bwrap') expect(fs.readFileSync(path.join(chat.home, 'host.log'), 'utf8')).toContain('[container] started bwrap runner');
      expect(chat.stdout).toContain('Looking…');
      expect(chat.stdout).toContain(answer);
      expect(asked()).toContain('hi there</message>');
      // The runner ran the built-in runtime: its conversation is in the chat session's folder.
      expect(fs.readdirSync(path.join(chat.home, 'sessions', 'chat', '.pincer-sessions'))).toHaveLength(1);
    } finally {
      chat.cleanup();
    }
  });
});
