import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { turnUsageAfter } from '../src/db/usage.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { parsePromText } from './support/prom-text.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';
import { onPath } from './support/dockerd.js';

const promtool = onPath('promtool');
if (!promtool) console.warn('[metrics] promtool not installed (the prometheus package): /metrics is not checked by it');

/**
 * Usage through the whole system: a real host with real runners (mock provider, deterministic usage) fills the
 * ledger; `pincer usage` and `GET /v1/usage` agree; a budget refuses the next turn with a notice in the chat until
 * an admin raises it; `/metrics` parses strictly and its counters move as messages flow.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

async function post(host: HostHandle, conversation: string, text: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return host.request('POST', `/v1/conversations/${conversation}/messages`, { text, sender: 'alice' });
}

function cli(home: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BUILT_CLI, ...args, '--home', home], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Sum of the session's own turn_usage rows, read straight from its DB. */
function sessionUsage(host: HostHandle, sessionId: string): { turns: number; input: number; output: number; cost: number } {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
  try {
    const rows = turnUsageAfter(db, 0);
    return {
      turns: rows.length,
      input: rows.reduce((n, r) => n + r.input_tokens, 0),
      output: rows.reduce((n, r) => n + r.output_tokens, 0),
      cost: rows.reduce((n, r) => n + (r.cost_usd ?? 0), 0),
    };
  } finally {
    db.close();
  }
}

async function metrics(host: HostHandle, token?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${host.port}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, text: await res.text() };
}

