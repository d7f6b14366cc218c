/**
 * `pincer host` as a process: without a channel it keeps running (schedules still fire) and says so in one line,
 * stops cleanly on SIGTERM and leaves no `host.lock`; one that cannot start says why in one line and leaves no lock;
 * a group whose agent cannot start is named at start; `--provider` sets the default group's provider; every log line
 * carries its time.
 */
import Database from 'better-sqlite3';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

const homes: string[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function makeHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-cli-'));
  homes.push(home);
  return home;
}

// Plain child-process runners, so the host's only start-up line is the one under test (auto would name a sandbox).
const ENV = { PATH: process.env.PATH, TZ: 'UTC', CLAUDE_CONFIG_DIR: path.join(os.tmpdir(), 'pincer-no-claude-login'), PINCER_RUNNER: 'process' };

function startHost(home: string, args: string[] = []) {
  const child = spawn(process.execPath, [BUILT_CLI, 'host', '--home', home, ...args], { env: { ...ENV, HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z /;

describe('pincer host', () => {
  it('without a channel runs, says so in one line, and stops on SIGTERM leaving no lock', async () => {
    const home = makeHome();
    const host = startHost(home, ['--provider', 'mock']);
    await waitFor('the no-channel line', () => host.stderr().includes('no channel enabled'), { timeoutMs: 30_000 });
    const lines = host.stderr().trim().split('\n');
    expect(lines.find((l) => l.includes('no channel enabled'))).toMatch(
      /\[host\] no channel enabled: scheduled tasks still run; add --http PORT to reach the agents/,
    );
    expect(lines.find((l) => l.includes('ready:'))).toMatch(/\[host\] ready: home .*, 0 session\(s\), channels none$/);
    for (const line of lines) expect(line).toMatch(TIME);
    // Still running well after it was ready (it used to exit with code 13 here, leaving host.lock behind).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(host.child.exitCode).toBeNull();
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(true);
    host.child.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
  });

  it('that cannot start says why in one line, exits 2 and leaves no lock', async () => {
    const home = makeHome();
    fs.writeFileSync(path.join(home, 'pincer.db'), 'not a database'.repeat(100));
    const host = startHost(home);
    expect(await host.exited).toBe(2);
    expect(host.stderr().trim().split('\n')).toHaveLength(1);
    expect(host.stderr()).toMatch(/^pincer: file is not a database \(see pincer host --help\)\n$/);
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
  });

  it('refuses a taken --http port in one line before anything starts, exit 2, no lock and no token written', async () => {
    const home = makeHome();
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const host = startHost(home, ['--http', String(port), '--provider', 'mock']);
      expect(await host.exited).toBe(2);
      expect(host.stderr()).toBe(
        `pincer: --http ${port}: 127.0.0.1:${port} is taken by another program; stop it, or choose another port (--http 0 picks a free one) (see pincer host --help)\n`,
      );
      expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
      expect(fs.existsSync(path.join(home, 'http-token'))).toBe(false);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('refuses a model base URL it cannot forward to in one line naming the variable, exits 2 and leaves no lock', async () => {
    const home = makeHome();
    for (const env of [{ OPENAI_BASE_URL: 'localhost:11434/v1' }, { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: 'api.anthropic.com' }]) {
      const host = spawnSync(process.execPath, [BUILT_CLI, 'host', '--home', home, '--provider', 'mock'], {
        env: { ...ENV, HOME: home, ...env },
        encoding: 'utf8',
        timeout: 20_000,
      });
      const [name, value] = Object.entries(env).at(-1)!;
      expect(host.status).toBe(2);
      expect(host.stderr.trim().split('\n').at(-1)).toBe(
        `pincer: ${name}: "${value}" is not an http or https URL (write it with its scheme, e.g. http://127.0.0.1:11434/v1) (see pincer host --help)`,
      );
      expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
    }
  });

  it('names a group whose agent cannot start, and --provider runs the default group on another for this run', async () => {
    const home = makeHome();
    const first = startHost(home);
    await waitFor('the start-up lines', () => first.stderr().includes('no channel enabled'), { timeoutMs: 30_000 });
    expect(first.stderr()).toMatch(
      /\[host\] warn: agent group main cannot start its agent: auto \(session policy "auto"\): no provider is usable and the fallback "claude" has no credentials: set ANTHROPIC_API_KEY/,
    );
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = startHost(home, ['--provider', 'mock']);
    await waitFor('ready', () => second.stderr().includes('no channel enabled'), { timeoutMs: 30_000 });
    expect(second.stderr()).toContain('[host] agent group main: provider mock for this run (--provider; saved: auto)');
    expect(second.stderr()).not.toContain('cannot start its agent');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    const db = new Database(path.join(home, 'pincer.db'), { readonly: true });
    expect(db.prepare(`SELECT provider FROM agent_groups WHERE name = 'main'`).get()).toEqual({ provider: 'auto' });
    db.close();
  });

  it('refuses a second host on the same home in one line', async () => {
    const home = makeHome();
    const first = startHost(home, ['--provider', 'mock']);
    await waitFor('ready', () => first.stderr().includes('no channel enabled'), { timeoutMs: 30_000 });
    const second = spawnSync(process.execPath, [BUILT_CLI, 'host', '--home', home], { env: { ...ENV, HOME: home }, encoding: 'utf8', timeout: 20_000 });
    expect(second.status).toBe(2);
    expect(second.stderr).toMatch(
      /^pincer: another host \(pid \d+\) is using .*; stop it first \(pincer host stop\) or use another PINCER_HOME \(see pincer host --help\)\n$/,
    );
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  it('host status and host stop find a host started in the background of a script, by the home lock', async () => {
    const home = makeHome();
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [BUILT_CLI, ...args], { env: { ...ENV, HOME: home, PINCER_HOME: home }, encoding: 'utf8', timeout: 120_000 });
    // The script that started it is gone at once: no shell job or $! to kill, as in a walkthrough pasted twice.
    const log = path.join(home, 'host.log');
    const script = spawnSync(
      'bash',
      ['-c', `${JSON.stringify(process.execPath)} ${JSON.stringify(BUILT_CLI)} host --http 0 --provider mock 2> ${JSON.stringify(log)} &`],
      {
        env: { ...ENV, HOME: home, PINCER_HOME: home },
        timeout: 20_000,
      },
    );
    expect(script.status).toBe(0);
    await waitFor('the host to listen', () => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('http channel listening'), { timeoutMs: 60_000 });
    await waitFor('the lock to name the URL', () => fs.readFileSync(path.join(home, 'host.lock'), 'utf8').includes('"url"'), { timeoutMs: 30_000 });
    const status = cli('host', 'status');
    expect(status.status).toBe(0);
    const port = /http:\/\/127\.0\.0\.1:(\d+)/.exec(fs.readFileSync(log, 'utf8'))![1];
    expect(status.stdout).toMatch(
      new RegExp(
        `^host running: pid (\\d+) since \\d{4}-\\d{2}-\\d{2}T[^ ]+Z \\(\\d+ (s|min)\\)\\nhome ${home}\\nchannels: http\\nurl http://127\\.0\\.0\\.1:${port}/\\npincer chat attaches through ${home}/chat\\.sock\\n$`,
      ),
    );
    const pid = Number(/pid (\d+)/.exec(status.stdout)![1]);
    const stop = cli('host', 'stop');
    expect(stop.status).toBe(0);
    expect(stop.stdout).toBe(`stopped the host (pid ${pid}) on ${home}\n`);
    // stopped, not only signalled: the process is gone, the lock released, the log ends with its last line
    // (gone, or a zombie its new parent has not reaped yet: it has exited either way)
    expect(hasExited(pid)).toBe(true);
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
    expect(fs.readFileSync(log, 'utf8')).toMatch(/\[host\] stopped\n$/);
    // nothing to stop: one line, exit 3 (as status says none runs)
    expect(cli('host', 'stop')).toMatchObject({
      status: 3,
      stdout: '',
      stderr: `pincer: no host is running on ${home}: nothing to stop (for a host on another home: --home DIR or PINCER_HOME)\n`,
    });
    expect(cli('host', 'status', '--home', home)).toMatchObject({ status: 3, stdout: `no host is running on ${home}\n` });
  }, 180_000);
});

function hasExited(pid: number): boolean {
  try {
    return /\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    // no such process
    return true;
  }
}
