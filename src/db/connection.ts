import Database from 'better-sqlite3';
import fs from 'node:fs';
import { migrate } from './schema.js';
import { settingOrDefault } from '../shared/settings-load.js';
import { PincerError } from '../shared/errors.js';

/**
 * How long a writer waits for another process's lock before SQLITE_BUSY: 10 s, or PINCER_BUSY_TIMEOUT_MS but never
 * below 5 s (docs/architecture.md, "Session folder and database").
 */
export const BUSY_TIMEOUT_MS = Math.max(5000, settingOrDefault(process.env, 'PINCER_BUSY_TIMEOUT_MS'));

/** Kept as a subclass: the host tells a missing database (set up afresh) from an unreadable one by `reason`. */
export class SessionDbError extends PincerError {
  constructor(
    readonly reason: 'missing' | 'unreadable',
    message: string,
    /** the SQLite error behind `unreadable` (its `code` tells a damaged file from a busy one). */
    options?: ErrorOptions,
  ) {
    super(reason === 'missing' ? 'not-found' : 'unavailable', message, { cause: options?.cause });
    this.name = 'SessionDbError';
  }
}

export function isSessionDbError(err: unknown): err is SessionDbError {
  return err instanceof SessionDbError;
}

export interface OpenOptions {
  /** create the file when it does not exist (default false: a missing DB is an error). */
  create?: boolean;
  /** open without migrating or writing (for readers such as `pincer outbox`). */
  readonly?: boolean;
}

/**
 * Open a session DB: WAL, busy timeout, foreign keys, schema migrated to the current version. Every process opens
 * its own connection; WAL lets the runner, the MCP server and the host read and write the same file at once.
 */
export function openSessionDb(path: string, options: OpenOptions = {}): Database.Database {
  if (!options.create && !fs.existsSync(path)) {
    throw new SessionDbError('missing', `session database not found: ${path}`);
  }
  let db: Database.Database;
  try {
    db = new Database(path, { timeout: BUSY_TIMEOUT_MS, fileMustExist: !options.create });
    // Owner-only, set before WAL mode creates the -wal and -shm files (SQLite gives them the DB's mode).
    if (options.create) fs.chmodSync(path, 0o600);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    if (!options.readonly) migrate(db);
    else db.prepare('SELECT count(*) FROM messages_in').get();
  } catch (err) {
    if (err instanceof SessionDbError) throw err;
    throw new SessionDbError('unreadable', `cannot open session database ${path}: ${(err as Error).message}`, { cause: err });
  }
  return db;
}

const statementCache = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** A prepared statement for `sql` on `db`, prepared once per connection (the poll loop runs these constantly). */
export function prepared(db: Database.Database, sql: string): Database.Statement {
  let cache = statementCache.get(db);
  if (!cache) statementCache.set(db, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) cache.set(sql, (stmt = db.prepare(sql)));
  return stmt;
}
