import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * PINCER_SPARE_RUNNERS through a real host (process runners, mock provider): the host keeps a runner process started
 * without a session; the first message of a new conversation is answered by that very process (its pid is the one
 * the host then reports for the session), another spare takes its place, the session's log has the runner's lines,
 * and stopping the host ends the waiting spare too.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const sparesIn = (log: string): number[] => [...log.matchAll(/spare runner started: pid (\d+)/g)].map((m) => Number(m[1]));
const isAlive = (pid: number): boolean =>
  fs.existsSync(`/proc/${pid}`) && !/^\S+ \S+ Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/\(.*\)/, 'x'));

describe('a spare runner (PINCER_SPARE_RUNNERS=1)', () => {
  it('answers the first message of a new session, is replaced by another, and ends with the host', async () => {
    const host = await startHost({ PINCER_RUNNER: 'process', PINCER_SPARE_RUNNERS: '1' });
    const [spare] = await waitFor<number[]>('the spare started', () => (sparesIn(host.stderr()).length > 0 ? sparesIn(host.stderr()) : undefined), {
      timeoutMs: 30_000,
    });
    const stream = host.stream('spare-a');
    expect((await host.request('POST', '/v1/conversations/spare-a/messages', { text: 'hello spare' })).status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && String(e.data.text).includes('hello spare'), 60_000);
    // the session's runner is the process that was waiting
    expect(host.runnerPids()).toEqual([spare]);
    // and another waits in its place
    const next = await waitFor('a new spare', () => sparesIn(host.stderr()).find((pid) => pid !== spare), { timeoutMs: 30_000 });
    expect(isAlive(next)).toBe(true);
    // the runner's own lines went to the session's log, as a launched runner's do
    const session = /runner started for (\S+): pid/.exec(host.stderr())![1]!;
    const runnerLog = await waitFor(
      'the runner log',
      () => {
        const text = fs.readFileSync(`${host.home}/logs/${session}.log`, 'utf8');
        return text.includes('ready: provider mock') ? text : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(runnerLog).toContain(`pid ${spare}`);
    expect(runnerLog).toMatch(/\[runner\] ready: provider mock/);
    stream.close();
    expect(await host.stop()).toBe(0);
    await waitFor('the spares gone', () => ![spare!, next].some(isAlive), { timeoutMs: 10_000 });
  }, 120_000);
});
