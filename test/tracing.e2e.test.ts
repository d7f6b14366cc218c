import { afterEach, describe, expect, it } from 'vitest';
import { claudeTestEnv, cleanupClaude, fakeAnthropic } from './support/claude.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';
import { waitFor } from './support/wait.js';

/**
 * OpenTelemetry through the whole system: a real host and runners export to a loopback OTLP/HTTP receiver, and each
 * inbound message is one trace — receive → session insert → runner pickup → provider turn → tool calls → delivery —
 * whose spans share the trace id and hang from one root (no orphan roots).
 */
const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  const left = await stopAllHosts();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  const claudeLeft = await cleanupClaude();
  expect(left).toEqual({ hosts: 0, runners: 0 });
  expect(claudeLeft).toBe(0);
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  receivers.push(r);
  return r;
}

/** The trace's single root, after checking every other span's parent is in the same trace. */
function rootOf(spans: ReceivedSpan[]): ReceivedSpan {
  const ids = new Set(spans.map((s) => s.spanId));
  const roots = spans.filter((s) => !s.parentSpanId);
  const orphans = spans.filter((s) => s.parentSpanId && !ids.has(s.parentSpanId));
  expect(orphans.map((s) => `${s.service}/${s.name}`)).toEqual([]);
  expect(roots.map((s) => s.name)).toEqual(['pincer.receive http']);
  return roots[0]!;
}

function parentOf(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan | undefined {
  return spans.find((s) => s.spanId === span.parentSpanId);
}

const named = (spans: ReceivedSpan[], name: string): ReceivedSpan[] => spans.filter((s) => s.name === name);

describe('traces', { timeout: 90_000 }, () => {
  it('one trace per message with the mock provider: receive → insert → pickup → turn, and delivery', async () => {
    const otlp = await receiver();
    const host = await startHost({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, MOCK_USAGE: JSON.stringify({ inputTokens: 7, outputTokens: 3 }) });
    const stream = host.stream('t1');
    for (const [index, text] of ['first', 'second'].entries()) {
      expect((await host.request('POST', '/v1/conversations/t1/messages', { text })).status).toBe(202);
      await waitFor(`answer ${index + 1}`, () => stream.events.filter((e) => e.event === 'chat').length > index);
    }
    stream.close();
    const complete = (spans: ReceivedSpan[]): boolean =>
      ['pincer.session.insert', 'pincer.pickup', 'invoke_agent mock', 'pincer.deliver'].every((n) => named(spans, n).length > 0);
    await waitFor('two complete traces', () => [...otlp.traces().values()].filter(complete).length === 2, { timeoutMs: 20_000 });
    expect(otlp.traces().size).toBe(2);
    for (const spans of otlp.traces().values()) {
      const root = rootOf(spans);
      const [insert] = named(spans, 'pincer.session.insert');
      const [pickup] = named(spans, 'pincer.pickup');
      const [turn] = named(spans, 'invoke_agent mock');
      const [deliver] = named(spans, 'pincer.deliver');
      expect(parentOf(spans, insert!)).toBe(root);
      expect(parentOf(spans, pickup!)).toBe(insert);
      expect(parentOf(spans, turn!)).toBe(pickup);
      expect(parentOf(spans, deliver!)).toBe(insert);
      expect([root.service, pickup!.service, turn!.service, deliver!.service]).toEqual(['pincer-host', 'pincer-runner', 'pincer-runner', 'pincer-host']);
      expect(turn!.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.provider.name': 'mock',
        'gen_ai.response.model': 'mock',
        'gen_ai.usage.input_tokens': 7,
        'gen_ai.usage.output_tokens': 3,
        // the model-runtime generation the turn ran with (the host's first for the group)
        'pincer.model_runtime.generation': 1,
      });
    }
    expect(otlp.unreadable).toBe(0);
    expect(await host.stop()).toBe(0);
  });

  it('a Claude turn that calls a Pincer tool: the tool span hangs from the turn, Claude Code joins the same trace', async () => {
    const otlp = await receiver();
    const fake = await fakeAnthropic();
    fake.script({ toolUse: { name: 'mcp__pincer__send_message', input: { text: 'working on it' } } }, { text: 'all done' });
    const host = await startHost({ ...claudeTestEnv(fake), OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
    const stream = host.stream('t2');
    expect((await host.request('POST', '/v1/conversations/t2/messages', { text: 'please work' })).status).toBe(202);
    await waitFor('both answers', () => stream.events.filter((e) => e.event === 'chat').length === 2, { timeoutMs: 60_000 });
    stream.close();
    // Stopping the host stops the runner, which flushes its spans, and then the host's.
    expect(await host.stop()).toBe(0);
    await waitFor(
      'the tool span and both deliveries',
      () => {
        const spans = [...otlp.traces().values()].flat();
        return named(spans, 'execute_tool send_message').length === 1 && named(spans, 'pincer.deliver').length === 2;
      },
      { timeoutMs: 20_000 },
    );
    const ours = [...otlp.traces().entries()].filter(([, spans]) => spans.some((s) => s.name.startsWith('pincer.receive')));
    expect(ours).toHaveLength(1);
    const spans = ours[0]![1];
    rootOf(spans);
    const [turn] = named(spans, 'invoke_agent claude');
    const [tool] = named(spans, 'execute_tool send_message');
    expect(tool!.service).toBe('pincer-mcp');
    expect(parentOf(spans, tool!)).toBe(turn);
    expect(tool!.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'send_message' });
    expect(turn!.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    // Every span anyone exported (Claude Code's own included) belongs to this one trace.
    expect(otlp.traces().size).toBe(1);
    expect(otlp.unreadable).toBe(0);
  });
});
