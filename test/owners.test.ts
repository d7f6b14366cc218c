import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * One owner for each session command (docs/architecture.md, "Who writes what"): session SQL lives in src/db, task rows
 * are written by src/db/tasks.ts (and pruned by src/db/task-history.ts), answers to questions by src/db/questions.ts.
 * The runner's queue claims and finishes the rows of its batch; nothing else writes `messages_in`.
 */
const ROOT = path.resolve(import.meta.dirname, '..');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** A file's code without its comments (a comment may name a table or a row kind). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

const files = sourceFiles(path.join(ROOT, 'src')).map((file) => ({ name: path.relative(ROOT, file), text: code(fs.readFileSync(file, 'utf8')) }));
const SESSION_TABLES = /\b(messages_in|messages_out|runner_state|session_state|turn_usage)\b/;
const SQL = /\b(?:(SELECT)\b[\s\S]{0,200}?\bFROM\s+(\w+)|(INSERT)\s+(?:OR\s+\w+\s+)?INTO\s+(\w+)|(UPDATE)\s+(\w+)\s+SET|(DELETE)\s+FROM\s+(\w+))/g;

/** `[file, table]` for every SQL statement in `text` that names a table. */
function statements(name: string, text: string): { file: string; verb: string; table: string }[] {
  return [...text.matchAll(SQL)].map((m) => {
    const [verb, table] = [m[1] ?? m[3] ?? m[5] ?? m[7], m[2] ?? m[4] ?? m[6] ?? m[8]];
    return { file: name, verb: verb!, table: table! };
  });
}

describe('one owner per session command', () => {
  const all = files.flatMap((f) => statements(f.name, f.text));

  it('no file of src/host holds session SQL', () => {
    expect(all.filter((s) => s.file.startsWith('src/host/') && SESSION_TABLES.test(s.table))).toEqual([]);
  });

  it('messages_in is written only by src/db and the runner queue', () => {
    const writers = all.filter((s) => s.table === 'messages_in' && s.verb !== 'SELECT').map((s) => s.file);
    expect([...new Set(writers)].filter((file) => !file.startsWith('src/db/') && file !== 'src/runner/queue.ts')).toEqual([]);
  });

  it('a task row is made only by src/db/tasks.ts, or written by the host as that owner planned it', () => {
    const makers = files.filter((f) => /kind: 'task'/.test(f.text) && f.name !== 'src/db/tasks.ts' && f.name !== 'src/db/content.ts');
    expect(makers.filter((f) => !/\bplanTask\(/.test(f.text)).map((f) => f.name)).toEqual([]);
  });

  it('answers to questions are written only by src/db/questions.ts', () => {
    const writers = files.filter((f) => /type: 'question_response'/.test(f.text)).map((f) => f.name);
    expect(writers).toEqual(['src/db/questions.ts']);
  });

  it("each of the host's own tables (the central DB) is written by one file", () => {
    const writers = new Map<string, Set<string>>();
    for (const s of all.filter((s) => s.verb !== 'SELECT' && !SESSION_TABLES.test(s.table))) {
      writers.set(s.table, (writers.get(s.table) ?? new Set()).add(s.file));
    }
    expect(writers.size).toBeGreaterThan(10);
    expect([...writers].filter(([, by]) => by.size > 1).map(([table, by]) => `${table}: ${[...by].join(', ')}`)).toEqual([]);
  });

  it('the check sees a write where it does not belong', () => {
    const found = statements('src/host/x.ts', "prepared(db, `UPDATE messages_in SET status = 'paused' WHERE id = ?`)");
    expect(found).toEqual([{ file: 'src/host/x.ts', verb: 'UPDATE', table: 'messages_in' }]);
  });
});
