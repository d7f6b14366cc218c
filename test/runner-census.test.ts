import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { liveRunners } from '../bench/runner-census.js';
import { waitFor } from './support/wait.js';
import { descendants } from './support/processes.js';

/**
 * The fault suite's census of live runners reads /proc: a child the runner forked and that has not exec'd its own
 * program yet shows the runner's command line and environment, and is not a second runner. A stand-in "runner" here is
 * a shell named `node` whose last argument is `runner`, with a subshell (a fork that never execs) inside.
 */
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.pid) process.kill(-child.pid, 'SIGKILL');
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the runner census', () => {
  it('counts a runner once, not the fork it has not exec’d yet', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-census-'));
    dirs.push(home);
    fs.symlinkSync('/bin/sh', path.join(home, 'node'));
    const child = spawn(path.join(home, 'node'), ['-c', '( sleep 60; true ) & wait', 'sh', 'runner'], {
      env: { PINCER_WORKSPACE: home },
      detached: true,
      stdio: 'ignore',
    });
    children.push(child);
    // the subshell (same command line, same environment) and its sleep are up
    await waitFor('the fork', () => descendants(child.pid!).some((pid) => readCmd(String(pid)) === 'sleep\u000060'));
    expect([...liveRunners(home).values()]).toEqual([[child.pid]]);
  });
});

function readCmd(pid: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0$/, '');
  } catch {
    return '';
  }
}
