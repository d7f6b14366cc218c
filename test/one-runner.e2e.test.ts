import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { liveRunners } from '../bench/runner-census.js';
import { BwrapLauncher, ProcessLauncher, type RunnerLauncher } from '../src/container/index.js';
import { packageRoot } from '../src/container/config.js';
import { launchLockHeld } from '../src/container/handle.js';
import { onPath } from './support/dockerd.js';
import { killAllLaunched, launchTracked } from './support/launched-runners.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * Never two runners for one session, enforced by the operating system: the launch lock (a host-owned file locked for
 * the life of the runner's processes) makes a second start wait until the first runner has ended, and a runner whose
 * host died — even in the first milliseconds of its start, before bwrap arms `--die-with-parent` — ends by itself.
 */
const HOST_SCRIPT = fileURLToPath(new URL('./support/launcher-host.mjs', import.meta.url));
const bwrapSkip = onPath('bwrap') ? undefined : 'bubblewrap is not installed (.ci/run installs it as root)';
const bwrapSettings = { appRoot: packageRoot(BUILT_CLI), node: process.execPath, isolateNetwork: true, extraEnv: [] };
const kinds: Array<{ kind: 'process' | 'bwrap'; launcher: RunnerLauncher; skip: string | undefined }> = [
  { kind: 'process', launcher: new ProcessLauncher(BUILT_CLI), skip: undefined },
  { kind: 'bwrap', launcher: new BwrapLauncher(bwrapSettings, BUILT_CLI), skip: bwrapSkip },
];
const env = { PATH: process.env.PATH, AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_POLL_IDLE_MS: '60000' };
const lockDirs: string[] = [];

function lockFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-lock-'));
  lockDirs.push(dir);
  return path.join(dir, 'session.lock');
}

afterEach(async () => {
  expect(await killAllLaunched()).toBe(0);
  cleanupSessions();
  for (const dir of lockDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe.each(kinds)('one runner per session ($kind)', ({ kind, launcher, skip }) => {
  it.skipIf(skip !== undefined)(
    'a second start waits for the first runner to end, then starts',
    async () => {
      const s = createTestSession();
      const lock = lockFile();
      const first = launchTracked(launcher, { workspace: s.paths.root, env, lockFile: lock });
      await first.ready();
      const second = launchTracked(launcher, { workspace: s.paths.root, env, lockFile: lock });
      await waitFor('the second start waiting', () => second.stderr().includes('[launcher] waiting for the previous runner of this session to end'));
      // it holds off for as long as the first runs: give it a moment in which it could wrongly start
      const { id } = s.chat('who answers?');
      await waitFor('the first answers', () => s.outbound().some((r) => r.in_reply_to === id));
      expect(second.stderr()).not.toContain('[runner] ready');
      expect([...liveRunners(s.paths.root).values()].map((pids) => pids.length)).toEqual([1]);
      expect(await first.handle.stop()).toBe(0);
      await second.ready();
      expect(second.stderr()).toContain('[launcher] the previous runner ended');
      expect(await second.handle.stop()).toBe(0);
    },
    120_000,
  );

  it.skipIf(skip !== undefined)(
    'a runner whose host is SIGKILLed at any moment of its start ends by itself, and holds the lock until then',
    async () => {
      const s = createTestSession();
      const lock = lockFile();
      // killed as soon as it has spawned the launcher: before bwrap has armed --die-with-parent, the case that leaked
      for (const delayMs of [0, 0, 5, 20, 200]) {
        const logFile = path.join(s.paths.root, `runner-${delayMs}.log`);
        const spec = {
          kind,
          settings: bwrapSettings,
          cliEntry: BUILT_CLI,
          workspace: s.paths.root,
          logFile,
          lockFile: lock,
          env: { PINCER_POLL_IDLE_MS: '60000' },
        };
        const host = spawn(process.execPath, [HOST_SCRIPT, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        host.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
        await waitFor('launched', () => /launched \d+/.test(out));
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        host.kill('SIGKILL');
        await waitFor(`no runner left (host killed ${delayMs} ms after the launch)`, () => liveRunners(s.paths.root).size === 0 && !locked(lock), {
          timeoutMs: 30_000,
        });
      }
    },
    240_000,
  );
});

describe('launchLockHeld', () => {
  it('says whether a process holds the lock: yes while one does, no once it has ended, no for a file never made', async () => {
    const lock = lockFile();
    expect(launchLockHeld(lock)).toBe(false);
    const holder = spawn('flock', [lock, 'sleep', '60'], { stdio: 'ignore', detached: true }); // its sleep holds the lock too
    try {
      await waitFor('the lock taken', () => locked(lock));
      expect(launchLockHeld(lock)).toBe(true);
    } finally {
      process.kill(-holder.pid!, 'SIGKILL');
    }
    await waitFor('the lock let go', () => !locked(lock));
    expect(launchLockHeld(lock)).toBe(false);
  });
});

/** Whether someone holds the lock (`flock -n` cannot take it). */
function locked(file: string): boolean {
  return fs.existsSync(file) && spawnSync('flock', ['-n', file, 'true']).status !== 0;
}
