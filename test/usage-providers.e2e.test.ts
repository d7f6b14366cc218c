import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claudeTestEnv, cleanupClaude, fakeAnthropic } from './support/claude.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Usage from each real provider through a real host: the real SDK and binary against a fake model server that
 * reports known token counts; the numbers must arrive in the host's ledger (GET /v1/usage) unchanged. The credential
 * proxy counts every call the server answered (titles and side calls too) from the server's own usage fields; the
 * runner's turn rows are hints (one turn each, and a cost where the price table has none).
 */
const SLOW = { timeoutMs: 60_000 };
const homes: string[] = [];

afterEach(async () => {
  const left = await stopAllHosts();
  await closeFakeOpenAIs();
  const claudeLeft = await cleanupClaude();
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
  expect(left).toEqual({ hosts: 0, runners: 0 });
  expect(claudeLeft).toBe(0);
});

interface Row {
  key: string;
  turns: number;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number | null;
  unpricedTurns: number;
}

/** Post `texts` one after another to one conversation, each answered before the next; then the ledger by model. */
async function converse(host: HostHandle, texts: string[]): Promise<Row[]> {
  const stream = host.stream('u1');
  for (const [index, text] of texts.entries()) {
    expect((await host.request('POST', '/v1/conversations/u1/messages', { text })).status).toBe(202);
    await waitFor(`answer ${index + 1}`, () => stream.events.filter((e) => e.event === 'chat').length > index, SLOW);
  }
  stream.close();
  const report = await waitFor(
    'every turn in the ledger',
    async () => {
      const res = await host.request('GET', '/v1/usage?by=model');
      return (res.body.total as Row).turns >= texts.length ? res.body : undefined;
    },
    SLOW,
  );
  return report.rows as Row[];
}

function homeWithPrices(prices: Record<string, unknown>): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-usage-home-'));
  homes.push(home);
  fs.writeFileSync(path.join(home, 'prices.json'), JSON.stringify(prices));
  return home;
}

describe('usage from the real providers lands in the ledger', { timeout: 120_000 }, () => {
  it('Claude: every call as the server reported it; the cost Claude Code computed where the price table has none', async () => {
    const fake = await fakeAnthropic();
    fake.usage = { input_tokens: 1200, output_tokens: 34, cache_read_input_tokens: 500, cache_creation_input_tokens: 70 };
    const host = await startHost(claudeTestEnv(fake));
    // Two messages: the second is a new query resuming the session, whose totals already include the first turn.
    const rows = await converse(host, ['first', 'second']);
    const calls = fake.requests.filter((r) => r.path.startsWith('/v1/messages') && !r.path.startsWith('/v1/messages/count_tokens')).length;
    expect(calls).toBeGreaterThanOrEqual(2);
    const total = rows.reduce(
      (t, r) => ({ calls: t.calls + r.calls, input: t.input + r.inputTokens, output: t.output + r.outputTokens, cacheRead: t.cacheRead + r.cacheReadTokens }),
      { calls: 0, input: 0, output: 0, cacheRead: 0 },
    );
    expect(total).toEqual({ calls, input: 1200 * calls, output: 34 * calls, cacheRead: 500 * calls });
    const main = rows.find((r) => r.key === fake.modelRequests()[0]!.body.model)!;
    expect(main).toMatchObject({ turns: 2, unpricedTurns: 0 });
    // a model the price table does not know: the cost Claude Code computed for it (the runner's hint)
    expect(main.costUsd).toBeGreaterThan(0);
    expect(await host.stop()).toBe(0);
  });

  it('Codex: the call usage (cached input apart), model named by the request, priced from prices.json', async () => {
    const fake = await startFakeOpenAI();
    fake.usage = { input: 1500, cached: 300, output: 42 };
    const home = homeWithPrices({ 'fake-model': { input: 2, output: 10, cacheRead: 0.5 } });
    const host = await startHost(
      { AGENT_PROVIDER: 'codex', OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test-key', CODEX_MODEL: 'fake-model', CODEX_MAX_RETRIES: '0' },
      home,
    );
    const [row] = await converse(host, ['hello codex']);
    expect(fake.modelRequests()).toHaveLength(1);
    expect(row).toMatchObject({
      key: 'fake-model',
      turns: 1,
      calls: 1,
      inputTokens: 1200,
      cacheReadTokens: 300,
      outputTokens: 42,
      cacheWriteTokens: 0,
      unpricedTurns: 0,
    });
    expect(row!.costUsd).toBeCloseTo((1200 * 2 + 42 * 10 + 300 * 0.5) / 1e6, 12);
    expect(await host.stop()).toBe(0);
  });

  it('OpenCode: the tokens of every call, the title request’s too', async () => {
    const fake = await startFakeOpenAI();
    fake.usage = { input: 900, cached: 100, output: 25 };
    const home = homeWithPrices({ 'fake-model': { input: 1, output: 1 } });
    const host = await startHost(
      { AGENT_PROVIDER: 'opencode', OPENCODE_BASE_URL: fake.baseUrl, OPENCODE_API_KEY: 'test-key', OPENCODE_MODEL: 'fake-model' },
      home,
    );
    const [row] = await converse(host, ['hello opencode']);
    // the fake answers a title request with 10 input and 5 output tokens (its default), a model request with fake.usage
    const titles = fake.requests.filter((r) => r.title).length;
    const models = fake.modelRequests().length;
    const input = 10 * titles + 800 * models;
    const output = 5 * titles + 25 * models;
    expect(row).toMatchObject({ key: 'fake-model', turns: 1, calls: titles + models, outputTokens: output, cacheReadTokens: 100 * models, unpricedTurns: 0 });
    expect(row!.inputTokens).toBe(input);
    expect(row!.costUsd).toBeCloseTo((input + 100 * models + output) / 1e6, 12);
    expect(await host.stop()).toBe(0);
  });
});
