import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * `AGENT_PROVIDER=pincer PINCER_MODEL=… npx pincer chat` through the whole system: the in-process host with the
 * terminal channel, a runner child process on the built-in runtime, its `pincer mcp` child, and a fake model server
 * (any OpenAI-compatible server for `local/…`, the Anthropic Messages API for `anthropic/…`).
 */
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
  it.each(cases)('answers piped input with $name, then exits', async ({ start, answer }) => {
    const { env, asked } = await start();
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-builtin-'));
    const child = spawn(process.execPath, [BUILT_CLI, 'chat'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PINCER_HOME: home, TZ: 'UTC', AGENT_PROVIDER: 'pincer', PINCER_MODEL_MAX_RETRIES: '0', PINCER_RUNNER: 'process', ...env },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    try {
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.stdin.end('hi there\n');
      await waitFor('pincer chat to exit', () => child.exitCode !== null, { timeoutMs: 60_000, intervalMs: 50 });
      expect(await exited).toBe(0);
      expect(stdout).toContain('Looking…');
      expect(stdout).toContain(answer);
      expect(asked()).toContain('hi there</message>');
      // The runner ran the built-in runtime: its conversation is in the chat session's folder.
      expect(fs.readdirSync(path.join(home, 'sessions', 'chat', '.pincer-sessions'))).toHaveLength(1);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
