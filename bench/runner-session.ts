import type { ChildProcess } from 'node:child_process';
import type Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSessionDb, prepared } from '../src/db/connection.js';
import { createSessionFolder, type SessionPaths } from '../src/db/layout.js';
import { insertInbound } from '../src/db/messages.js';
import { spawnRunner, stopRunner } from '../src/container/runner-process.js';
import { Waker, type WakeMode } from '../src/db/wake.js';

/**
 * One real `pincer runner` (mock provider) on a temp session folder, as the bench sees it.
 *
 * How "query starts" is observed: the mock provider appends one JSON line to its record file (MOCK_RECORD_FILE)
 * synchronously inside `provider.query()` and `push()`. The file lives in the session folder, which the bench
 * watches (inotify through the runner's own `Waker`), so the bench reads each new line within a fraction of a
 * millisecond of the write, with no polling; each line is stamped with the bench's clock when read. Messages carry a
 * unique token in their text, so a line tells which messages a query (or push) was given. Replies are observed the
 * same way: the watch fires on the WAL write and the bench looks for the `messages_out` row.
 */
export interface RecordLine {
  type: 'query' | 'push';
  prompt: string;
  /** bench clock (performance.now()) when the line was read. */
  at: number;
}

export interface SessionOptions {
  mode: WakeMode;
  /** MOCK_DELAY_MS: the mock waits this long before each answer. */
  delayMs?: number;
  /** a message to leave pending before the runner starts (for cold start). */
  pendingText?: string;
  /** more environment for the runner (e.g. NODE_OPTIONS, to try a memory setting). */
  env?: Record<string, string>;
  /** the session's config.json (e.g. `mcpServers`), written before the runner starts */
  config?: Record<string, unknown>;
}

const RECORD_FILE = 'mock-record.jsonl';
const LOG_FILE = 'runner.log';
/** Fallback re-check while waiting, in case a change notification is missed. */
const FALLBACK_MS = 50;

const live = new Set<RunnerSession>();

/** Pincer's wake-on-change, then fixed-interval polling (the baseline). */
export const MODES: readonly WakeMode[] = ['watch', 'poll'];

/** One value per wake mode: Pincer's and the baseline's figures side by side. */
export type ByMode<T> = Record<WakeMode, T>;

export class RunnerSession {
  readonly paths: SessionPaths;
  readonly db: Database.Database;
  readonly records: RecordLine[] = [];
  readonly child: ChildProcess;
  /** bench clock when the runner was spawned. */
  readonly spawnedAt: number;
  private readonly waker: Waker;
  private recordOffset = 0;
  private recordRest = '';

