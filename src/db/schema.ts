import type Database from 'better-sqlite3';

/**
 * Forward-only migrations of the session DB. The schema version is stored in `PRAGMA user_version`; each migration
 * runs once, in its own transaction, in order. Never edit a released migration: add a new one.
 */
export interface Migration {
  version: number;
  description: string;
  up(db: Database.Database): void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'messages, session and runner state tables',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS messages_in (
          id TEXT PRIMARY KEY,
          seq INTEGER UNIQUE NOT NULL,
          kind TEXT NOT NULL,
          timestamp TEXT NOT NULL,
          status TEXT NOT NULL DEFAULT 'pending',
          status_changed TEXT,
          process_after TEXT,
          recurrence TEXT,
          series_id TEXT,
          tries INTEGER NOT NULL DEFAULT 0,
          trigger INTEGER NOT NULL DEFAULT 1,
          platform_id TEXT,
          channel_type TEXT,
          thread_id TEXT,
          content TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS messages_out (
          id TEXT PRIMARY KEY,
          seq INTEGER UNIQUE NOT NULL,
          in_reply_to TEXT,
          timestamp TEXT NOT NULL,
          kind TEXT NOT NULL,
          platform_id TEXT,
          channel_type TEXT,
          thread_id TEXT,
          content TEXT NOT NULL,
          delivered_at TEXT,
          platform_message_id TEXT
        );
        CREATE TABLE IF NOT EXISTS session_state (
          key TEXT PRIMARY KEY,
          value TEXT NOT NULL,
          updated_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS runner_state (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          pid INTEGER NOT NULL,
          provider TEXT NOT NULL,
          state TEXT NOT NULL,
          batch_ids TEXT NOT NULL DEFAULT '[]',
          routing TEXT,
          heartbeat_at TEXT NOT NULL,
          started_at TEXT NOT NULL,
          updated_at TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 2,
    description: 'error columns and the indexes the poll loop and delivery use',
    up(db) {
      const inCols = columnNames(db, 'messages_in');
      if (!inCols.has('last_error')) db.exec('ALTER TABLE messages_in ADD COLUMN last_error TEXT');
      const outCols = columnNames(db, 'messages_out');
      if (!outCols.has('delivery_error')) db.exec('ALTER TABLE messages_out ADD COLUMN delivery_error TEXT');
      db.exec(`
        CREATE INDEX IF NOT EXISTS messages_in_pending ON messages_in (status, seq);
        CREATE INDEX IF NOT EXISTS messages_in_series ON messages_in (series_id);
        CREATE INDEX IF NOT EXISTS messages_out_undelivered ON messages_out (delivered_at, seq);
      `);
    },
  },
  {
    version: 3,
    description: 'turn_usage: what each turn cost, written with its result',
    up(db) {
      // One row per turn. `id` is the host's cursor when it copies rows into its ledger; rows are never updated.
      db.exec(`
        CREATE TABLE IF NOT EXISTS turn_usage (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          turn_id TEXT NOT NULL UNIQUE,
          in_reply_to TEXT,
          series_id TEXT,
          provider TEXT NOT NULL,
          model TEXT NOT NULL,
          input_tokens INTEGER NOT NULL,
          output_tokens INTEGER NOT NULL,
          cache_read_tokens INTEGER NOT NULL,
          cache_write_tokens INTEGER NOT NULL,
          cost_usd REAL,
          duration_ms INTEGER NOT NULL,
          by_model TEXT,
          created_at TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 4,
    description: 'trace context: of each inbound message (written by the host) and of the turn in flight (runner_state)',
    up(db) {
      if (!columnNames(db, 'messages_in').has('trace_context')) db.exec('ALTER TABLE messages_in ADD COLUMN trace_context TEXT');
      if (!columnNames(db, 'runner_state').has('trace_context')) db.exec('ALTER TABLE runner_state ADD COLUMN trace_context TEXT');
    },
  },
  {
    version: 5,
    description: 'tool_activity: the tool calls of the turn in flight, for the host to show (src/db/tool-activity.ts)',
    up(db) {
      // Written by the runner (a row per call, its end set when it finishes), read by the host; kept to the newest 200.
      db.exec(`
        CREATE TABLE IF NOT EXISTS tool_activity (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          call_id TEXT NOT NULL,
          name TEXT NOT NULL,
          preview TEXT NOT NULL,
          status TEXT NOT NULL,
          started_at TEXT NOT NULL,
          ended_at TEXT,
          channel_type TEXT,
          platform_id TEXT,
          thread_id TEXT
        );
      `);
    },
  },
  {
    version: 6,
    description: 'turn_usage.model_generation: the model-runtime generation the turn ran with',
    up(db) {
      if (!columnNames(db, 'turn_usage').has('model_generation')) db.exec('ALTER TABLE turn_usage ADD COLUMN model_generation INTEGER');
    },
  },
  {
    version: 7,
    description: 'messages_in.no_retry: the runner recorded an error that another try cannot fix (a rejected key, an invalid request)',
    up(db) {
      if (!columnNames(db, 'messages_in').has('no_retry')) db.exec('ALTER TABLE messages_in ADD COLUMN no_retry INTEGER NOT NULL DEFAULT 0');
    },
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

function columnNames(db: Database.Database, table: string): Set<string> {
  const rows = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
  return new Set(rows.map((r) => r.name));
}

/** Bring `db` up to `target` (default: current). Returns the versions applied. */
export function migrate(db: Database.Database, target = SCHEMA_VERSION): number[] {
  return runMigrations(db, MIGRATIONS, target);
}

/** Apply `migrations` (ordered by version) up to `target`, each once, in its own transaction; also used by the central DB. */
export function runMigrations(db: Database.Database, migrations: readonly Migration[], target: number): number[] {
  const applied: number[] = [];
  // Up to date (every open but the first): a read, so opening never waits for another process's write lock.
  if ((db.pragma('user_version', { simple: true }) as number) >= target) return applied;
  for (const migration of migrations) {
    if (migration.version > target) break;
    const run = db.transaction(() => {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current >= migration.version) return false;
      migration.up(db);
      db.pragma(`user_version = ${migration.version}`);
      return true;
    });
    if (run.immediate()) applied.push(migration.version);
  }
  return applied;
}
