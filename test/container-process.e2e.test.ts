import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from './support/processes.js';
import { createLauncher, loadLauncherConfig } from '../src/container/index.js';
import { killAllLaunched, launchTracked } from './support/launched-runners.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

const HOST_SCRIPT = fileURLToPath(new URL('./support/launcher-host.mjs', import.meta.url));

/** The default launcher (PINCER_RUNNER unset): a plain child process behind the same handle as the sandboxes. */
afterEach(async () => {
  expect(await killAllLaunched()).toBe(0);
  cleanupSessions();
});

describe('the process launcher', () => {
  it('is the default, answers, and stop() exits 0; kill() ends it with SIGKILL', async () => {
    const launcher = createLauncher(loadLauncherConfig({}, BUILT_CLI));
    expect(launcher.kind).toBe('process');
    const s = createTestSession();
    const env = { PATH: process.env.PATH, AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_POLL_IDLE_MS: '60000' };
    const started = performance.now();
    const runner = launchTracked(launcher, { workspace: s.paths.root, env });
    await runner.ready();
    const startToReadyMs = performance.now() - started;
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const { id } = s.chat(`m${i}`);
      const row = await waitFor('reply', () => s.outbound().find((r) => r.in_reply_to === id));
      latencies.push(Date.parse(row.timestamp) - Date.parse(s.inbound(id).timestamp));
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `[container] process: start → ready ${Math.round(startToReadyMs)} ms; insert → reply p50 ${latencies[10]} ms, max ${latencies.at(-1)} ms (20 messages)`,
    );
    expect(runner.handle.containerName).toBeUndefined();
    expect(await runner.handle.stop()).toBe(0);
    expect(await runner.handle.stop()).toBe(0); // again: same result, no throw

    const second = launchTracked(launcher, { workspace: s.paths.root, env });
    await second.ready();
    expect(await second.handle.kill()).toBe('SIGKILL');
  });

  it('a host that dies (SIGKILL) leaves no runner: the runner sees stdin close and stops cleanly', async () => {
    const s = createTestSession();
    const logFile = path.join(s.paths.root, 'runner.log');
    const host = spawn(process.execPath, [HOST_SCRIPT, JSON.stringify({ kind: 'process', cliEntry: BUILT_CLI, workspace: s.paths.root, logFile })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    host.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    try {
      await waitFor('runner ready', () => fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('[runner] ready'));
      const runnerPid = Number(/launched (\d+)/.exec(out)?.[1]);
      expect(isAlive(runnerPid)).toBe(true);
      host.kill('SIGKILL');
      await waitFor('the orphaned runner gone', () => !isAlive(runnerPid));
      expect(fs.readFileSync(logFile, 'utf8')).toContain('[runner] stopped');
    } finally {
      host.kill('SIGKILL');
    }
  });
});
