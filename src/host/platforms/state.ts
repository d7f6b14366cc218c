import type Database from 'better-sqlite3';
import type { Lock, QueueEntry, StateAdapter } from 'chat';
import { randomUUID } from 'node:crypto';
import { prepared } from '../../db/connection.js';
import { isoNow } from '../../shared/time.js';

/**
 * The Chat SDK's state (thread subscriptions, per-thread locks with a TTL, a key-value cache with set-if-absent, lists
 * and per-thread queues) kept in the host's central DB (`chat_*` tables), so a restarted host still
 * knows which events it has handled: a redelivered webhook or a re-polled update is claimed once
 * (`setIfNotExists`), never answered twice. No published state adapter uses SQLite. Every method runs one
 * synchronous statement or one IMMEDIATE transaction, so each is atomic against the others; times are epoch ms.
 */
export class SqliteStateAdapter implements StateAdapter {
  private connected = false;
  private lastPurge = 0;

  constructor(private readonly db: Database.Database) {}

  async connect(): Promise<void> {
    this.connected = true;
  }

  /** Keeps the data: subscriptions, claims and queues outlive the process (unlike the SDK's memory state). */
  async disconnect(): Promise<void> {
    this.connected = false;
  }

  async subscribe(threadId: string): Promise<void> {
    this.check();
    prepared(this.db, 'INSERT OR IGNORE INTO chat_subscriptions (thread_id, created_at) VALUES (?, ?)').run(threadId, isoNow());
  }

  async unsubscribe(threadId: string): Promise<void> {
    this.check();
    prepared(this.db, 'DELETE FROM chat_subscriptions WHERE thread_id = ?').run(threadId);
  }

  async isSubscribed(threadId: string): Promise<boolean> {
    this.check();
    return prepared(this.db, 'SELECT 1 FROM chat_subscriptions WHERE thread_id = ?').get(threadId) !== undefined;
  }

  async acquireLock(threadId: string, ttlMs: number): Promise<Lock | null> {
    this.check();
    const now = Date.now();
    const lock: Lock = { threadId, token: randomUUID(), expiresAt: now + ttlMs };
    // Taken only when free or expired; the upsert's WHERE makes check-and-take one statement.
    const result = prepared(
      this.db,
      `INSERT INTO chat_locks (thread_id, token, expires_at) VALUES (?, ?, ?)
       ON CONFLICT(thread_id) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
       WHERE chat_locks.expires_at <= ?`,
    ).run(threadId, lock.token, lock.expiresAt, now);
    return result.changes === 1 ? lock : null;
  }

  async releaseLock(lock: Lock): Promise<void> {
    this.check();
    prepared(this.db, 'DELETE FROM chat_locks WHERE thread_id = ? AND token = ?').run(lock.threadId, lock.token);
  }

  async forceReleaseLock(threadId: string): Promise<void> {
    this.check();
    prepared(this.db, 'DELETE FROM chat_locks WHERE thread_id = ?').run(threadId);
  }

  /** Extends only a lock still held with this token; never creates or revives one. */
  async extendLock(lock: Lock, ttlMs: number): Promise<boolean> {
    this.check();
    const now = Date.now();
    const result = prepared(this.db, 'UPDATE chat_locks SET expires_at = ? WHERE thread_id = ? AND token = ? AND expires_at > ?').run(
      now + ttlMs,
      lock.threadId,
      lock.token,
      now,
    );
    return result.changes === 1;
  }

