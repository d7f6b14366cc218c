import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadHostConfig } from '../src/host/config.js';
import { started, type LaunchRunner } from '../src/host/launchers.js';
import { RunnerSupervisor, type RunnerExit } from '../src/host/session/runners.js';
import { createLogger } from '../src/shared/log.js';
import { waitFor } from './support/wait.js';

/**
 * A runner has ended when its launcher says so (`exited`), not when its local process did: a Docker CLI that was
 * SIGKILLed leaves its container running until the launcher has removed it, and while it runs its rows are still its
 * own. The supervisor kept the session's runner until then (it used to forget it at the CLI's exit, the sweep put the
 * container's messages back to pending, the container answered them, and the next runner answered them again).
 */
const silent = createLogger('host', () => undefined);
const homes: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  // a test that failed before its child was killed leaves none behind
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

describe('the runner supervisor', () => {
  it("keeps a runner whose local process exited until its launcher's end (a container still being removed)", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-exit-'));
    homes.push(home);
    const config = loadHostConfig({ TZ: 'UTC', PINCER_HOME: home, AGENT_PROVIDER: 'mock' });
    let removed!: (code: number | string) => void;
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: ['pipe', 'ignore', 'ignore'] });
    children.push(child);
    const launch: LaunchRunner = () => {
      const exited = new Promise<number | string>((resolve) => (removed = resolve));
      return started({ kind: 'docker', child, containerName: 'pincer-runner-s-1', exited, stop: () => exited, kill: () => exited }, () => undefined);
    };
    const exits: RunnerExit[] = [];
    const supervisor = new RunnerSupervisor({ ...config.runners, kind: 'docker' }, silent, (exit) => exits.push(exit), launch);
    expect(
      supervisor.start({
        sessionId: 's-1',
        folder: home,
        provider: 'mock',
        timezone: 'UTC',
        groupDir: home,
        globalDir: home,
        logFile: path.join(home, 'runner.log'),
      }),
    ).toBe(true);
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL'); // the docker CLI dies; its container has not been removed yet
    await gone;
    await new Promise((resolve) => setImmediate(resolve));
    expect(supervisor.isRunning('s-1')).toBe(true);
    expect(exits).toEqual([]);
    removed('SIGKILL'); // the launcher removed the container
    await waitFor('the exit reported', () => exits.length === 1);
    expect(supervisor.isRunning('s-1')).toBe(false);
    expect(exits[0]).toMatchObject({ sessionId: 's-1', code: 'SIGKILL', requested: false, crashes: 1 });
  });
});
