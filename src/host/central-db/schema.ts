import type Database from 'better-sqlite3';
import { runMigrations, type Migration } from '../../db/schema.js';

/**
 * Forward-only migrations of the central DB, versioned in `PRAGMA user_version` like the session DB's
 * (src/db/schema.ts). Never edit a released migration: add a new one.
 */
export const CENTRAL_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'agent groups, admins, bindings, sessions, questions, the HTTP channel mailbox',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS agent_groups (
          id TEXT PRIMARY KEY,
          name TEXT UNIQUE NOT NULL,
          folder TEXT UNIQUE NOT NULL,
          provider TEXT NOT NULL,
          model TEXT,
          session_mode TEXT NOT NULL DEFAULT 'shared',
          timezone TEXT NOT NULL,
          trigger_rules TEXT,
          config_generation INTEGER NOT NULL DEFAULT 1,
          created_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS agent_group_admins (
          agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
          user_id TEXT NOT NULL,
          PRIMARY KEY (agent_group_id, user_id)
        );
        CREATE TABLE IF NOT EXISTS bindings (
          channel_type TEXT NOT NULL,
          platform_id TEXT NOT NULL,
          agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
          created_at TEXT NOT NULL,
          PRIMARY KEY (channel_type, platform_id)
        );
        CREATE TABLE IF NOT EXISTS sessions (
          id TEXT PRIMARY KEY,
          agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
          channel_type TEXT NOT NULL,
          platform_id TEXT NOT NULL,
          thread_key TEXT NOT NULL DEFAULT '',
          folder TEXT NOT NULL,
          provider_session_id TEXT,
          created_at TEXT NOT NULL,
          UNIQUE (agent_group_id, channel_type, platform_id, thread_key)
        );
        CREATE TABLE IF NOT EXISTS questions (
          question_id TEXT PRIMARY KEY,
          session_id TEXT NOT NULL REFERENCES sessions(id),
          channel_type TEXT NOT NULL,
          platform_id TEXT NOT NULL,
          thread_id TEXT,
          created_at TEXT NOT NULL,
          answered_at TEXT
        );
        CREATE TABLE IF NOT EXISTS http_outbox (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          conversation TEXT NOT NULL,
          data TEXT NOT NULL,
          created_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS http_outbox_conversation ON http_outbox (conversation, id);
      `);
    },
  },
  {
    version: 2,
    description: 'who sent each inbound message the host wrote (authority for system actions)',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS inbound_senders (
          session_id TEXT NOT NULL REFERENCES sessions(id),
          message_id TEXT NOT NULL,
          sender_id TEXT,
          channel_type TEXT NOT NULL,
          platform_id TEXT NOT NULL,
          thread_id TEXT,
          created_at TEXT NOT NULL,
          PRIMARY KEY (session_id, message_id)
        );
        CREATE INDEX IF NOT EXISTS inbound_senders_session ON inbound_senders (session_id);
      `);
    },
  },
  {
    version: 3,
    description: 'Chat SDK state of the platform channels: subscriptions, locks, key-value cache, lists, queues',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS chat_subscriptions (
          thread_id TEXT PRIMARY KEY,
          created_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS chat_locks (
          thread_id TEXT PRIMARY KEY,
          token TEXT NOT NULL,
          expires_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS chat_cache (
          key TEXT PRIMARY KEY,
          value TEXT NOT NULL,
          expires_at INTEGER
        );
        CREATE TABLE IF NOT EXISTS chat_lists (
          key TEXT NOT NULL,
          seq INTEGER NOT NULL,
          value TEXT NOT NULL,
          expires_at INTEGER,
          PRIMARY KEY (key, seq)
        );
        CREATE TABLE IF NOT EXISTS chat_queues (
          thread_id TEXT NOT NULL,
          seq INTEGER NOT NULL,
          entry TEXT NOT NULL,
          PRIMARY KEY (thread_id, seq)
        );
      `);
    },
  },
  {
    version: 4,
    description: 'HTTP API access: scoped tokens (hashed), browser sessions (hashed), signed webhooks',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS http_tokens (
          id TEXT PRIMARY KEY,
          name TEXT UNIQUE NOT NULL,
          token_hash TEXT UNIQUE NOT NULL,
          admin INTEGER NOT NULL DEFAULT 0,
          conversations TEXT NOT NULL DEFAULT '[]',
          created_at TEXT NOT NULL,
          revoked_at TEXT
        );
        CREATE TABLE IF NOT EXISTS http_browser_sessions (
          id_hash TEXT PRIMARY KEY,
          token_hash TEXT NOT NULL,
          created_at TEXT NOT NULL,
          expires_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS http_webhooks (
          name TEXT PRIMARY KEY,
          scheme TEXT NOT NULL,
          secret TEXT NOT NULL,
          conversation TEXT,
          header TEXT,
          tolerance_s INTEGER,
          created_at TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 5,
    description: 'usage ledger, its per-session cursors, and budgets per agent group',
    up(db) {
      // One ledger row per turn and model: what a session's runner recorded in its turn_usage, copied by the host.
      // `cost_source` says where cost_usd came from: the provider, the host's price table, or nowhere (NULL cost).
      db.exec(`
        CREATE TABLE IF NOT EXISTS usage_ledger (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          session_id TEXT NOT NULL,
          turn_id TEXT NOT NULL,
          agent_group_id TEXT NOT NULL,
          conversation TEXT NOT NULL,
          series_id TEXT,
          provider TEXT NOT NULL,
          model TEXT NOT NULL,
          at TEXT NOT NULL,
          input_tokens INTEGER NOT NULL,
          output_tokens INTEGER NOT NULL,
          cache_read_tokens INTEGER NOT NULL,
          cache_write_tokens INTEGER NOT NULL,
          cost_usd REAL,
          cost_source TEXT,
          duration_ms INTEGER NOT NULL,
          UNIQUE (session_id, turn_id, model)
        );
        CREATE INDEX IF NOT EXISTS usage_ledger_at ON usage_ledger (at);
        CREATE INDEX IF NOT EXISTS usage_ledger_group_at ON usage_ledger (agent_group_id, at);
        CREATE TABLE IF NOT EXISTS usage_cursors (
          session_id TEXT PRIMARY KEY,
          last_id INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS budgets (
          agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
          period TEXT NOT NULL CHECK (period IN ('daily', 'monthly')),
          unit TEXT NOT NULL CHECK (unit IN ('tokens', 'usd')),
          amount REAL NOT NULL CHECK (amount >= 0),
          updated_at TEXT NOT NULL,
          PRIMARY KEY (agent_group_id, period, unit)
        );
      `);
    },
  },
  {
    version: 6,
    description: 'a copy of each inbound message accepted into a session, kept until it is done (re-sent if the session DB is lost)',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS inbound_copies (
          session_id TEXT NOT NULL REFERENCES sessions(id),
          message_id TEXT NOT NULL,
          row TEXT NOT NULL,
          created_at TEXT NOT NULL,
          PRIMARY KEY (session_id, message_id)
        );
      `);
    },
  },
  {
    version: 7,
    description: 'the outbound row each HTTP mailbox event delivers, so a row delivered again after a host crash is stored once',
    up(db) {
      db.exec(`
        ALTER TABLE http_outbox ADD COLUMN message_key TEXT;
        CREATE UNIQUE INDEX IF NOT EXISTS http_outbox_message_key ON http_outbox (message_key) WHERE message_key IS NOT NULL;
      `);
    },
  },
  {
    version: 8,
    description: "the host's inbox (inbound rows pushed to their session or not yet), each session's next due time and launch epoch",
    up(db) {
      db.exec(`
        ALTER TABLE inbound_copies ADD COLUMN pushed INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE sessions ADD COLUMN next_wake_at TEXT;
        ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
      `);
    },
  },
  {
    version: 9,
    description: "the user's own MCP servers of each agent group, and a session's overrides (JSON, src/db/mcp-servers.ts)",
    up(db) {
      db.exec(`
        ALTER TABLE agent_groups ADD COLUMN mcp_servers TEXT;
        ALTER TABLE sessions ADD COLUMN mcp_servers TEXT;
      `);
    },
  },
  {
    version: 10,
    description: 'signed webhook deliveries already accepted (by the digest of what was signed), so a replay is not stored again',
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS webhook_deliveries (
          hook TEXT NOT NULL,
          digest TEXT NOT NULL,
          delivery_id TEXT,
          message_id TEXT,
          received_at TEXT NOT NULL,
          PRIMARY KEY (hook, digest)
        );
        CREATE INDEX IF NOT EXISTS webhook_deliveries_received ON webhook_deliveries (received_at);
      `);
    },
  },
  {
    version: 11,
    description: "MCP servers an agent asked for (add_mcp_server), each with the admin's decision (src/host/mcp-server-requests.ts)",
    up(db) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS mcp_server_requests (
          id TEXT PRIMARY KEY,
          agent_group_id TEXT NOT NULL REFERENCES agent_groups(id),
          session_id TEXT NOT NULL,
          name TEXT NOT NULL,
          server TEXT NOT NULL,
          reason TEXT,
          requested_at TEXT NOT NULL,
          status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'refused', 'failed')),
          decided_by TEXT,
          decided_at TEXT,
          error TEXT
        );
        CREATE INDEX IF NOT EXISTS mcp_server_requests_group ON mcp_server_requests (agent_group_id, requested_at);
      `);
    },
  },
  {
    version: 12,
    description: 'usage seen at the credential proxy beside what runners report: each ledger row says where it came from and whether it counts',
    up(db) {
      // `source`: 'runner' (a session's turn_usage row) or 'proxy' (one model call the credential proxy forwarded,
      // `call_id` its id). `counted` 0: a runner's row whose turn the proxy metered itself, kept as a hint only
      // (src/host/usage/ledger.ts). The unique key takes the call id, so one turn can hold many calls of one model.
      db.exec(`
        CREATE TABLE usage_ledger_v12 (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          session_id TEXT NOT NULL,
          turn_id TEXT NOT NULL,
          agent_group_id TEXT NOT NULL,
          conversation TEXT NOT NULL,
          series_id TEXT,
          provider TEXT NOT NULL,
          model TEXT NOT NULL,
          at TEXT NOT NULL,
          input_tokens INTEGER NOT NULL,
          output_tokens INTEGER NOT NULL,
          cache_read_tokens INTEGER NOT NULL,
          cache_write_tokens INTEGER NOT NULL,
          cost_usd REAL,
          cost_source TEXT,
          duration_ms INTEGER NOT NULL,
          source TEXT NOT NULL DEFAULT 'runner' CHECK (source IN ('runner', 'proxy')),
          call_id TEXT NOT NULL DEFAULT '',
          counted INTEGER NOT NULL DEFAULT 1,
          UNIQUE (session_id, turn_id, model, call_id)
        );
        INSERT INTO usage_ledger_v12 (id, session_id, turn_id, agent_group_id, conversation, series_id, provider, model, at,
          input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, duration_ms)
        SELECT id, session_id, turn_id, agent_group_id, conversation, series_id, provider, model, at,
          input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, duration_ms FROM usage_ledger;
        DROP TABLE usage_ledger;
        ALTER TABLE usage_ledger_v12 RENAME TO usage_ledger;
        CREATE INDEX usage_ledger_at ON usage_ledger (at);
        CREATE INDEX usage_ledger_group_at ON usage_ledger (agent_group_id, at);
        CREATE INDEX usage_ledger_calls ON usage_ledger (session_id, source, at);
      `);
    },
  },
];

export const CENTRAL_SCHEMA_VERSION = CENTRAL_MIGRATIONS[CENTRAL_MIGRATIONS.length - 1]!.version;

/** Bring the central DB up to `target` (default: current). Returns the versions applied. */
export function migrateCentral(db: Database.Database, target = CENTRAL_SCHEMA_VERSION): number[] {
  return runMigrations(db, CENTRAL_MIGRATIONS, target);
}
