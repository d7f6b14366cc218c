import type Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSessionDb } from '../../src/db/connection.js';
import { createSessionFolder, type SessionPaths } from '../../src/db/layout.js';
import { insertInbound, type NewInbound } from '../../src/db/messages.js';
import type { InboundRow, OutboundRow } from '../../src/db/types.js';

/**
 * A real session folder in a temp dir with its own DB connection, for tests. `cleanup()` closes and removes it.
 */
export interface TestSession {
  paths: SessionPaths;
  db: Database.Database;
  /** insert a pending chat message from `sender` (default "alice"). */
  chat(text: string, extra?: Partial<NewInbound> & { sender?: string }): { id: string; seq: number };
  insert(message: NewInbound): { id: string; seq: number };
  inbound(id: string): InboundRow;
  allInbound(): InboundRow[];
  outbound(): OutboundRow[];
  /** outbound rows' content parsed, oldest first. */
  outboundContents(): Record<string, unknown>[];
  cleanup(): void;
}

const created: TestSession[] = [];

export function createTestSession(prefix = 'pincer-test-'): TestSession {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const paths = createSessionFolder(root);
  const db = openSessionDb(paths.db);
  const session: TestSession = {
    paths,
    db,
    chat: (text, extra = {}) => {
      const { sender = 'alice', ...rest } = extra;
      return insertInbound(db, { kind: 'chat', content: { text, sender }, ...rest });
    },
    insert: (message) => insertInbound(db, message),
    inbound: (id) => db.prepare('SELECT * FROM messages_in WHERE id = ?').get(id) as InboundRow,
    allInbound: () => db.prepare('SELECT * FROM messages_in ORDER BY seq').all() as InboundRow[],
    outbound: () => db.prepare('SELECT * FROM messages_out ORDER BY seq').all() as OutboundRow[],
    outboundContents: () => session.outbound().map((row) => JSON.parse(row.content) as Record<string, unknown>),
    cleanup: () => {
      if (db.open) db.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
  created.push(session);
  return session;
}

/** Remove every session created by this test file (call from afterEach/afterAll). */
export function cleanupSessions(): void {
  for (const session of created.splice(0)) session.cleanup();
}
