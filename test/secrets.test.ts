import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretsStore } from '../src/host/secrets.js';
import { BUILT_CLI } from './support/runner-harness.js';

/**
 * The secrets store (`<home>/secrets.json`): set, list and remove through the module and through `pincer secret`;
 * a file that is a link, not 0600 or not JSON is refused in one line that never quotes a value.
 */
const homes: string[] = [];
function home(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-secrets-'));
  homes.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of homes.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const VALUE = 'sk-secret-value-0123456789';

describe('SecretsStore', () => {
  it('sets, reads, lists and removes; the file is 0600 and only the store writes it', () => {
    const store = new SecretsStore(home());
    expect(store.names()).toEqual([]);
    expect(store.get('ANTHROPIC_API_KEY')).toBeUndefined();
    store.set('ANTHROPIC_API_KEY', VALUE);
    store.set('GITHUB_TOKEN', 'ghp-1');
    expect(store.get('ANTHROPIC_API_KEY')).toBe(VALUE);
    expect(store.names()).toEqual(['ANTHROPIC_API_KEY', 'GITHUB_TOKEN']);
    expect(fs.statSync(store.file).mode & 0o777).toBe(0o600);
    store.set('ANTHROPIC_API_KEY', 'rotated');
    expect(store.get('ANTHROPIC_API_KEY')).toBe('rotated');
    expect(store.remove('GITHUB_TOKEN')).toBe(true);
    expect(store.remove('GITHUB_TOKEN')).toBe(false);
    expect(store.names()).toEqual(['ANTHROPIC_API_KEY']);
    // no temporary file is left beside it
    expect(fs.readdirSync(path.dirname(store.file))).toEqual(['secrets.json']);
  });

  it.each([
    ['a bad name', () => new SecretsStore(home()).set('1BAD', 'x'), /secret name "1BAD"/],
    ['an empty value', () => new SecretsStore(home()).set('A', ''), /the value is empty/],
    ['a value with a line break', () => new SecretsStore(home()).set('A', 'x\ny'), /one line/],
  ])('refuses %s', (_what, act, message) => {
    expect(act).toThrow(message);
  });

  const bad: [string, (file: string) => void, RegExp][] = [
    ['not 0600', (file) => fs.writeFileSync(file, JSON.stringify({ A: VALUE }), { mode: 0o644 }), /has mode 0644; it must be 0600 \(chmod 600 /],
    ['not JSON', (file) => fs.writeFileSync(file, `{"A": "${VALUE}"`, { mode: 0o600 }), /is not valid JSON/],
    ['a JSON array', (file) => fs.writeFileSync(file, JSON.stringify([VALUE]), { mode: 0o600 }), /must be a JSON object/],
    ['a value that is not a string', (file) => fs.writeFileSync(file, JSON.stringify({ A: 42 }), { mode: 0o600 }), /bad value for A/],
    [
      'a link',
      (file) => {
        const real = path.join(path.dirname(file), 'elsewhere.json');
        fs.writeFileSync(real, JSON.stringify({ A: VALUE }), { mode: 0o600 });
        fs.symlinkSync(real, file);
      },
      /is a symbolic link/,
    ],
    ['a folder', (file) => fs.mkdirSync(file), /is not a regular file/],
  ];
  it.each(bad)('refuses a file that is %s, in one line without the value', (_what, make, message) => {
    const store = new SecretsStore(home());
    make(store.file);
    let error: Error | undefined;
    try {
      store.read();
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).toContain(store.file);
    expect(error?.message).not.toContain(VALUE);
    expect(error?.message.split('\n')).toHaveLength(1);
    // nothing of a refused file is used, and nothing is written over it
    expect(() => store.set('B', 'x')).toThrow(message);
  });
});

function cli(args: string[], env: Record<string, string>, stdin?: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BUILT_CLI, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

describe('pincer secret', { timeout: 60_000 }, () => {
  it('set reads the value from stdin; list prints names only; remove; a bad file is refused in one line', async () => {
    const dir = home();
    const env = { PINCER_HOME: dir };
    const set = await cli(['secret', 'set', 'ANTHROPIC_API_KEY'], env, `${VALUE}\n`);
    expect(set).toMatchObject({ status: 0, stdout: '' });
    expect(set.stderr).toBe(`secret ANTHROPIC_API_KEY set in ${path.join(dir, 'secrets.json')}\n`);
    expect(new SecretsStore(dir).get('ANTHROPIC_API_KEY')).toBe(VALUE); // the trailing newline is not part of it
    expect((await cli(['secret', 'set', 'ANTHROPIC_API_KEY'], env, 'rotated')).stderr).toContain('replaced');

    const list = await cli(['secret', 'list'], env);
    expect(list).toMatchObject({ status: 0, stdout: 'ANTHROPIC_API_KEY\n' });
    expect(list.stdout + list.stderr).not.toContain('rotated');

    expect(await cli(['secret', 'set', 'EMPTY'], env, '')).toMatchObject({ status: 2, stderr: expect.stringContaining('no value on stdin for EMPTY') });
    expect(await cli(['secret', 'remove', 'NOPE'], env)).toMatchObject({ status: 2, stderr: expect.stringContaining('no secret named "NOPE"') });
    expect(await cli(['secret', 'remove', 'ANTHROPIC_API_KEY'], env)).toMatchObject({ status: 0, stderr: 'secret ANTHROPIC_API_KEY removed\n' });
    expect((await cli(['secret', 'list'], env)).stdout).toBe('');

    fs.writeFileSync(path.join(dir, 'secrets.json'), JSON.stringify({ A: VALUE }));
    fs.chmodSync(path.join(dir, 'secrets.json'), 0o640);
    const refused = await cli(['secret', 'list'], env);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/secrets file .* has mode 0640; it must be 0600/);
    expect(refused.stderr).not.toContain(VALUE);
  });
});
