import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSessionFolder } from '../src/db/layout.js';
import { BUILT_CLI } from './support/runner-harness.js';

const homes: string[] = [];

afterEach(() => {
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function makeHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-doctor-'));
  homes.push(home);
  return home;
}

function doctor(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BUILT_CLI, 'doctor', ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

describe('pincer doctor', () => {
  it('shows the provider each session would run and why, and its resources', () => {
    const home = makeHome();
    const ok = createSessionFolder(path.join(home, 'sessions', 'ok'));
    fs.writeFileSync(ok.config, JSON.stringify({ provider: 'echo' }));
    fs.mkdirSync(path.join(ok.agent, 'prompts'));
    fs.writeFileSync(path.join(ok.agent, 'prompts', 'review.md'), 'Review $ARGUMENTS');
    const group = createSessionFolder(path.join(home, 'sessions', 'group'));
    fs.writeFileSync(group.config, JSON.stringify({ groupProvider: 'MOCK' }));

    const { code, out } = doctor(['--home', home]);
    expect(out).toMatch(/^ {2}mock +ok \(never chosen by auto\)$/m);
    expect(out).toContain(`session ok (${ok.root})\n  provider: mock — session policy "echo"\n  resources: 0 skills from none, 1 prompt (/review) from convention\n`);
    expect(out).toContain(`session group (${group.root})\n  provider: mock — group policy "MOCK"\n`);
    expect(out).toMatch(/all sessions can start\n$/);
    expect(code).toBe(0);
  });

  it.each([
    { case: 'an unknown provider', config: { provider: 'claud' }, line: '✗ provider: unknown provider "claud" (known: claude, codex, opencode, mock' },
    { case: 'a provider that is not installed', config: { groupProvider: 'codex-app-server' }, line: '✗ provider: provider "codex" (group policy "codex-app-server") is not installed' },
    { case: 'an invalid config.json', config: { provder: 'mock' }, line: '✗ config: invalid' },
  ])('flags $case and exits 1', ({ config, line }) => {
    const home = makeHome();
    const s = createSessionFolder(path.join(home, 'sessions', 's'));
    fs.writeFileSync(s.config, JSON.stringify(config));
    const { code, out } = doctor(['--home', home]);
    expect(out).toContain(line);
    expect(out).toMatch(/1 session cannot start\n$/);
    expect(code).toBe(1);
  });

  it('lists resource problems of a session given with --workspace', () => {
    const home = makeHome();
    const s = createSessionFolder(path.join(home, 'x'));
    fs.writeFileSync(path.join(s.agent, 'package.json'), JSON.stringify({ pincer: { skills: ['skills/*/SKILL.md'] } }));
    const { code, out } = doctor(['--workspace', s.root], { AGENT_PROVIDER: 'mock' });
    expect(out).toContain('  ! skills: "skills/*/SKILL.md" matched nothing\n');
    expect(code).toBe(0);
  });
});
