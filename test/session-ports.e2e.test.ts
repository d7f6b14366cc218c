import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The host's behaviour through both session ports, one suite: `local` (the session folder, its engine in the host)
 * and `session-serve` (PINCER_RUNNER=session-serve: one `pincer session-serve` process per session over loopback).
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const PORTS = [
  ['local', { PINCER_RUNNER: 'process' }],
  ['session-serve', { PINCER_RUNNER: 'session-serve', PINCER_SESSION_SERVE_RUNNER: 'process' }],
] as const;

interface Event {
  type: string;
  text?: string;
  inReplyTo?: string | null;
}

async function events(host: HostHandle, conversation: string): Promise<Event[]> {
  return (await host.request('GET', `/v1/conversations/${conversation}/events?after=0`)).body.events as Event[];
}

function answers(host: HostHandle, conversation: string, marker: string, count = 1): Promise<Event[]> {
  return waitFor(
    `${count} answer(s) with "${marker}"`,
    async () => {
      const found = (await events(host, conversation)).filter((e) => e.type === 'chat' && e.text?.includes(marker));
      return found.length >= count ? found : undefined;
    },
    { timeoutMs: 40_000, intervalMs: 50 },
  );
}

async function send(host: HostHandle, conversation: string, text: string): Promise<{ sessionId: string; id: string; seq: number | null }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text });
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string; seq: number | null };
}

describe.each(PORTS)('through the %s session port', (kind, env) => {
  it('answers a message and its follow-ups, each once, and shows the session with its runner', async () => {
    const host = await startHost({ ...env });
    const first = await send(host, 'c1', 'first question');
    expect(first.seq).toBe(1);
    await answers(host, 'c1', 'first question');
    for (const text of ['second', 'third']) await send(host, 'c1', text);
    await answers(host, 'c1', 'third');
    const all = (await events(host, 'c1')).filter((e) => e.type === 'chat');
    expect(all.filter((e) => e.text?.includes('first question'))).toHaveLength(1);
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; provider: string | null; pending: number }[];
    expect(sessions).toEqual([expect.objectContaining({ id: first.sessionId, provider: 'mock', pending: 0 })]);
    const log = (await host.request('GET', `/v1/sessions/${first.sessionId}/log?lines=50`)).body.lines as string[];
    expect(log.join('\n')).toMatch(/\[runner\] picked 1 message/);
    expect(await host.stop()).toBe(0);
  });

  it('runs a scheduled task, lists and cancels a later one', async () => {
    const host = await startHost({ ...env });
    await send(host, 't', 'hello');
    await answers(host, 't', 'hello');
    const now = await host.request('POST', '/v1/conversations/t/tasks', { prompt: 'task right now' });
    expect(now.status).toBe(202);
    expect((await answers(host, 't', 'task right now'))[0]!.text).toMatch(/\[SCHEDULED TASK\]/);
    const later = await host.request('POST', '/v1/conversations/t/tasks', { prompt: 'much later', processAfter: '2099-01-01T00:00:00Z' });
    const listed = (await host.request('GET', '/v1/tasks')).body.tasks as { id: string; prompt: string }[];
    expect(listed.map((t) => t.prompt)).toEqual(['much later']);
    expect((await host.request('POST', `/v1/tasks/${(later.body as { id: string }).id}/cancel`)).status).toBe(200);
    expect((await host.request('GET', '/v1/tasks')).body.tasks).toEqual([]);
    expect(await host.stop()).toBe(0);
  });

  it('a stopped runner is started again for the next message, and a restart starts one at once', async () => {
    const host = await startHost({ ...env });
    const { sessionId } = await send(host, 'r', 'one');
    await answers(host, 'r', 'one');
    expect((await host.request('POST', `/v1/sessions/${sessionId}/stop`)).status).toBe(200);
    await send(host, 'r', 'two');
    await answers(host, 'r', 'two');
    expect((await host.request('POST', `/v1/sessions/${sessionId}/restart`)).status).toBe(200);
    await waitFor('a runner again', async () => ((await host.request('GET', '/v1/sessions')).body.sessions as { runner: unknown }[])[0]!.runner, { timeoutMs: 30_000 });
    expect(await host.stop()).toBe(0);
  });
});

describe('session-serve killed under a running host', () => {
  it('is launched again with a new epoch; what was accepted meanwhile is answered, each once', async () => {
    const host = await startHost({ PINCER_RUNNER: 'session-serve', PINCER_SESSION_SERVE_RUNNER: 'process' });
    await send(host, 'k', 'before');
    await answers(host, 'k', 'before');
    const pid = Number(/session-serve pid (\d+), epoch 1/.exec(host.stderr())![1]);
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 5; i++) await send(host, 'k', `after-${i}`);
    await answers(host, 'k', 'after-4');
    await waitFor('epoch 2', () => /session-serve pid \d+, epoch 2/.test(host.stderr()), { timeoutMs: 30_000 });
    const chats = (await events(host, 'k')).filter((e) => e.type === 'chat');
    for (let i = 0; i < 5; i++) expect(chats.filter((e) => e.text?.includes(`after-${i}<`))).toHaveLength(1);
    expect(chats.filter((e) => e.text?.includes('before'))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });
});
