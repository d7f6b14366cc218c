/**
 * examples/systemd/pincer-host.service, the documented way to keep a host running (docs/cli.md): systemd accepts it
 * (`systemd-analyze verify`, where systemd is installed), its ExecStart starts a host from the clone the way systemd
 * would run it, and systemd's stop (SIGTERM to the main process, KillMode=mixed) ends that host cleanly — exit 0, so
 * Restart=on-failure does not start it again — well within TimeoutStopSec. Only the port differs: 0 instead of 8080.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const UNIT = path.join(ROOT, 'examples', 'systemd', 'pincer-host.service');
const homes: string[] = [];
const pids: number[] = [];

afterEach(() => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone: the test stopped it
    }
  }
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

/** The unit's settings by section, in order (systemd's syntax: `[Section]`, `Key=value`, `#`/`;` comments). */
function parseUnit(text: string): Map<string, [string, string][]> {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(\w+)\]$/.exec(line);
    if (section) {
      current = [];
      sections.set(section[1]!, current);
      continue;
    }
    const setting = /^(\w+)=(.*)$/.exec(line);
    if (!setting || !current) throw new Error(`not a unit line: ${raw}`);
    current.push([setting[1]!, setting[2]!]);
  }
  return sections;
}

function setting(unit: Map<string, [string, string][]>, section: string, key: string): string {
  const value = unit.get(section)?.find(([k]) => k === key)?.[1];
  if (value === undefined) throw new Error(`[${section}] has no ${key}`);
  return value;
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => {
    try {
      fs.accessSync(path.join(dir, command), fs.constants.X_OK);
      return true;
    } catch {
      // not in this folder of the PATH
      return false;
    }
  });
}

describe('the systemd user unit example', () => {
  const unit = parseUnit(fs.readFileSync(UNIT, 'utf8'));

  it('is a unit systemd accepts, whose ExecStart runs the clone’s pincer host', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(setting(unit, 'Install', 'WantedBy')).toBe('default.target'); // a user unit: started with the user's manager
    expect(setting(unit, 'Service', 'KillMode')).toBe('mixed');
    expect(Number(setting(unit, 'Service', 'TimeoutStopSec'))).toBeGreaterThanOrEqual(60); // pincer host stop's own wait
    const argv = setting(unit, 'Service', 'ExecStart').split(' ');
    expect(argv.slice(0, 3)).toEqual(['/usr/bin/env', 'node', 'bin/pincer.js']);
    expect(argv.slice(3)).toEqual(['host', '--http', '8080']);
    fs.accessSync(argv[0]!, fs.constants.X_OK);
    expect(onPath('node')).toBe(true);
    expect(fs.existsSync(path.join(ROOT, argv[2]!))).toBe(true); // relative to WorkingDirectory, the clone
    const verify = spawnSync('systemd-analyze', ['verify', '--man=no', UNIT], { encoding: 'utf8', timeout: 60_000 });
    if (verify.error) return; // no systemd on this machine: the checks above are what can be checked
    expect(verify.stderr).toBe(''); // an unknown key or a bad value is a warning on stderr
    expect(verify.status).toBe(0);
  });

  it('its ExecStart starts a host, and systemd’s stop (SIGTERM) ends it cleanly with exit 0', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-systemd-'));
    homes.push(home);
    const specifier = (value: string) => value.replaceAll('%h', home); // %h: the user's home folder
    const environment = Object.fromEntries(
      unit
        .get('Service')!
        .filter(([key]) => key === 'Environment')
        .map(([, value]) => specifier(value).split('=', 2) as [string, string]),
    );
    expect(environment.PINCER_HOME).toBe(path.join(home, '.pincer'));
    const argv = setting(unit, 'Service', 'ExecStart').replace('--http 8080', '--http 0').split(' ');
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: ROOT, // WorkingDirectory=%h/pincer: the clone
      env: { PATH: process.env.PATH, HOME: home, TZ: 'UTC', PINCER_RUNNER: 'process', CLAUDE_CONFIG_DIR: path.join(home, 'no-claude-login'), ...environment },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    pids.push(child.pid!);
    let log = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const status = () =>
      spawnSync(process.execPath, [BUILT_CLI, 'host', 'status'], {
        env: { PATH: process.env.PATH, HOME: home, ...environment },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const running = await waitFor('the host to say its URL', () => /^url http:\/\/127\.0\.0\.1:\d+\/$/m.test(status().stdout) && status(), {
      timeoutMs: 90_000,
      intervalMs: 250,
    });
    expect(running.stdout).toMatch(new RegExp(`^host running: pid ${child.pid} since `));
    expect(running.stdout).toContain('channels: http\n');
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(log).toMatch(/\[host\] stopped\n$/);
    expect(fs.existsSync(path.join(environment.PINCER_HOME!, 'host.lock'))).toBe(false);
  }, 180_000);
});
