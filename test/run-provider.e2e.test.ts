/**
 * `--provider` of `pincer host` and `pincer chat` is for that run: the agent group's saved provider stays, the next
 * run without the flag gets it again and `pincer doctor` says the same; `--save` makes it the group's. A chat attached
 * to a running host cannot choose another provider, and a refused chat exits 2. Real processes: the host, piped
 * chats, the host's runner child on the mock provider.
 */
import Database from 'better-sqlite3';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

const homes: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

/** A key, so that `auto` has a provider to choose (Claude Code): nothing here sends it a message. */
const ENV = {
  PATH: process.env.PATH,
  TZ: 'UTC',
  CLAUDE_CONFIG_DIR: path.join(os.tmpdir(), 'pincer-no-claude-login'),
  PINCER_RUNNER: 'process',
  ANTHROPIC_API_KEY: 'sk-ant-run-provider-test',
};

function run(home: string, args: string[], input?: string) {
  const child = spawn(process.execPath, [BUILT_CLI, ...args], {
    env: { ...ENV, HOME: home, PINCER_HOME: home },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  if (input !== undefined) child.stdin!.end(input);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

function doctor(home: string): string {
  return spawnSync(process.execPath, [BUILT_CLI, 'doctor'], { env: { ...ENV, HOME: home, PINCER_HOME: home }, encoding: 'utf8', timeout: 60_000 }).stdout;
}

function savedProvider(home: string): string {
  const db = new Database(path.join(home, 'pincer.db'), { readonly: true });
  try {
    return (db.prepare("SELECT provider FROM agent_groups WHERE name = 'main'").get() as { provider: string }).provider;
  } finally {
    db.close();
  }
}

function hasChatSocket(home: string): boolean {
  try {
    return (JSON.parse(fs.readFileSync(path.join(home, 'host.lock'), 'utf8')) as { chatSocket?: string }).chatSocket !== undefined;
  } catch {
    return false; // not written yet
  }
}

async function startHost(home: string, args: string[] = []) {
  const host = run(home, ['host', ...args]);
  await waitFor('the host to serve its chat socket', () => hasChatSocket(home), { timeoutMs: 60_000 });
  return host;
}

async function stop(host: ReturnType<typeof run>): Promise<void> {
  host.child.kill('SIGTERM');
  expect(await host.exited).toBe(0);
}

describe('--provider is for this run unless --save', { timeout: 180_000 }, () => {
  it('pincer host: the next run without it runs the saved provider again, and doctor agrees; --save keeps it', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-run-provider-'));
    homes.push(home);

    const first = await startHost(home, ['--provider', 'mock']);
    expect(first.stderr()).toContain('agent group main: provider mock for this run (--provider; saved: auto)');
    const chat = run(home, ['chat'], 'hello mock\n');
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toMatch(/^agent> echo: [\s\S]*>hello mock<\/message>/m);
    // A chat attached to this host may name the provider it runs, not another one (exit 2, nothing sent).
    const other = run(home, ['chat', '--provider', 'claude'], 'not sent\n');
    expect(await other.exited).toBe(2);
    expect(other.stderr()).toMatch(/^pincer: --provider claude: pincer host \(pid \d+\) runs this home, and its agent group main answers with provider mock; /);
    const same = run(home, ['chat', '--provider', 'mock'], 'same provider\n');
    expect(await same.exited).toBe(0);
    expect(same.stdout()).toMatch(/>same provider<\/message>/);
    expect(savedProvider(home)).toBe('auto');
    await stop(first);
    // the chat's session too: its config.json still names the run's mock, its group's saved provider decides
    expect(doctor(home)).toMatch(/^session chat \(.*\)\n {2}provider: claude — auto \(session policy "auto"\)/m);

    const second = await startHost(home);
    expect(second.stderr()).not.toContain('for this run');
    const refused = run(home, ['chat', '--provider', 'mock'], 'not sent\n');
    expect(await refused.exited).toBe(2);
    expect(refused.stderr()).toContain('its agent group main answers with provider auto;');
    await stop(second);
    const report = doctor(home);
    expect(report).toMatch(/^pincer host would run: claude — auto \(session policy "auto"\): .*\(agent group main\)$/m);
    expect(report).toMatch(/^pincer chat would run: claude — auto \(session policy "auto"\)/m);

    const saving = await startHost(home, ['--provider', 'mock', '--save']);
    expect(saving.stderr()).toContain('agent group main: provider mock saved (--provider --save; was auto)');
    await stop(saving);
    expect(savedProvider(home)).toBe('mock');
    expect(doctor(home)).toMatch(/^pincer host would run: mock — session policy "mock" \(agent group main\)$/m);
  });

  it('pincer chat: --provider leaves the group as it was, --save changes it', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-run-provider-'));
    homes.push(home);
    const once = run(home, ['chat', '--provider', 'mock'], 'hi\n');
    expect(await once.exited).toBe(0);
    expect(once.stdout()).toMatch(/^agent> echo: /m);
    expect(savedProvider(home)).toBe('auto');
    expect(doctor(home)).toMatch(/^pincer chat would run: claude — auto /m);

    const saved = run(home, ['chat', '--provider', 'mock', '--save'], 'hi\n');
    expect(await saved.exited).toBe(0);
    expect(savedProvider(home)).toBe('mock');
    // without --provider the chat runs its group's saved provider
    const plain = run(home, ['chat'], 'plain\n');
    expect(await plain.exited).toBe(0);
    expect(plain.stdout()).toMatch(/>plain<\/message>/);
    expect(doctor(home)).toMatch(/^pincer chat would run: mock — session policy "mock"$/m);
  });

  it('a second chat while one is attached is refused with exit 2', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-run-provider-'));
    homes.push(home);
    const host = await startHost(home, ['--provider', 'mock']);
    const first = run(home, ['chat']); // stays attached: its input is still open
    await waitFor('the first chat to attach', () => host.stderr().includes('pincer chat attached'), { timeoutMs: 60_000 });
    const second = run(home, ['chat'], 'refused\n');
    expect(await second.exited).toBe(2);
    expect(second.stderr()).toBe('pincer: another pincer chat is attached to this host; leave that one first (see pincer chat --help)\n');
    first.child.stdin!.end();
    expect(await first.exited).toBe(0);
    await stop(host);
  });
});
