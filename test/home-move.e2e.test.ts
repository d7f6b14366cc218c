/**
 * A home is self-contained and movable: after `cp -a home copy`, `pincer chat` on the copy answers from the copy and
 * writes nothing into the original (the central DB stores session folders relative to the home; `group/` and
 * `global/` link relatively into it). A home written with absolute paths is adopted when a host opens the copy.
 */
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function chat(home: string, line: string): string {
  const result = spawnSync(process.execPath, [BUILT_CLI, 'chat', '--provider', 'mock'], {
    input: `${line}\n`,
    // plain child processes: this test reads the session folder's own links, which a sandbox launcher lays out differently
    env: { PATH: process.env.PATH, HOME: path.dirname(home), PINCER_HOME: home, TZ: 'UTC', PINCER_RUNNER: 'process' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(result.status).toBe(0);
  return result.stdout;
}

function texts(home: string): string[] {
  const db = new Database(path.join(home, 'sessions', 'chat', 'session.db'), { readonly: true });
  try {
    return (db.prepare(`SELECT content FROM messages_in WHERE kind = 'chat' ORDER BY seq`).all() as { content: string }[]).map(
      (row) => (JSON.parse(row.content) as { text: string }).text,
    );
  } finally {
    db.close();
  }
}

function storedFolders(home: string): string[] {
  const db = new Database(path.join(home, 'pincer.db'), { readonly: true });
  try {
    return (db.prepare('SELECT folder FROM sessions').all() as { folder: string }[]).map((row) => row.folder);
  } finally {
    db.close();
  }
}

function copyHome(): { original: string; copy: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-move-'));
  roots.push(root);
  return { original: path.join(root, 'original', '.pincer'), copy: path.join(root, 'copy', '.pincer') };
}

function cpA(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  expect(spawnSync('cp', ['-a', from, to]).status).toBe(0);
}

describe('a movable home', () => {
  it('a copy answers from itself and leaves the original alone', () => {
    const { original, copy } = copyHome();
    expect(chat(original, 'first')).toContain('first</message>');
    expect(storedFolders(original)).toEqual(['sessions/chat']);
    expect(fs.readlinkSync(path.join(original, 'sessions', 'chat', 'group'))).toBe(path.join('..', '..', 'groups', 'main'));

    cpA(original, copy);
    const answer = chat(copy, 'second');
    expect(answer).toContain('second</message>');
    expect(texts(original)).toEqual(['first']);
    expect(texts(copy)).toEqual(['first', 'second']);
    expect(fs.realpathSync(path.join(copy, 'sessions', 'chat', 'group'))).toBe(fs.realpathSync(path.join(copy, 'groups', 'main')));
  });

  it('a home with absolute paths (written before) is adopted by a host on its copy', () => {
    const { original, copy } = copyHome();
    chat(original, 'first');
    // As an older Pincer left it: the absolute folder in the central DB, absolute links, `agent/` the group's folder.
    const session = path.join(original, 'sessions', 'chat');
    const db = new Database(path.join(original, 'pincer.db'));
    db.prepare('UPDATE sessions SET folder = ?').run(session);
    db.close();
    for (const [link, target] of [
      ['agent', path.join(original, 'groups', 'main')],
      ['group', path.join(original, 'groups', 'main')],
      ['global', path.join(original, 'global')],
    ] as const) {
      fs.rmSync(path.join(session, link), { recursive: true });
      fs.symlinkSync(target, path.join(session, link));
    }

    cpA(original, copy);
    expect(chat(copy, 'second')).toContain('second</message>');
    expect(texts(original)).toEqual(['first']);
    expect(texts(copy)).toEqual(['first', 'second']);
    expect(storedFolders(copy)).toEqual(['sessions/chat']);
    expect(fs.readlinkSync(path.join(copy, 'sessions', 'chat', 'group'))).toBe(path.join('..', '..', 'groups', 'main'));
    expect(fs.readlinkSync(path.join(copy, 'sessions', 'chat', 'global'))).toBe(path.join('..', '..', 'global'));
    // the older link of agent/ to the group's folder became the session's own folder
    expect(fs.lstatSync(path.join(copy, 'sessions', 'chat', 'agent')).isDirectory()).toBe(true);
    // The original was not touched by the host on the copy.
    expect(storedFolders(original)).toEqual([session]);
  });
});
