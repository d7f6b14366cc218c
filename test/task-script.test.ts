import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isAlive } from './support/processes.js';
import { DEFAULT_SCRIPT_TIMEOUT_MS, runTaskScript, scriptEnvironment } from '../src/runner/task-script.js';
import { waitFor } from './support/wait.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function tmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-script-test-'));
  dirs.push(dir);
  return dir;
}

const env = { PATH: process.env.PATH, HOME: '/tmp', TZ: 'UTC', LANG: 'C.UTF-8', ANTHROPIC_API_KEY: 'sk-secret', GITHUB_TOKEN: 'ghp-secret', ALLOWED_ONE: 'ok' };
const run = (script: string, timeoutMs = 10_000) => runTaskScript(script, { cwd: tmp(), env, timeoutMs, allowEnv: ['ALLOWED_ONE'] });

describe('task pre-scripts', () => {
  it('defaults to a timeout of 30 s', () => {
    expect(DEFAULT_SCRIPT_TIMEOUT_MS).toBe(30_000);
  });

  it('wakes the agent with the data of the last stdout line', async () => {
    expect(await run(`echo "some log"\necho '{"wakeAgent": true, "data": {"open": 3}}'`)).toEqual({ ok: true, wakeAgent: true, data: { open: 3 } });
  });

  it('skips the agent on wakeAgent false', async () => {
    expect(await run(`echo '{"wakeAgent": false}'`)).toEqual({ ok: true, wakeAgent: false, data: undefined });
  });

  it.each([
    ['exits 1', 'echo oops >&2; exit 1', /^script exited with 1: oops$/],
    ['prints garbage', 'echo "not json at all"', /^script's last line is not JSON: not json at all$/],
    ['prints nothing', 'true', /^script printed nothing/],
    ['prints JSON of the wrong shape', `echo '{"wake": true}'`, /^script's last line is not \{wakeAgent, data\}: wakeAgent: /],
  ])('fails clearly when the script %s', async (_name, script, error) => {
    const outcome = await run(script);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.error).toMatch(error);
  });

  it('kills a hanging script and its children at the timeout', async () => {
    const dir = tmp();
    const pidFile = path.join(dir, 'child.pid');
    const outcome = await run(`sleep 60 & echo $! > ${pidFile}\nsleep 60\n`, 1000);
    expect(outcome).toEqual({ ok: false, error: 'script timed out after 1000 ms and was killed' });
    const child = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor('background child killed', () => !isAlive(child), { timeoutMs: 5000 });
  });

  it('kills children a script leaves behind when it exits', async () => {
    const dir = tmp();
    const pidFile = path.join(dir, 'child.pid');
    expect(await run(`sleep 60 & echo $! > ${pidFile}\necho '{"wakeAgent": false}'`)).toEqual({ ok: true, wakeAgent: false, data: undefined });
    const child = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor('left-behind child killed', () => !isAlive(child), { timeoutMs: 5000 });
  });

  it('never sees secrets: only PATH, HOME, TZ, LANG and allowed names', async () => {
    const outcome = await run(
      `printf '{"wakeAgent": true, "data": {"key": "%s", "token": "%s", "allowed": "%s", "names": "%s"}}\\n' "$ANTHROPIC_API_KEY" "$GITHUB_TOKEN" "$ALLOWED_ONE" "$(env | cut -d= -f1 | grep -v '^_$' | grep -v '^PWD$' | grep -v '^SHLVL$' | grep -v '^OLDPWD$' | sort | tr '\\n' ' ')"`,
    );
    expect(outcome).toEqual({ ok: true, wakeAgent: true, data: { key: '', token: '', allowed: 'ok', names: 'ALLOWED_ONE HOME LANG PATH TZ ' } });
    expect(Object.keys(scriptEnvironment(env, [])).sort()).toEqual(['HOME', 'LANG', 'PATH', 'TZ']);
  });
});
