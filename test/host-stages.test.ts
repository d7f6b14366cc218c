import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { createTestHost, type TestHost } from '../src/testing/test-host.js';
import { ScriptedProvider } from '../src/testing/scripted-provider.js';
import { ChannelDeliveryError } from '../src/host/channels/types.js';

/**
 * The host's stages on the in-process test host: a real host, central DB and session databases, the runner's own code
 * in this process driving a scripted provider, no child process. The same behaviour is tested end to end through real
 * processes elsewhere (host.e2e, session-ports.e2e, runner-modes.e2e).
 */
const hosts: TestHost[] = [];

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.stop();
});

async function start(provider: ScriptedProvider, env: Record<string, string> = {}, clock?: () => number): Promise<TestHost> {
  const host = await createTestHost({ provider, env, ...(clock ? { clock } : {}) });
  hosts.push(host);
  onTestFailed(() => console.log(host.logLines.join('')));
  return host;
}

function text(delivery: { payload: { type: string; text?: string } }): string | undefined {
  return delivery.payload.text;
}

describe('the host on the in-process test host', () => {
  it("waits out a platform's retry-after on the host's clock: moved an hour on, the answer is delivered at the next turn", async () => {
    let offsetMs = 0;
    const provider = new ScriptedProvider([
      { expect: 'first', answer: 'answer one' },
      { expect: 'second', answer: 'answer two' },
    ]);
    const t = await start(provider, {}, () => Date.now() + offsetMs);
    t.channel.failNext(new ChannelDeliveryError('rate limited', { retryAfterMs: 3_600_000 }));
    await t.send('first');
    await waitUntil(() => t.logLines.some((line) => /delivery of message \d+ in \S+ failed \(attempt 1\): rate limited; retry in 3600000 ms/.test(line)));
    offsetMs = 3_600_000; // an hour later, for the host; the next message wakes the session's turn
    await t.send('second');
    expect(text(await t.reply())).toBe('answer one'); // in order: the held answer first
    expect(text(await t.reply())).toBe('answer two');
    provider.assertComplete();
  });

  it('delivers the answer to a message into its conversation, and the provider saw the message', async () => {
    const provider = new ScriptedProvider([{ expect: 'hello there', answer: 'hi, how can I help?' }]);
    const t = await start(provider);
    const receipt = await t.send('hello there');
    expect(receipt.seq).toBeGreaterThan(0);
    const reply = await t.reply();
    expect(text(reply)).toBe('hi, how can I help?');
    expect(reply.inReplyTo).toBe(receipt.id);
    expect(reply.conversation).toEqual(t.conversation());
    provider.assertComplete();
  });

  it('pushes a message sent while the agent works into the open query, and answers both in order', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const provider = new ScriptedProvider([
      { expect: 'first', answer: 'answer one', hold: held },
      { expect: 'second', answer: 'answer two' },
    ]);
    const t = await start(provider);
    await t.send('first');
    await waitUntil(() => provider.received.length === 1);
    await t.send('second');
    // the follow-up goes into the open query (not a new one) while the first answer is still held
    await waitUntil(() => provider.pushed.length === 1);
    release();
    expect(text(await t.reply())).toBe('answer one');
    expect(text(await t.reply())).toBe('answer two');
    expect(provider.received.map((r) => r.followUp)).toEqual([false, true]);
    provider.assertComplete();
  });

  it('shows typing while the agent works and stops when the answer is delivered', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const provider = new ScriptedProvider([{ answer: 'done', hold: held }]);
    const t = await start(provider);
    await t.send('work on it');
    await waitUntil(() => t.channel.typing.some((change) => change.active));
    release();
    await t.reply();
    await waitUntil(() => t.channel.typing.at(-1)?.active === false);
    expect(t.channel.typing[0]).toEqual({ conversation: t.conversation(), active: true });
  });

  it('runs a scheduled task and delivers what the agent answers', async () => {
    const provider = new ScriptedProvider([{ expect: 'summarise the inbox', answer: 'inbox summarised' }]);
    const t = await start(provider);
    await t.host.scheduleTask(t.conversation(), { prompt: 'summarise the inbox', processAfter: new Date(Date.now() - 1000).toISOString() });
    expect(text(await t.reply())).toBe('inbox summarised');
    provider.assertComplete();
  });

  it('a new runner after a stop resumes the provider session the previous one had', async () => {
    const provider = new ScriptedProvider([
      { expect: 'one', answer: 'first answer' },
      { expect: 'two', answer: 'second answer' },
    ]);
    const t = await start(provider);
    const receipt = await t.send('one');
    await t.reply();
    await t.host.stopRunner(receipt.sessionId);
    await t.send('two');
    expect(text(await t.reply())).toBe('second answer');
    expect(provider.received[1]!.followUp).toBe(false);
    expect(provider.received[1]!.input.sessionId).toBe('scripted-1');
    provider.assertComplete();
  });

  it('a message the agent fails on for good reaches the chat as a notice with the reason', async () => {
    const provider = new ScriptedProvider([{ answer: [{ type: 'error', message: 'the model refused the request', retryable: false }] }]);
    const t = await start(provider);
    await t.send('do something');
    const notice = await t.reply();
    expect(notice.payload.type).toBe('notice');
    expect(text(notice)).toContain('the model refused the request');
    provider.assertComplete();
  });

  it('over budget: the message is refused with the notice, and the agent is never asked', async () => {
    const provider = new ScriptedProvider();
    const t = await start(provider);
    const group = t.host.store.listAgentGroups()[0]!;
    t.host.usage.budgets.set(group.id, 'daily', 'tokens', 0);
    await expect(t.send('anything')).rejects.toMatchObject({ code: 'over-budget' });
    const notice = await t.reply();
    expect(text(notice)).toMatch(/budget/i);
    expect(provider.received).toEqual([]);
    provider.assertComplete();
  });

  it('a budget raised after a refusal admits the next message at once', async () => {
    const provider = new ScriptedProvider([{ expect: 'after the raise', answer: 'answered' }]);
    const t = await start(provider);
    const group = t.host.store.listAgentGroups()[0]!;
    t.host.usage.budgets.set(group.id, 'daily', 'tokens', 0);
    await expect(t.send('refused')).rejects.toMatchObject({ code: 'over-budget' });
    await t.reply(); // the budget notice
    t.host.usage.budgets.set(group.id, 'daily', 'tokens', 1_000_000);
    await t.send('after the raise');
    expect(text(await t.reply())).toBe('answered');
    provider.assertComplete();
  });

  it('the scripted provider fails the test on a prompt it did not expect', async () => {
    const provider = new ScriptedProvider([{ expect: 'ping', answer: 'pong' }]);
    const t = await start(provider);
    await t.send('something else');
    await t.reply(); // the failure notice
    expect(() => provider.assertComplete()).toThrow(/expected a prompt with ping/);
  });
});

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
