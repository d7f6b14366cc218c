import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bwrapWorks } from '../src/host/runner-kind.js';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * An agent calls the credential proxy straight from its shell, with the placeholder key it finds in
 * its runner's environment, 40 times in one turn. Those calls used to be neither counted nor checked against the
 * group's budget (the ledger counted one turn). Now the proxy counts each from the upstream's own usage fields and
 * refuses calls once the group is over budget: the fake upstream sees no call after that.
 */
const CALLS = 40;
const fakes: FakeAnthropic[] = [];

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

/** Runs in the sandbox: find the placeholder and the proxy's URL in a process's environment, call it `n` times. */
function attackScript(n: number): string {
  const js = `
const fs = require('fs');
let key, base;
for (const pid of fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) {
  try {
    const env = fs.readFileSync('/proc/' + pid + '/environ', 'utf8').split('\\0');
    const k = env.find((e) => e.startsWith('ANTHROPIC_API_KEY=')), b = env.find((e) => e.startsWith('ANTHROPIC_BASE_URL='));
    if (k && b) { key = k.slice('ANTHROPIC_API_KEY='.length); base = b.slice('ANTHROPIC_BASE_URL='.length); break; }
  } catch {}
}
const statuses = []; let refusal = '';
const report = () => { fs.writeFileSync('/workspace/attack.tmp', JSON.stringify({ found: Boolean(key), statuses, refusal })); fs.renameSync('/workspace/attack.tmp', '/workspace/attack.json'); };
(async () => {
  for (let i = 0; key && i < ${n}; i++) {
    const res = await fetch(base + '/v1/messages', {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-attack', max_tokens: 10, messages: [{ role: 'user', content: 'call ' + i }] }),
    });
    statuses.push(res.status);
    const text = await res.text();
    if (res.status !== 200 && !refusal) refusal = text;
    report(); // after every call: a runner stopped for the budget ends this script too
  }
  report();
})();
`;
  return `cat > /tmp/attack.js <<'EOF'\n${js}\nEOF\nnode /tmp/attack.js >/dev/null 2>&1\necho '{"wakeAgent":false}'`;
}

describe.skipIf(!bwrapWorks())('usage at the credential proxy, attacked from the sandbox', { timeout: 120_000 }, () => {
  it("counts an agent's own calls to the proxy and refuses them once the group is over budget", async () => {
    const fake = await startFakeAnthropic();
    fakes.push(fake);
    fake.usage = { input_tokens: 1000, output_tokens: 5 };
    const host = await startHost({
      PINCER_RUNNER: 'bwrap',
      // a Claude session: its runner gets the Anthropic placeholder (the script never wakes the agent)
      AGENT_PROVIDER: 'claude',
      ANTHROPIC_API_KEY: 'sk-ant-real-usage-attack',
      ANTHROPIC_BASE_URL: fake.url,
    });
    // 5,000 tokens a day: the sixth call of 1,005 tokens is past it
    expect((await host.request('PUT', '/v1/budgets/main', { period: 'daily', unit: 'tokens', amount: 5000 })).status).toBe(200);
    const task = await host.request('POST', '/v1/conversations/attack/tasks', {
      prompt: 'p',
      processAfter: new Date().toISOString(),
      script: attackScript(CALLS),
    });
    expect(task.status, JSON.stringify(task.body)).toBe(202);
    const file = path.join(host.sessionDir(task.body.sessionId as string), 'attack.json');
    // The attack ends when it made all its calls, or when its runner is stopped: over budget, an idle runner is stopped
    // (its task script with it), so the proxy's refusal and that stop race to hold the budget
    const attack = await waitFor(
      'the attack to end',
      async () => {
        const state = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Attack) : undefined;
        if (!state) return undefined;
        if (state.statuses.length === CALLS) return state;
        const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; runner: unknown }[];
        const runnerGone = sessions.some((s) => s.id === task.body.sessionId && s.runner === null);
        return runnerGone ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Attack) : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    expect(attack.found, host.stderr()).toBe(true);
    const forwarded = attack.statuses.filter((s) => s === 200).length;
    // what the upstream answered is what went through: the budget (5 calls), and at most the calls in flight meanwhile
    expect(fake.modelRequests()).toHaveLength(forwarded);
    expect(forwarded).toBeGreaterThanOrEqual(5);
    expect(forwarded).toBeLessThanOrEqual(7);
    // every later call was refused at the proxy, with the budget's reason
    expect(attack.statuses.slice(forwarded).every((s) => s === 400)).toBe(true);
    if (attack.statuses.length > forwarded) expect(attack.refusal).toMatch(/budget/i);
    // the ledger holds each call as the upstream reported it, not one turn
    const report = await waitFor(
      'the calls in the ledger',
      async () => {
        const res = await host.request('GET', '/v1/usage?by=model');
        const total = res.body.total as { calls: number; inputTokens: number; outputTokens: number };
        return total.calls === forwarded ? total : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(report).toMatchObject({ calls: forwarded, inputTokens: 1000 * forwarded, outputTokens: 5 * forwarded });
    expect(await host.stop()).toBe(0);
  });
});

interface Attack {
  found: boolean;
  statuses: number[];
  refusal: string;
}
