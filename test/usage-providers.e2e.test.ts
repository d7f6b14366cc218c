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
 * reports known token counts; the numbers must arrive in the host's ledger (GET /v1/usage) unchanged.
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
  it('Claude: each turn is its share of the SDK running totals, with the cost Claude Code computed', async () => {
    const fake = await fakeAnthropic();
    fake.usage = { input_tokens: 1200, output_tokens: 34, cache_read_input_tokens: 500, cache_creation_input_tokens: 70 };
    const host = await startHost(claudeTestEnv(fake));
    // Two messages: the second is a new query resuming the session, whose totals already include the first turn.
    const rows = await converse(host, ['first', 'second']);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ turns: 2, inputTokens: 2400, outputTokens: 68, cacheReadTokens: 1000, cacheWriteTokens: 140, unpricedTurns: 0 });
    expect(rows[0]!.key).toBe(fake.modelRequests()[0]!.body.model);
    expect(rows[0]!.costUsd).toBeGreaterThan(0);
    expect(await host.stop()).toBe(0);
  });

  it('Codex: the turn usage (cached input apart), priced from prices.json', async () => {
    const fake = await startFakeOpenAI();
    fake.usage = { input: 1500, cached: 300, output: 42 };
    const home = homeWithPrices({ 'fake-model': { input: 2, output: 10, cacheRead: 0.5 } });
    const host = await startHost(
      { AGENT_PROVIDER: 'codex', OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test-key', CODEX_MODEL: 'fake-model', CODEX_MAX_RETRIES: '0' },
      home,
    );
    const [row] = await converse(host, ['hello codex']);
    expect(row).toMatchObject({
      key: 'fake-model',
      turns: 1,
      inputTokens: 1200,
      cacheReadTokens: 300,
      outputTokens: 42,
      cacheWriteTokens: 0,
      unpricedTurns: 0,
    });
    expect(row!.costUsd).toBeCloseTo((1200 * 2 + 42 * 10 + 300 * 0.5) / 1e6, 12);
    expect(await host.stop()).toBe(0);
  });

  it('OpenCode: the tokens of the turn’s assistant messages (the title request left out)', async () => {
    const fake = await startFakeOpenAI();
    fake.usage = { input: 900, cached: 100, output: 25 };
    const home = homeWithPrices({ 'fake-model': { input: 1, output: 1 } });
    const host = await startHost(
      { AGENT_PROVIDER: 'opencode', OPENCODE_BASE_URL: fake.baseUrl, OPENCODE_API_KEY: 'test-key', OPENCODE_MODEL: 'fake-model' },
      home,
    );
    const [row] = await converse(host, ['hello opencode']);
    expect(row).toMatchObject({ key: 'fake-model', turns: 1, outputTokens: 25, cacheReadTokens: 100, cacheWriteTokens: 0, unpricedTurns: 0 });
    expect(row!.inputTokens).toBe(800);
    expect(row!.costUsd).toBeCloseTo((800 + 100 + 25) / 1e6, 12);
    expect(await host.stop()).toBe(0);
  });
});
