import fs from 'node:fs';
import path from 'node:path';
import { PincerError } from '../shared/errors.js';

/**
 * The host's only way into a session folder. The agent writes that folder (its shell, its tools, its task scripts):
 * any entry may be a symlink to the host's token, `/proc/self/environ` or another session's database. So every path
 * the host derives from it is built from ids checked against `SAFE_ID`, walked component by component with `lstat`
 * (no link, the expected type), opened with `O_NOFOLLOW`, and — on Linux — the opened descriptor's real path is
 * compared with the path that was meant, which closes the gap between the walk and the open.
 */
/** Kept as a subclass: callers tell a missing file from a refused one by `reason`. */
export class UntrustedPathError extends PincerError {
  constructor(
    readonly reason: 'bad-id' | 'link' | 'not-regular' | 'missing' | 'escaped',
    message: string,
  ) {
    super(reason === 'missing' ? 'not-found' : reason === 'bad-id' ? 'invalid-input' : 'outside-workspace', message);
    this.name = 'UntrustedPathError';
  }
}

export function isUntrustedPathError(err: unknown, reason?: UntrustedPathError['reason']): err is UntrustedPathError {
  return err instanceof UntrustedPathError && (reason === undefined || err.reason === reason);
}

/** An id that may become one path component: no separators, no `..`, no newline, no leading dot. */
export const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

export function checkSafeId(id: string, what: string): string {
  if (!SAFE_ID.test(id) || id.includes('..')) {
    throw new UntrustedPathError('bad-id', `${what} ${JSON.stringify(id.slice(0, 80))} is not a plain id (letters, digits, . _ : @ -)`);
  }
  return id;
}

/**
 * `root/<parts…>` checked without following anything: every directory on the way is a real directory, the last part
 * a regular file. `root` is the host's own record (a session folder), never derived from the agent's data.
 */
export function checkRegularFileInside(root: string, parts: readonly string[]): string {
  return checkInside(root, parts, 'regular file');
}

function checkInside(root: string, parts: readonly string[], lastIs: 'regular file' | 'directory'): string {
  let current = root;
  parts.forEach((part, i) => {
    if (part === '' || part === '.' || part === '..' || part.includes('/') || part.includes('\0')) {
      throw new UntrustedPathError('bad-id', `path component ${JSON.stringify(part)} is not a plain name`);
    }
    current = path.join(current, part);
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(current);
    } catch {
      throw new UntrustedPathError('missing', `${relativeName(root, current)} is missing`);
    }
    if (stat.isSymbolicLink())
      throw new UntrustedPathError('link', `${relativeName(root, current)} is a symbolic link; the host does not follow links in a session folder`);
    const is = i === parts.length - 1 ? lastIs : 'directory';
    if (is === 'regular file' ? !stat.isFile() : !stat.isDirectory()) {
      throw new UntrustedPathError('not-regular', `${relativeName(root, current)} is not a ${is}`);
    }
  });
  return current;
}

/**
 * A directory of a session folder the host writes into, held open: `at(name)` names an entry of that very directory
 * (through `/proc/self/fd` on Linux), so a folder renamed away and a link planted in its place between the check and
 * a later write — a download takes seconds — cannot send the write anywhere else. Close it when done.
 */
export class HeldDirectory {
  private constructor(
    private readonly fd: number,
    private readonly where: string,
  ) {}

  /** `root/<parts…>`, walked and opened as `checkRegularFileInside` does, but a directory. */
  static inside(root: string, parts: readonly string[]): HeldDirectory {
    const dir = checkInside(root, parts, 'directory');
    const held = HeldDirectory.open(dir, relativeName(root, dir));
    const opened = realPathOf(held.fd);
    if (opened !== undefined && opened !== path.join(fs.realpathSync(root), ...parts)) {
      held.close();
      throw new UntrustedPathError('escaped', `${relativeName(root, dir)} changed while it was opened`);
    }
    return held;
  }

