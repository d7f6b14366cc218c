import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PincerError } from '../shared/errors.js';

/**
 * The host's home holds its central DB, the HTTP token, the runners' logs and (by default) every session: owner-only
 * (0700 for the folder, 0600 for databases and secrets), so another local user reads none of it.
 */
export function prepareHome(home: string): void {
  // Kernel file systems are no place for data, and Node's recursive mkdir loops forever under /proc.
  const kernel = ['/proc', '/sys', '/dev'].find((root) => home === root || home.startsWith(`${root}/`));
  if (kernel) throw unusableHome(home, `it is inside ${kernel}, a kernel file system`);
  try {
    fs.mkdirSync(home, { recursive: true, mode: 0o700 });
    if (!fs.statSync(home).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    if ((fs.statSync(home).mode & 0o077) !== 0) fs.chmodSync(home, 0o700);
    fs.accessSync(home, fs.constants.W_OK | fs.constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why: Record<string, string> = {
      ENOTDIR: 'it, or a folder on its path, is a file',
      EEXIST: 'a file of that name is in the way',
      EROFS: 'it is on a read-only file system',
      EACCES: 'you may not write there',
      EPERM: 'you may not write there',
      ENOSPC: 'the disk is full',
    };
    if (code && why[code]) throw unusableHome(home, why[code]!);
    throw err;
  }
}

function unusableHome(home: string, why: string): PincerError {
  const fallback = path.join(os.homedir(), '.pincer');
  const advice =
    home === fallback
      ? 'choose a folder you can write with --home or PINCER_HOME'
      : `choose a folder you can write with --home or PINCER_HOME (the default is ${fallback})`;
  return new PincerError('config', `cannot use ${home} as the Pincer home: ${why}; ${advice}`);
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
