import fs from 'node:fs';

/**
 * Is the database file a process opened still the one at its path? A connection keeps the inode it opened: after
 * `rm session.db` (or a new file moved over it) SQLite goes on reading and writing the old, unlinked file, and
 * everything written from then on is lost. So the runner and the host remember the device and inode they opened and
 * compare them with what is at the path each time they wake — one `lstat`, cheap enough for every wake.
 */
export interface FileIdentity {
  dev: number;
  ino: number;
}

/** What is at the path now, compared with the file that was opened. */
export type DbFileChange =
  /** nothing is at the path any more. */
  | { kind: 'deleted' }
  /** another regular file is at the path (a copy, a backup, a new database moved over it). */
  | { kind: 'replaced' }
  /** a link, a folder, a device: something the host must not open. */
  | { kind: 'not-regular'; what: string };

/** The identity of the file at `file` (not following a link), or undefined when nothing is there. */
export function identityAt(file: string): FileIdentity | undefined {
  try {
    const { dev, ino } = fs.lstatSync(file);
    return { dev, ino };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** How the file at `file` differs from `opened`; undefined when it is still the same file. */
export function dbFileChange(file: string, opened: FileIdentity): DbFileChange | undefined {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'deleted' };
    throw err;
  }
  if (stat.isSymbolicLink()) return { kind: 'not-regular', what: 'a symbolic link' };
  if (!stat.isFile()) return { kind: 'not-regular', what: stat.isDirectory() ? 'a folder' : 'not a regular file' };
  if (stat.dev !== opened.dev || stat.ino !== opened.ino) return { kind: 'replaced' };
  return undefined;
}

/** A short phrase for logs and notices: "was deleted", "was replaced by another file", "is now a symbolic link". */
export function describeDbFileChange(change: DbFileChange): string {
  if (change.kind === 'deleted') return 'was deleted';
  if (change.kind === 'replaced') return 'was replaced by another file';
  return `is now ${change.what}`;
}

/**
 * SQLite found the file damaged (a page overwritten, the header gone): `SQLITE_CORRUPT*` or `SQLITE_NOTADB`. Other
 * failures (busy, read-only, disk full) pass once the cause is gone; these never do.
 */
export function isDamagedDbError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')) return true;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== err && isDamagedDbError(cause);
}
