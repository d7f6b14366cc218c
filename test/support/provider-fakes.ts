import { claudeTestEnv, fakeAnthropic } from './claude.js';
import { startFakeOpenAI } from './fake-openai.js';

/**
 * Each real provider against its fake model server, as a host is started for it: the host's environment, the text
 * the fake was asked, and the tokens the ledger must hold for what the fake answered (every call as the server
 * reported it). For tests that run the same question through every provider (test/runner-modes.e2e.test.ts).
 * Close the fakes with `cleanupClaude()` and `closeFakeOpenAIs()`.
 */
export interface ProviderFake {
  env: Record<string, string>;
  /** every user text the fake's model calls were sent, joined. */
  asked(): string;
  /** the calls and output tokens the fake's answers reported so far. */
  reported(): { calls: number; outputTokens: number };
}

export interface ProviderCase {
  provider: 'claude' | 'codex' | 'opencode' | 'pincer';
  start(): Promise<ProviderFake>;
}

const OUTPUT_TOKENS = 42;

async function openAiFake(env: (baseUrl: string) => Record<string, string>): Promise<ProviderFake> {
  const fake = await startFakeOpenAI();
  fake.usage = { input: 700, cached: 0, output: OUTPUT_TOKENS };
  return {
    env: env(fake.baseUrl),
    asked: () =>
      fake
        .modelRequests()
        .flatMap((r) => r.userTexts)
        .join('\n'),
    // a title request (OpenCode's) reports the fake's default 5 output tokens
    reported: () => {
      const titles = fake.requests.filter((r) => r.title).length;
      const models = fake.modelRequests().length;
      return { calls: titles + models, outputTokens: 5 * titles + OUTPUT_TOKENS * models };
    },
  };
}

async function anthropicFake(env: (url: string) => Record<string, string>): Promise<ProviderFake> {
  const fake = await fakeAnthropic();
  fake.usage = { input_tokens: 700, output_tokens: OUTPUT_TOKENS };
  const calls = () => fake.requests.filter((r) => r.path.startsWith('/v1/messages') && !r.path.startsWith('/v1/messages/count_tokens')).length;
  return {
    env: env(fake.url),
    asked: () =>
      fake
        .modelRequests()
        .map((r) => r.lastUserText)
        .join('\n'),
    reported: () => ({ calls: calls(), outputTokens: OUTPUT_TOKENS * calls() }),
  };
}

export const PROVIDER_CASES: ProviderCase[] = [
  { provider: 'claude', start: () => anthropicFake((url) => claudeTestEnv({ url })) },
  {
    provider: 'codex',
    start: () =>
      openAiFake((baseUrl) => ({
        AGENT_PROVIDER: 'codex',
        OPENAI_BASE_URL: baseUrl,
        OPENAI_API_KEY: 'test-key',
        CODEX_MODEL: 'fake-model',
        CODEX_MAX_RETRIES: '0',
      })),
  },
  {
    provider: 'opencode',
    start: () =>
      // a server without a key (a local one): its calls are counted at the proxy all the same
      openAiFake((baseUrl) => ({ AGENT_PROVIDER: 'opencode', OPENCODE_BASE_URL: baseUrl, OPENCODE_MODEL: 'fake-model' })),
  },
  {
    provider: 'pincer',
    start: () =>
      // the Anthropic API with a key only the host holds: through the credential proxy, as Claude's calls go
      anthropicFake((url) => ({
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'anthropic/claude-sonnet-4-5',
        ANTHROPIC_BASE_URL: url,
        ANTHROPIC_API_KEY: 'sk-ant-fake-test-key',
        PINCER_MODEL_MAX_RETRIES: '0',
      })),
  },
];