describe('usage ledger, reports and metrics through a real host', () => {
  it('every answered turn lands in the ledger; pincer usage and /v1/usage agree; /metrics counts it', async () => {
    const host = await startHost();
    const before = parsePromText((await metrics(host)).text);
    expect(before.value('pincer_tokens_total')).toBe(0);

    const streams = { c1: host.stream('c1'), c2: host.stream('c2') };
    const a = (await post(host, 'c1', 'first question')).body as { sessionId: string };
    await streams.c1.waitFor('c1 answer', (e) => e.event === 'chat');
    await post(host, 'c1', 'second question');
    await waitFor('two c1 answers', () => streams.c1.events.filter((e) => e.event === 'chat').length === 2);
    const b = (await post(host, 'c2', 'another conversation')).body as { sessionId: string };
    await streams.c2.waitFor('c2 answer', (e) => e.event === 'chat');

    const expected = [sessionUsage(host, a.sessionId), sessionUsage(host, b.sessionId)];
    const turns = expected[0]!.turns + expected[1]!.turns;
    expect(turns).toBe(3);
    const since = '2020-01-01';
    const report = await waitFor('the ledger has all three turns', async () => {
      const res = await host.request('GET', `/v1/usage?since=${since}&by=conversation`);
      return (res.body.total as { turns: number }).turns === 3 ? res.body : undefined;
    });
    expect(report.total).toMatchObject({
      turns: 3,
      inputTokens: expected[0]!.input + expected[1]!.input,
      outputTokens: expected[0]!.output + expected[1]!.output,
      unpricedTurns: 0,
    });
    expect((report.total as { costUsd: number }).costUsd).toBeCloseTo(expected[0]!.cost + expected[1]!.cost, 12);
    expect((report.rows as { key: string; turns: number }[]).map((r) => [r.key, r.turns]).sort()).toEqual([
      ['http:c1', 2],
      ['http:c2', 1],
    ]);

    // The CLI reads the same ledger and prints the same report.
    const json = cli(host.home, 'usage', '--since', since, '--by', 'conversation', '--json');
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(report);
    for (const by of ['group', 'model', 'task', 'day'] as const) {
      const http = await host.request('GET', `/v1/usage?since=${since}&by=${by}`);
      expect(JSON.parse(cli(host.home, 'usage', '--since', since, '--by', by, '--json').stdout)).toEqual(http.body);
    }
    const table = cli(host.home, 'usage', '--since', since, '--by', 'model');
    expect(table.stdout).toMatch(/^model +turns +calls +input +output +cache read +cache write +cost \(USD\)$/m);
    // the mock calls no model server: no calls at the credential proxy, the runner's rows count
    expect(table.stdout).toMatch(/^mock +3 +0 /m);
    expect(table.stdout).toMatch(/^total +3 +0 /m);

    // Bad input: a clear error, over HTTP and on the command line.
    const bad = await host.request('GET', '/v1/usage?by=colour');
    expect(bad).toMatchObject({ status: 400, body: { field: 'by' } });
    expect(String(bad.body.error)).toMatch(/unknown grouping "colour" \(known: group, conversation, model, task, day\)/);
    const badCli = cli(host.home, 'usage', '--since', 'last tuesday');
    expect(badCli.status).toBe(2);
    expect(badCli.stderr).toMatch(/since: "last tuesday" is not a duration/);

    // Metrics moved with the messages: tokens by model match the ledger, deliveries by channel, pickup observed.
    const after = parsePromText((await metrics(host)).text);
    expect(after.value('pincer_tokens_total', { model: 'mock', type: 'input' })).toBe((report.total as { inputTokens: number }).inputTokens);
    expect(after.value('pincer_tokens_total', { model: 'mock', type: 'output' })).toBe((report.total as { outputTokens: number }).outputTokens);
    expect(after.value('pincer_cost_usd_total', { model: 'mock' })).toBeCloseTo((report.total as { costUsd: number }).costUsd, 12);
    expect(after.value('pincer_turns_total', { provider: 'mock' })).toBe(3);
    expect(after.value('pincer_deliveries_total', { channel: 'http' })).toBe(3);
    expect(after.value('pincer_pickup_latency_seconds_count')).toBe(3);
    expect(after.value('pincer_turn_duration_seconds_count', { provider: 'mock' })).toBe(3);
    expect(after.value('pincer_http_requests_total', { method: 'POST', route: '/v1/conversations/:id/messages', status: '202' })).toBe(3);
    expect(after.types.get('pincer_pickup_latency_seconds')).toBe('histogram');
    expect(after.types.get('pincer_runners')).toBe('gauge');
    // No session or message ids in labels: every label value is one of a few words.
    for (const sample of after.samples) {
      expect(sample.name.startsWith('pincer_')).toBe(true);
      for (const value of Object.values(sample.labels)) expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|^ses-|^ag-/);
    }
    // Prometheus's own validator (the prometheus Debian package, which .ci/run installs) finds nothing to say.
    if (promtool) {
      const checked = spawnSync('promtool', ['check', 'metrics'], { input: (await metrics(host)).text, encoding: 'utf8' });
      expect(`${checked.stdout}${checked.stderr}`).toBe('');
      expect(checked.status).toBe(0);
    }
    for (const s of Object.values(streams)) s.close();
    expect(await host.stop()).toBe(0);
  }, 90_000);

  it('/metrics has its own authentication: a metrics token when set, loopback only otherwise', async () => {
    const token = 'metrics-token-0123456789';
    const host = await startHost({ PINCER_METRICS_TOKEN: token });
    expect((await metrics(host)).status).toBe(401);
    expect((await metrics(host, TEST_TOKEN)).status).toBe(401);
    const ok = await metrics(host, token);
    expect(ok.status).toBe(200);
    expect(parsePromText(ok.text).types.get('pincer_tokens_total')).toBe('counter');
    // Usage and budgets stay behind the API's authentication, and need an admin token: a scoped one is refused.
    expect((await host.request('GET', '/v1/usage', undefined, { token: null })).status).toBe(401);
    const scoped = cli(host.home, 'token', 'create', 'reader', '--conversation', 'c1').stdout.trim();
    expect((await host.request('GET', '/v1/usage', undefined, { token: scoped })).status).toBe(403);
    expect((await host.request('PUT', '/v1/budgets/main', { period: 'daily', unit: 'usd', amount: 1 }, { token: scoped })).status).toBe(403);
    expect((await host.request('GET', '/v1/usage')).status).toBe(200);
    expect(await host.stop()).toBe(0);
  });

  it('a budget refuses the next turn with a notice in the chat saying which limit and when it resets; raising it lets turns run', async () => {
    const host = await startHost({ MOCK_USAGE: JSON.stringify({ costUsd: 1 }) });
    const stream = host.stream('b1');
    expect((await post(host, 'b1', 'hello')).status).toBe(202);
    await stream.waitFor('the first answer', (e) => e.event === 'chat');

    const set = cli(host.home, 'budget', 'set', 'main', '--daily-usd', '1');
    expect(set.status).toBe(0);
    expect(set.stdout).toMatch(/main: daily \$1\.00/);
    await waitFor('the turn is in the ledger', async () => ((await host.request('GET', '/v1/usage')).body.total as { turns: number }).turns === 1);

    const refused = await post(host, 'b1', 'one more');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('over-budget');
    expect(String(refused.body.error)).toMatch(
      /reached its daily budget of \$1\.00 \(\$1\.00 used today\).*resets at \d{4}-\d{2}-\d{2} 00:00 \(UTC\).*pincer budget set main --daily-usd/,
    );
    const notice = await stream.waitFor('the notice in the chat', (e) => e.event === 'notice');
    expect(notice.data.text).toBe(refused.body.error);
    const metricsText = parsePromText((await metrics(host)).text);
    expect(metricsText.value('pincer_budget_refusals_total', { period: 'daily', unit: 'usd' })).toBeGreaterThanOrEqual(1);

    // The admin raises it over HTTP; the next message is answered.
    const raised = await host.request('PUT', '/v1/budgets/main', { period: 'daily', unit: 'usd', amount: 10 });
    expect(raised.status).toBe(200);
    expect(raised.body.budgets).toMatchObject([{ group: 'main', period: 'daily', unit: 'usd', amount: 10 }]);
    expect((await post(host, 'b1', 'after the raise')).status).toBe(202);
    await waitFor('the second answer', () => stream.events.filter((e) => e.event === 'chat').length === 2, { timeoutMs: 30_000 });
    const badBudget = await host.request('PUT', '/v1/budgets/main', { period: 'weekly', unit: 'usd', amount: 1 });
    expect(badBudget).toMatchObject({ status: 400, body: { field: 'period' } });
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
