import { describe, expect, it } from 'vitest';
import { readRunnerState } from '../src/db/state.js';
import { claudeTestEnv, cleanUpClaudeRunsAfterEach, fakeAnthropic, leftoverClaudeProcesses, processesWithEnv, startClaudeRunner } from './support/claude.js';
import { startFakeAnthropic, type FakeReply } from './support/fake-anthropic.js';
import { createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The Claude provider when things go wrong, end to end (real runner, real SDK and binary, fake model server): each
 * kind of failure ends the query as one classified error, the batch stays for the host to retry and the runner lives;
 * a runner killed mid-turn takes its Claude Code and MCP server with it.
 */
cleanUpClaudeRunsAfterEach();

describe('Claude provider failures', () => {
  it('leaves no Claude Code process behind when the runner is killed mid-turn', async () => {
    const fake = await fakeAnthropic();
    const session = createTestSession();
    const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake));
    fake.script({ stall: true });
    session.chat('a question the model will never answer');
    await waitFor('the model request', () => fake.modelRequests().length === 1, { timeoutMs: 20_000 });
    expect(leftoverClaudeProcesses().length).toBeGreaterThan(1); // the runner and its Claude Code

    const mcpServers = () => processesWithEnv([`PINCER_WORKSPACE=${session.paths.root}`]);
    expect(mcpServers().length).toBeGreaterThan(1); // the runner and the pincer MCP server

    expect(await runner.kill('SIGKILL')).toBe('SIGKILL');
    await waitFor('Claude Code to exit with its runner', () => leftoverClaudeProcesses().length === 0, { timeoutMs: 15_000, intervalMs: 50 });
    await waitFor('the MCP server to exit', () => mcpServers().length === 0, { timeoutMs: 15_000, intervalMs: 50 });
  });

  const usageLimit = {
    status: 429,
    headers: {
      'anthropic-ratelimit-unified-status': 'rejected',
      'anthropic-ratelimit-unified-reset': '4102444800',
      'anthropic-ratelimit-unified-representative-claim': 'five_hour',
    },
  };
  // `retry`: whether the host may try again (a rejected key or an exhausted quota is given up at once)
  const failures: { what: string; reply: FakeReply | null; classification: string; retry: boolean; env?: Record<string, string>; detail?: RegExp }[] = [
    { what: 'HTTP 500', reply: { status: 500 }, classification: 'server', retry: true, detail: /HTTP 500, server_error/ },
    { what: 'HTTP 401', reply: { status: 401 }, classification: 'auth', retry: false, detail: /HTTP 401, authentication_failed/ },
    { what: 'HTTP 429', reply: { status: 429 }, classification: 'quota', retry: false, detail: /HTTP 429, rate_limit/ },
    { what: 'an unreachable server', reply: null, classification: 'transport', retry: true, detail: /no answer from http:\/\/127\.0\.0\.1:\d+/ },
    // a claude.ai subscription (OAuth token) at its usage limit: Claude Code reports a rejected rate_limit_event
    {
      what: 'a subscription usage limit',
      reply: usageLimit,
      classification: 'quota',
      retry: false,
      env: { CLAUDE_CODE_OAUTH_TOKEN: 'sk-ant-oat01-fake' },
      detail: /usage limit reached \(five_hour\); resets at 2100-01-01T00:00:00.000Z/,
    },
    // the provider's own deadline, made short here; the others fail long before the default one
    {
      what: 'a server that never answers',
      reply: { stall: true },
      classification: 'timeout',
      retry: true,
      env: { PINCER_PROVIDER_TIMEOUT_MS: '1500' },
      detail: /the model did not answer within 1500 ms/,
    },
  ];
  it.each(failures)(
    'ends a query on $what as a $classification error and leaves the batch to the host (retry: $retry)',
    async ({ reply, classification, retry, env, detail }) => {
      const fake = await fakeAnthropic();
      const url = reply ? fake.url : await closedPortUrl();
      if (reply) fake.script(reply, reply, reply);
      const session = createTestSession();
      const runnerEnv = claudeTestEnv({ url }, env);
      if (env?.CLAUDE_CODE_OAUTH_TOKEN) delete runnerEnv.ANTHROPIC_API_KEY;
      const runner = await startClaudeRunner(session.paths.root, runnerEnv);

      const { id } = session.chat('are you there?');
      const row = await waitFor(
        'last_error',
        () => {
          const row = session.inbound(id);
          return row.last_error ? row : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(row.last_error).toMatch(new RegExp(`^${classification} error: `));
      expect(row.last_error).toMatch(detail!);
      expect(row.status).toBe('processing'); // left for the host's sweep: to retry, or to give up at once
      expect(row.no_retry).toBe(retry ? 0 : 1);
      await waitFor('runner idle again', () => readRunnerState(session.db)?.state === 'idle');
      expect(readRunnerState(session.db)?.batchIds).toEqual([]);
      expect(runner.child.exitCode).toBeNull();
      expect(session.outbound()).toEqual([]);
      expect(await runner.stop()).toBe(0);
    },
    120_000,
  );
});

/** A loopback URL on which nothing listens: a server started and closed again. */
async function closedPortUrl(): Promise<string> {
  const server = await startFakeAnthropic();
  await server.close();
  return server.url;
}
