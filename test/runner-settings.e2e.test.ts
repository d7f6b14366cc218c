/**
 * The runner's settings travel in the session's `config.json` (`runner`), the document a runner on another machine
 * gets instead of the host's environment: the host writes them there (never a secret), and a runner started with
 * none of them in its environment runs by them; its own environment still wins.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runnerSection } from '../src/host/config.js';
import { loadRunnerConfig } from '../src/runner/config.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

afterEach(async () => {
  cleanupSessions();
  expect(await stopAllRunners()).toBe(0);
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

function writeConfig(dir: string, config: Record<string, unknown>): void {
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
}

describe("config.json's runner section", () => {
  it('holds the runner settings of the host, never a secret, a host setting or a bad value', () => {
    const section = runnerSection({
      PINCER_WAKE: 'poll',
      PINCER_HEARTBEAT_MS: '2500',
      PINCER_BATCH_MAX_MESSAGES: 'many', // bad: left to the runner's own environment, which stops it with one line
      ANTHROPIC_API_KEY: 'sk-ant-secret-value',
      PINCER_HTTP_TOKEN: 'host-token-0123456789',
      PINCER_IDLE_TIMEOUT_MS: '1000',
      AGENT_PROVIDER: 'mock',
      PINCER_WORKSPACE: '/elsewhere',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', // a sandbox sends spans through the host's relay instead
      OPENAI_BASE_URL: 'https://gateway.example/v1', // a provider's: only the configured provider's reach a sandbox
    });
    expect(section).toEqual({ PINCER_WAKE: 'poll', PINCER_HEARTBEAT_MS: '2500' });
    expect(runnerSection({ PATH: '/usr/bin' })).toBeUndefined();
  });

  it('is what the runner goes by when its environment does not say, and its environment wins', () => {
    const session = createTestSession();
    writeConfig(session.paths.root, { runner: { PINCER_WAKE: 'poll', PINCER_HEARTBEAT_MS: '2500', PINCER_BATCH_MAX_MESSAGES: '7' } });
    const fromFile = loadRunnerConfig({ PINCER_WORKSPACE: session.paths.root });
    expect([fromFile.wake, fromFile.heartbeatMs, fromFile.batch.maxMessages]).toEqual(['poll', 2500, 7]);
    expect(fromFile.env.PINCER_HEARTBEAT_MS).toBe('2500');
    const own = loadRunnerConfig({ PINCER_WORKSPACE: session.paths.root, PINCER_WAKE: 'watch', PINCER_HEARTBEAT_MS: '900' });
    expect([own.wake, own.heartbeatMs, own.batch.maxMessages]).toEqual(['watch', 900, 7]);
  });

  it.each([
    [{ PINCER_WAKE: 'sometimes' }, /runner\.PINCER_WAKE/],
    [{ PINCER_HEARTBEAT_MS: '-5' }, /runner\.PINCER_HEARTBEAT_MS/],
    [{ PINCER_HTTP_TOKEN: 'host-token-0123456789' }, /runner/], // a host setting has no place there
  ])('refuses a section %j with one line naming it', (runner, message) => {
    const session = createTestSession();
    writeConfig(session.paths.root, { runner });
    expect(() => loadRunnerConfig({ PINCER_WORKSPACE: session.paths.root })).toThrow(message);
  });

  it('a real runner with nothing in its environment runs by the section, and exits 2 on a bad one', async () => {
    const session = createTestSession();
    writeConfig(session.paths.root, { runner: { PINCER_WAKE: 'poll' } });
    const runner = startRunner(session.paths.root);
    await runner.ready();
    expect(runner.stderr()).toMatch(/\[runner\] ready: .*wake poll/);
    await runner.stop();

    const bad = createTestSession();
    writeConfig(bad.paths.root, { runner: { PINCER_POLL_IDLE_MS: 'soon' } });
    const refused = startRunner(bad.paths.root);
    expect(await refused.exited).toBe(2);
    expect(refused.stderr()).toMatch(/runner\.PINCER_POLL_IDLE_MS/);
  });

  it('a real host writes it into each session it starts a runner for', async () => {
    const host = await startHost({
      PINCER_RUNNER: 'process',
      PINCER_WAKE: 'poll',
      PINCER_BATCH_MAX_BYTES: '262144',
      ANTHROPIC_API_KEY: 'sk-ant-never-in-the-file',
    });
    const stream = host.stream('alice');
    const sent = await host.request('POST', '/v1/conversations/alice/messages', { text: 'hello', sender: 'Alice', senderId: 'u1' });
    expect(sent.status).toBe(202);
    await stream.waitFor('the reply', (e) => e.event === 'chat');
    const file = path.join(host.sessionDir(String(sent.body.sessionId)), 'config.json');
    const config = await waitFor('config.json', () =>
      fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>) : undefined,
    );
    expect(config.runner).toEqual({ PINCER_WAKE: 'poll', PINCER_BATCH_MAX_BYTES: '262144' });
    expect(fs.readFileSync(file, 'utf8')).not.toContain('sk-ant-never-in-the-file');
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