  async get<T = unknown>(key: string): Promise<T | null> {
    this.check();
    const row = prepared(this.db, 'SELECT value FROM chat_cache WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)').get(key, Date.now()) as
      { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : null;
  }

  async set<T = unknown>(key: string, value: T, ttlMs?: number): Promise<void> {
    this.check();
    this.purgeExpired();
    prepared(
      this.db,
      `INSERT INTO chat_cache (key, value, expires_at) VALUES (?, ?, ?)
       ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
    ).run(key, JSON.stringify(value ?? null), ttlMs ? Date.now() + ttlMs : null);
  }

  async setIfNotExists(key: string, value: unknown, ttlMs?: number): Promise<boolean> {
    this.check();
    this.purgeExpired();
    const now = Date.now();
    const result = prepared(
      this.db,
      `INSERT INTO chat_cache (key, value, expires_at) VALUES (?, ?, ?)
       ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
       WHERE chat_cache.expires_at IS NOT NULL AND chat_cache.expires_at <= ?`,
    ).run(key, JSON.stringify(value ?? null), ttlMs ? now + ttlMs : null, now);
    return result.changes === 1;
  }

  async delete(key: string): Promise<void> {
    this.check();
    prepared(this.db, 'DELETE FROM chat_cache WHERE key = ?').run(key);
  }

  /** Appends, trims to the newest `maxLength`, and refreshes the TTL of the whole list (like Redis RPUSH+LTRIM+PEXPIRE). */
  async appendToList(key: string, value: unknown, options: { maxLength?: number; ttlMs?: number } = {}): Promise<void> {
    this.check();
    const now = Date.now();
    const expiresAt = options.ttlMs ? now + options.ttlMs : null;
    this.db
      .transaction(() => {
        prepared(this.db, 'DELETE FROM chat_lists WHERE key = ? AND expires_at IS NOT NULL AND expires_at <= ?').run(key, now);
        prepared(
          this.db,
          `INSERT INTO chat_lists (key, seq, value, expires_at)
           VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM chat_lists WHERE key = ?), ?, ?)`,
        ).run(key, key, JSON.stringify(value ?? null), expiresAt);
        prepared(this.db, 'UPDATE chat_lists SET expires_at = ? WHERE key = ?').run(expiresAt, key);
        if (options.maxLength !== undefined) {
          prepared(this.db, 'DELETE FROM chat_lists WHERE key = ? AND seq NOT IN (SELECT seq FROM chat_lists WHERE key = ? ORDER BY seq DESC LIMIT ?)').run(
            key,
            key,
            Math.max(0, options.maxLength),
          );
        }
      })
      .immediate();
  }

  async getList<T = unknown>(key: string): Promise<T[]> {
    this.check();
    const rows = prepared(this.db, 'SELECT value FROM chat_lists WHERE key = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq').all(
      key,
      Date.now(),
    ) as { value: string }[];
    return rows.map((row) => JSON.parse(row.value) as T);
  }

  /** Appends and keeps the newest `maxSize` entries; returns the depth after trimming. */
  async enqueue(threadId: string, entry: QueueEntry, maxSize: number): Promise<number> {
    this.check();
    return this.db
      .transaction(() => {
        prepared(
          this.db,
          `INSERT INTO chat_queues (thread_id, seq, entry)
           VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM chat_queues WHERE thread_id = ?), ?)`,
        ).run(threadId, threadId, JSON.stringify(entry));
        prepared(
          this.db,
          'DELETE FROM chat_queues WHERE thread_id = ? AND seq NOT IN (SELECT seq FROM chat_queues WHERE thread_id = ? ORDER BY seq DESC LIMIT ?)',
        ).run(threadId, threadId, Math.max(1, maxSize));
        return this.depth(threadId);
      })
      .immediate();
  }

  async dequeue(threadId: string): Promise<QueueEntry | null> {
    this.check();
    const row = prepared(
      this.db,
      'DELETE FROM chat_queues WHERE rowid = (SELECT rowid FROM chat_queues WHERE thread_id = ? ORDER BY seq LIMIT 1) RETURNING entry',
    ).get(threadId) as { entry: string } | undefined;
    return row ? (JSON.parse(row.entry) as QueueEntry) : null;
  }

  async queueDepth(threadId: string): Promise<number> {
    this.check();
    return this.depth(threadId);
  }

  private depth(threadId: string): number {
    return (prepared(this.db, 'SELECT count(*) AS n FROM chat_queues WHERE thread_id = ?').get(threadId) as { n: number }).n;
  }

  /** Expired cache entries (event claims live 10 minutes to a day) are removed at most once a minute. */
  private purgeExpired(): void {
    const now = Date.now();
    if (now - this.lastPurge < 60_000) return;
    this.lastPurge = now;
    prepared(this.db, 'DELETE FROM chat_cache WHERE expires_at IS NOT NULL AND expires_at <= ?').run(now);
    prepared(this.db, 'DELETE FROM chat_lists WHERE expires_at IS NOT NULL AND expires_at <= ?').run(now);
  }

  private check(): void {
    if (!this.connected) throw new Error('the SQLite chat state is not connected: call connect() first');
  }
}
