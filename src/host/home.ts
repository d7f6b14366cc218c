import fs from 'node:fs';

/**
 * The host's home holds its central DB, the HTTP token, the runners' logs and (by default) every session: owner-only
 * (0700 for the folder, 0600 for databases and secrets), so another local user reads none of it.
 */
export function prepareHome(home: string): void {
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  if ((fs.statSync(home).mode & 0o077) !== 0) fs.chmodSync(home, 0o700);
}

/** Owner-only modes for an SQLite database and its WAL/SHM files (SQLite gives new WAL/SHM files the DB's mode). */
export function restrictDatabaseFiles(file: string): void {
  for (const name of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      fs.chmodSync(name, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}