  private static open(dir: string, name: string): HeldDirectory {
    try {
      return new HeldDirectory(fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW), dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new UntrustedPathError(code === 'ELOOP' || code === 'ENOTDIR' ? 'link' : 'missing', `${name} cannot be opened (${code ?? 'error'})`);
    }
  }

  /** The path of entry `name` of this directory. */
  at(name: string): string {
    if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
      throw new UntrustedPathError('bad-id', `path component ${JSON.stringify(name)} is not a plain name`);
    }
    return HAS_PROC_FD ? `/proc/self/fd/${this.fd}/${name}` : path.join(this.where, name);
  }

  /** A new directory `name` in this one (it must not exist yet), held. */
  createChild(name: string): HeldDirectory {
    fs.mkdirSync(this.at(name), { mode: 0o755 });
    return HeldDirectory.open(this.at(name), name);
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

const HAS_PROC_FD = fs.existsSync('/proc/self/fd');

/**
 * Open `root/<parts…>` for reading as `checkRegularFileInside` describes; returns the descriptor (the caller closes
 * it). The file is checked again through the descriptor itself, so a link swapped in after the walk is refused.
 */
export function openRegularFileInside(root: string, parts: readonly string[]): number {
  const file = checkRegularFileInside(root, parts);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UntrustedPathError(code === 'ELOOP' ? 'link' : 'missing', `${relativeName(root, file)} cannot be opened (${code ?? 'error'})`);
  }
  try {
    if (!fs.fstatSync(fd).isFile()) throw new UntrustedPathError('not-regular', `${relativeName(root, file)} is not a regular file`);
    const opened = realPathOf(fd);
    if (opened !== undefined && opened !== path.join(fs.realpathSync(root), ...parts)) {
      throw new UntrustedPathError('escaped', `${relativeName(root, file)} changed while it was opened`);
    }
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  return fd;
}

/** Whether `file` is there as a regular file (not a link); false when absent. Throws for anything else. */
export function lstatRegularOrAbsent(file: string, what: string): boolean {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new UntrustedPathError('missing', `${what} cannot be examined: ${(err as Error).message}`);
  }
  if (stat.isSymbolicLink()) throw new UntrustedPathError('link', `${what} is a symbolic link`);
  if (!stat.isFile()) throw new UntrustedPathError('not-regular', `${what} is not a regular file`);
  return true;
}

function realPathOf(fd: number): string | undefined {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined; // no /proc (not Linux): the lstat walk and O_NOFOLLOW stand alone
  }
}

function relativeName(root: string, file: string): string {
  return path.relative(root, file) || '.';
}

/**
 * Open a file the host accepted for delivery (`<session>/outbox/<message id>/<name>`, as `Delivery` recorded it) to
 * serve it: checked again now, since the agent may have replaced it by a link after delivery.
 */
export function openOutboxFile(file: string): number {
  const name = path.basename(file);
  const id = path.basename(path.dirname(file));
  const outbox = path.dirname(path.dirname(file));
  if (path.basename(outbox) !== 'outbox') throw new UntrustedPathError('escaped', `${file} is not an outbox file`);
  return openRegularFileInside(path.dirname(outbox), ['outbox', checkSafeId(id, 'message id'), name]);
}

/**
 * Check a session's database files before the host opens them: `session.db` must be a regular file (a link could
 * route this conversation into another session's database), and `-wal`/`-shm`, when present, too (SQLite would write
 * through a link). Returns the identity of `session.db`, so the caller can confirm after opening that it opened it.
 */
export function checkSessionDatabase(folder: string): { dev: number; ino: number } {
  const file = path.join(folder, 'session.db');
  if (!lstatRegularOrAbsent(file, 'session.db')) throw new UntrustedPathError('missing', 'session.db is missing');
  for (const suffix of ['-wal', '-shm']) lstatRegularOrAbsent(`${file}${suffix}`, `session.db${suffix}`);
  const { dev, ino } = fs.lstatSync(file);
  return { dev, ino };
}
