import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from './support/processes.js';
import { BwrapLauncher, runnerUnder } from '../src/container/bwrap.js';
import { packageRoot } from '../src/container/config.js';
import { onPath } from './support/dockerd.js';
import { killAllLaunched, launchTracked, type TrackedRunner } from './support/launched-runners.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/** Runners in a bubblewrap sandbox: no daemon, the session bound at /workspace, only loopback, a clean environment. */
const skip = onPath('bwrap') ? undefined : 'bubblewrap is not installed (.ci/run installs it as root)';
if (skip) console.warn(`[container] skipping bwrap tests: ${skip}`);

const launcher = new BwrapLauncher({ appRoot: packageRoot(BUILT_CLI), node: process.execPath, isolateNetwork: true, extraEnv: [] }, BUILT_CLI);
const env = { AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_POLL_IDLE_MS: '60000' };

async function hostPid(runner: TrackedRunner): Promise<number> {
  return waitFor('the runner inside bwrap', () => runnerUnder(runner.handle.child.pid!));
}

async function replyTo(s: TestSession, text: string): Promise<{ latencyMs: number; text: string }> {
  const { id } = s.chat(text);
  const row = await waitFor(`reply to ${text}`, () => s.outbound().find((r) => r.in_reply_to === id));
  return { latencyMs: Date.parse(row.timestamp) - Date.parse(s.inbound(id).timestamp), text: String(JSON.parse(row.content).text) };
}

describe.skipIf(skip !== undefined)('runners in a bubblewrap sandbox', () => {
  afterEach(async () => {
    expect(await killAllLaunched()).toBe(0);
    cleanupSessions();
  });

  it('answers through /workspace, woken by inotify, and exits 0 on stop()', async () => {
    const s = createTestSession();
    const started = performance.now();
    const runner = launchTracked(launcher, { workspace: s.paths.root, env });
    await runner.ready();
    const startToReadyMs = performance.now() - started;
    expect((await replyTo(s, 'hi bwrap')).text).toMatch(/<message id="1" sender="alice"[^>]*>hi bwrap<\/message>/);
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) latencies.push((await replyTo(s, `m${i}`)).latencyMs);
    latencies.sort((a, b) => a - b);
    console.log(
      `[container] bwrap: start → ready ${Math.round(startToReadyMs)} ms; insert → reply p50 ${latencies[10]} ms, max ${latencies.at(-1)} ms (20 messages)`,
    );
    const pid = await hostPid(runner);
    expect(await runner.handle.stop()).toBe(0);
    expect(runner.stderr()).toContain('[runner] stopped');
    expect(isAlive(pid)).toBe(false);
  });

  it('sees only loopback, only the runner environment, and has no capabilities', async () => {
    const s = createTestSession();
    const runner = launchTracked(launcher, { workspace: s.paths.root, env: { ...env, PINCER_HTTP_TOKEN: 'secret', OPENAI_API_KEY: 'sk-x' } });
    await runner.ready();
    const pid = await hostPid(runner);
    const interfaces = fs
      .readFileSync(`/proc/${pid}/net/dev`, 'utf8')
      .split('\n')
      .slice(2)
      .map((line) => line.split(':')[0]!.trim())
      .filter(Boolean);
    expect(interfaces).toEqual(['lo']);
    const names = fs
      .readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((e) => e.split('=')[0])
      .sort();
    expect(names).toEqual([
      'AGENT_PROVIDER',
      'HOME',
      'PATH',
      'PINCER_POLL_IDLE_MS',
      'PINCER_SANDBOX_NO_NETWORK',
      'PINCER_STOP_ON_STDIN_EOF',
      'PINCER_WORKSPACE',
      'PWD',
      'TZ',
    ]);
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    expect(/^CapEff:\s*(\w+)$/m.exec(status)?.[1]).toBe('0000000000000000');
    expect(/^NoNewPrivs:\s*(\d)$/m.exec(status)?.[1]).toBe('1');
    // the host's /etc is not there, only a few files of it
    expect(fs.readdirSync(`/proc/${pid}/root/etc`).sort()).not.toContain('shadow');
    expect(fs.existsSync(`/proc/${pid}/root/etc/passwd`)).toBe(true);
    expect(await runner.handle.stop()).toBe(0);
  });

  it('kill() mid-query ends the whole sandbox and loses no message', async () => {
    const s = createTestSession();
    const runner = launchTracked(launcher, { workspace: s.paths.root, env: { ...env, MOCK_DELAY_MS: '60000' } });
    await runner.ready();
    const pid = await hostPid(runner);
    const { id } = s.chat('keep me');
    await waitFor('processing', () => s.inbound(id).status === 'processing');
    expect(await runner.handle.kill()).toBe('SIGKILL');
    await waitFor('the sandboxed runner gone', () => !isAlive(pid));
    expect(s.inbound(id)).toMatchObject({ status: 'processing', tries: 1 });
    s.db.prepare("UPDATE messages_in SET status = 'pending' WHERE id = ?").run(id);
    const again = launchTracked(launcher, { workspace: s.paths.root, env });
    await waitFor('completed after restart', () => s.inbound(id).status === 'completed');
    expect(await again.handle.stop()).toBe(0);
  });
});
