import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dbFileChange, identityAt } from '../src/db/db-file.js';

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-db-file-'));
  temps.push(dir);
  return dir;
}

describe('the session database file', () => {
  it('tells a deleted, replaced or linked file from the one that was opened', () => {
    const dir = tempDir();
    const file = path.join(dir, 'session.db');
    fs.writeFileSync(file, 'a');
    const opened = identityAt(file)!;
    expect(dbFileChange(file, opened)).toBeUndefined();
    // moved away (still alive, so its inode number is not reused by the next file)
    fs.renameSync(file, path.join(dir, 'moved'));
    expect(dbFileChange(file, opened)).toEqual({ kind: 'deleted' });
    fs.writeFileSync(file, 'b');
    expect(dbFileChange(file, opened)?.kind).toBe('replaced');
    fs.rmSync(file);
    fs.symlinkSync(path.join(dir, 'elsewhere'), file);
    expect(dbFileChange(file, opened)?.kind).toBe('not-regular');
  });
});