  private constructor(
    readonly mode: WakeMode,
    options: SessionOptions,
  ) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), `pincer-bench-${mode}-`));
    this.paths = createSessionFolder(root);
    if (options.config) fs.writeFileSync(this.paths.config, JSON.stringify(options.config));
    this.db = openSessionDb(this.paths.db);
    // Every file in the folder: the DB (the runner's own Waker only looks at session.db*) and the record file.
    this.waker = new Waker(root, 'watch', '');
    if (options.pendingText) this.insertChat(options.pendingText);
    this.spawnedAt = performance.now();
    this.child = spawnRunner({
      workspace: root,
      logFile: path.join(root, LOG_FILE),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TZ: 'UTC',
        AGENT_PROVIDER: 'mock',
        PINCER_WAKE: mode,
        MOCK_RECORD_FILE: path.join(root, RECORD_FILE),
        MOCK_DELAY_MS: String(options.delayMs ?? 0),
        ...options.env,
      },
    });
    live.add(this);
  }

  /** Spawn the runner; resolves once it logged `[runner] ready`. */
  static async start(options: SessionOptions): Promise<RunnerSession> {
    const session = new RunnerSession(options.mode, options);
    await session.until('runner ready', () => session.log().includes('[runner] ready'), 30_000);
    return session;
  }

  get pid(): number {
    return this.child.pid!;
  }

  log(): string {
    const file = path.join(this.paths.root, LOG_FILE);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  }

  /** Insert a pending chat message; `at` is the bench clock right after the commit. */
  insertChat(text: string): { id: string; seq: number; at: number } {
    const row = insertInbound(this.db, { kind: 'chat', content: { text, sender: 'bench' } });
    return { ...row, at: performance.now() };
  }

  /** Insert `texts` as pending chat messages in one transaction (a host flushing a queue). */
  insertBurst(texts: string[]): { ids: string[]; at: number } {
    const ids = this.db.transaction(() => texts.map((text) => insertInbound(this.db, { kind: 'chat', content: { text, sender: 'bench' } }).id))();
    return { ids, at: performance.now() };
  }

  /** Read record lines written since the last call, stamping them with the bench clock. */
  readRecords(): void {
    const file = path.join(this.paths.root, RECORD_FILE);
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch {
      return;
    }
    const now = performance.now();
    try {
      const size = fs.fstatSync(fd).size;
      if (size <= this.recordOffset) return;
      const buffer = Buffer.alloc(size - this.recordOffset);
      fs.readSync(fd, buffer, 0, buffer.length, this.recordOffset);
      this.recordOffset = size;
      const lines = (this.recordRest + buffer.toString('utf8')).split('\n');
      this.recordRest = lines.pop() ?? '';
      for (const line of lines) {
        const entry = JSON.parse(line) as { type: 'query' | 'push'; prompt: unknown };
        const prompt = typeof entry.prompt === 'string' ? entry.prompt : JSON.stringify(entry.prompt);
        this.records.push({ type: entry.type, prompt, at: now });
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The first record line whose prompt holds `token`, if read yet. Tokens must not be prefixes of each other. */
  recordFor(token: string, from = 0): RecordLine | undefined {
    this.readRecords();
    for (let i = from; i < this.records.length; i++) if (this.records[i]!.prompt.includes(token)) return this.records[i];
    return undefined;
  }

  hasReplyTo(id: string): boolean {
    return prepared(this.db, 'SELECT 1 FROM messages_out WHERE in_reply_to = ? LIMIT 1').get(id) !== undefined;
  }

  countByStatus(status: string): number {
    return (prepared(this.db, 'SELECT count(*) AS n FROM messages_in WHERE status = ?').get(status) as { n: number }).n;
  }

  isCompleted(id: string): boolean {
    const row = prepared(this.db, 'SELECT status FROM messages_in WHERE id = ?').get(id) as { status: string } | undefined;
    return row?.status === 'completed';
  }

  /**
   * Wait until `check` returns a value, re-checking on every change in the session folder (and every 50 ms at the
   * latest). `minIntervalMs` spaces the checks out where a check is costly and the exact moment matters little.
   */
  async until<T>(what: string, check: () => T | undefined | false, timeoutMs = 60_000, minIntervalMs = 0): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value !== undefined && value !== false) return value;
      if (this.child.exitCode !== null) throw new Error(`runner exited (${this.child.exitCode}) while waiting for ${what}:\n${this.log()}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${this.mode} runner in ${this.paths.root})`);
      if (minIntervalMs > 0) await sleep(minIntervalMs);
      await this.waker.wait(Math.min(left, FALLBACK_MS));
    }
  }

  /** Stop the runner (SIGTERM, then SIGKILL) and remove the folder. */
  async close(): Promise<void> {
    live.delete(this);
    await stopRunner(this.child, 3000);
    this.waker.close();
    if (this.db.open) this.db.close();
    fs.rmSync(this.paths.root, { recursive: true, force: true });
  }
}

/** Stop every runner still running (on failure or Ctrl-C), so the bench never leaves processes behind. */
/**
 * The sampling loop shared by the latency benches: `runners` sessions side by side, each taking samples until
 * `samples` have been taken in all, then all closed. Side by side because the baseline waits most of a second per
 * sample; `sample(session, runner, i)` takes one.
 */
export async function sampleAcross(
  options: SessionOptions,
  runners: number,
  samples: number,
  sample: (session: RunnerSession, runner: number, i: number) => Promise<void>,
): Promise<void> {
  const sessions = await Promise.all(Array.from({ length: runners }, () => RunnerSession.start(options)));
  try {
    let taken = 0;
    await Promise.all(
      sessions.map(async (session, r) => {
        for (let i = 0; taken < samples; i++) {
          taken += 1;
          await sample(session, r, i);
        }
      }),
    );
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

export async function closeAllSessions(): Promise<void> {
  await Promise.all([...live].map((session) => session.close()));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * How long to leave an idle runner alone before the next message: past its own after-work wake-ups, and for the
 * baseline a random phase of its idle poll timer, so every phase is sampled alike.
 */
export function idleGap(mode: WakeMode, pollIdleMs = 1000): Promise<void> {
  return sleep(mode === 'poll' ? uniform(20, 20 + pollIdleMs) : uniform(20, 60));
}

/** A uniformly random number in [min, max). */
export function uniform(min: number, max: number): number {
  return min + Math.random() * (max - min);
}
