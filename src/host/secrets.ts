import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PincerError } from '../shared/errors.js';

/**
 * The secrets store: named secrets the host may use (provider keys the credential proxy puts on upstream requests,
 * values that configuration refers to by name), kept in `<home>/secrets.json` — one JSON object `{"NAME": "value"}`,
 * owner-only (0600), a regular file. Values are never printed, logged, written into a session folder or passed to a
 * runner; only the host reads them, and only through this module.
 *
 * A file that is not 0600, not a JSON object of strings, or a symbolic link is refused with one line naming the file
 * and the fix, and nothing of it is used: a secret another user could read (or swap through a link) is not a secret.
 * Writes go to a temporary file in the home (created 0600) renamed over the old one, so a reader never sees half a
 * file and a running host picks the change up whole.
 */
export const SECRETS_FILE = 'secrets.json';

/** A secret's name: what configuration refers to it by (`ANTHROPIC_API_KEY`, `GITHUB_TOKEN`). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** At most this much of a file is read (a secrets file is small; a huge one is a mistake, not a store). */
const MAX_FILE_BYTES = 1024 * 1024;

/** The secrets as read at one moment: name → value. Frozen; never serialise it anywhere but the store's own file. */
export type SecretValues = ReadonlyMap<string, string>;

export class SecretsStore {
  readonly file: string;

  constructor(home: string) {
    this.file = path.join(home, SECRETS_FILE);
  }

  /** The secret `name`'s value now, or undefined when it is not set. Throws {@link PincerError} `config` on a bad file. */
  get(name: string): string | undefined {
    return this.read().get(name);
  }

  /** The names set (sorted), never the values. */
  names(): string[] {
    return [...this.read().keys()].sort();
  }

  /**
   * Everything in the file now (empty when there is no file). Throws {@link PincerError} `config` with one line when the
   * file is a link, not 0600, not a regular file, too large, not JSON, or not an object of non-empty strings.
   */
  read(): SecretValues {
    return readSecretsFile(this.file);
  }

  /** Set (or replace) `name`. The value must be non-empty and one line of text. */
  set(name: string, value: string): void {
    checkName(name);
    if (value.length === 0) throw new PincerError('invalid-input', `secret ${name}: the value is empty`, { field: 'value' });
    if (/[\r\n\0]/.test(value))
      throw new PincerError('invalid-input', `secret ${name}: the value must be one line (no line breaks or NUL)`, { field: 'value' });
    const values = new Map(this.read());
    values.set(name, value);
    this.write(values);
  }

  /** Remove `name`; false when it was not set. */
  remove(name: string): boolean {
    checkName(name);
    const values = new Map(this.read());
    if (!values.delete(name)) return false;
    this.write(values);
    return true;
  }

  private write(values: Map<string, string>): void {
    const sorted = Object.fromEntries([...values].sort(([a], [b]) => (a < b ? -1 : 1)));
    const temp = path.join(path.dirname(this.file), `.${SECRETS_FILE}.${randomBytes(6).toString('hex')}.tmp`);
    // `wx`: never follow or reuse something already at the temporary name; 0600 from the first byte.
    const fd = fs.openSync(temp, 'wx', 0o600);
    try {
      fs.writeSync(fd, `${JSON.stringify(sorted, null, 2)}\n`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    try {
      fs.renameSync(temp, this.file);
    } catch (err) {
      fs.rmSync(temp, { force: true });
      throw err;
    }
  }
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new PincerError('invalid-input', `secret name "${name}": use letters, digits and _ (not starting with a digit), like ANTHROPIC_API_KEY`, {
      field: 'name',
    });
  }
}

/** See {@link SecretsStore.read}. */
export function readSecretsFile(file: string): SecretValues {
  let fd: number;
  try {
    // O_NOFOLLOW: a link is refused by the kernel at open, so nothing can swap one in between a check and the read.
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return new Map();
    if (code === 'ELOOP' || code === 'EMLINK') throw refused(file, 'is a symbolic link; keep the secrets in a regular file there (pincer secret set)');
    throw refused(file, `cannot be read (${code ?? String(err)})`);
  }
  let text: string;
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw refused(file, 'is not a regular file');
    if ((stat.mode & 0o777) !== 0o600) throw refused(file, `has mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}; it must be 0600 (chmod 600 ${file})`);
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid())
      throw refused(file, `belongs to user ${stat.uid}, not to the user running Pincer`);
    if (stat.size > MAX_FILE_BYTES) throw refused(file, `is ${stat.size} bytes; a secrets file holds at most ${MAX_FILE_BYTES}`);
    text = fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error: it could quote a secret, so it is not repeated.
    throw refused(file, 'is not valid JSON; it must be an object like {"NAME": "value"}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw refused(file, 'must be a JSON object like {"NAME": "value"}');
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(parsed)) {
    if (!SECRET_NAME.test(name)) throw refused(file, `has an invalid name "${name.slice(0, 40)}" (letters, digits and _)`);
    if (typeof value !== 'string' || value.length === 0) throw refused(file, `has a bad value for ${name} (it must be a non-empty string)`);
    values.set(name, value);
  }
  return values;
}

function refused(file: string, why: string): PincerError {
  return new PincerError('config', `secrets file ${file} ${why}`);
}
