import { refuseOutboundOverLimits } from '../../db/outbound-limits.js';
import fs from 'node:fs';
import path from 'node:path';
import type { ConfigFile } from '../../db/config-file.js';
import { getInbound, insertInbound } from '../../db/messages.js';
import { insertAnswer, type Answer, type AnswerRouting } from '../../db/questions.js';
import {
  doneMessages,
  firstDueRouting,
  inboundReceipt,
  markDelivered,
  platformMessageIdOf,
  recordDeliveryFailure,
  sessionCounts,
  undeliveredRows,
} from '../../db/session-queries.js';
import { readRunnerState } from '../../db/state.js';
import { recentToolActivity } from '../../db/tool-activity.js';
import { taskLimitProblem } from '../../db/task-limit.js';
import type { InboundRow } from '../../db/types.js';
import { turnUsageAfter, type TurnUsageRow } from '../../db/usage.js';
import { changeTask, listTasks, type TaskCommand } from '../../db/tasks.js';
import { checkRegularFileInside, checkSafeId, isUntrustedPathError } from '../untrusted-files.js';
import type { SessionEngine } from './engine.js';
import { PincerError } from '../../shared/errors.js';
import { idleSessionState } from './port.js';
import { type Admission, type DrainResult, type InboxRow, type OutboundResult, type SessionPort, type SessionSnapshot, type SessionState } from './port.js';

const CLOSED_STATE: SessionState = { ...idleSessionState(), lastUsageId: 0 };

/**
 * The session port over a session folder on this machine: each call is a query of `src/db` on the engine's own
 * connection, and `sync` waits on the engine's change signal. The host uses it for its local sessions, and
 * `pincer session-serve` serves it over HTTP.
 */
export class LocalSessionPort implements SessionPort {
  constructor(
    private readonly engine: SessionEngine,
    /** the launch's epoch (0 for a session the host runs itself). */
    private readonly epoch = 0,
  ) {}

  get sessionId(): string {
    return this.engine.id;
  }

  private get db() {
    return this.engine.slot.db;
  }

  async accept(row: InboxRow): Promise<{ id: string; seq: number }> {
    const existing = inboundReceipt(this.db, row.id);
    if (existing) return existing;
    if (row.kind === 'task') {
      const full = taskLimitProblem(this.db);
      if (full) throw new PincerError('invalid-input', full);
    }
    const written = insertInbound(this.db, row);
    this.engine.slot.touch();
    this.engine.slot.committed();
    return written;
  }

  async answer(answer: Answer, routing: AnswerRouting): Promise<{ id: string; seq: number; late: boolean }> {
    const written = insertAnswer(this.db, answer, routing);
    this.engine.slot.touch();
    this.engine.slot.committed();
    return written;
  }

  async sync(afterVersion: number, afterSeq: number, waitMs: number, signal?: AbortSignal): Promise<SessionSnapshot> {
    await this.engine.changes.wait(afterVersion, waitMs, signal);
    const version = this.engine.changes.version;
    const events = this.engine.eventsAfter(afterVersion);
    // Set aside (quarantined): its database is closed; the host hears why and lets go of it.
    if (!this.db.open) return { version, state: CLOSED_STATE, events, outbound: [] };
    refuseOutboundOverLimits(this.db); // the agent's rows: too large or too many are never read into memory
    return { version, state: this.stateNow(), events, outbound: undeliveredRows(this.db, afterSeq) };
  }

  async state(): Promise<SessionState> {
    return this.db.open ? this.stateNow() : CLOSED_STATE;
  }

  private stateNow(): SessionState {
    const row = readRunnerState(this.db);
    const live = this.engine.liveState(row);
    const hostPid = this.engine.runnerPid();
    return {
      runner: live && hostPid !== undefined ? { ...live, hostPid } : null,
      runnerPid: hostPid ?? null,
      provider: row?.provider ?? null,
      ...sessionCounts(this.db),
      providerSessionId: this.engine.providerSessionId(),
      epoch: this.epoch,
      incarnation: this.engine.incarnation,
      queued: this.queued(),
      tools: recentToolActivity(this.db),
    };
  }

  private queued(): SessionState['queued'] {
    const since = this.engine.waitingSince();
    if (since === undefined) return null;
    const routing = firstDueRouting(this.db);
    return routing ? { since: new Date(since).toISOString(), routing } : null;
  }

  async ack(results: OutboundResult[]): Promise<void> {
    for (const result of results) {
      if (result.delivered) markDelivered(this.db, result.id, result.platformMessageId);
      else recordDeliveryFailure(this.db, result.id, result.error);
    }
    this.engine.slot.committed();
  }

  async platformMessageIdOf(seq: number): Promise<string | null> {
    return platformMessageIdOf(this.db, seq);
  }

  /**
   * A file the agent sent: `outbox/<message id>/<name>`, a plain name, a regular file there — no link anywhere on the
   * way (untrusted-files.ts), since the agent writes both the row and the folder.
   */
  async outboxFile(rowId: string, name: string): Promise<{ name: string; path: string }> {
    try {
      checkSafeId(rowId, 'message id');
      if (name !== path.basename(name) || name === '..' || name === '.') throw new PincerError('invalid-input', `file name "${name}" is not a plain name`);
      return { name, path: checkRegularFileInside(this.engine.slot.session.folder, ['outbox', rowId, name]) };
    } catch (err) {
      if (isUntrustedPathError(err, 'missing')) throw new PincerError('not-found', `file "${name}" is missing from outbox/${rowId}/`);
      if (isUntrustedPathError(err)) throw new PincerError('invalid-input', `file "${name}" refused: ${err.message}`);
      throw err;
    }
  }

  async publishConfig(config: ConfigFile, secrets?: Record<string, string>): Promise<void> {
    this.engine.publishConfig(config, secrets);
  }

  async setAdmission(admission: Admission): Promise<void> {
    this.engine.setAdmission(admission);
  }

  async runner(command: 'start' | 'stop'): Promise<void> {
    if (command === 'start') this.engine.wantRunner();
    else await this.engine.stopRunner();
  }

  async usageAfter(afterId: number): Promise<TurnUsageRow[]> {
    return turnUsageAfter(this.db, afterId);
  }

  async done(ids: string[], incarnation: number): Promise<string[]> {
    if (incarnation !== this.engine.incarnation) return [];
    return doneMessages(this.db, ids); // a read: nothing to make durable, no reader to wake
  }

  async tasks(): Promise<InboundRow[]> {
    return listTasks(this.db);
  }

  async changeTask(taskId: string, command: TaskCommand, timezone: string): Promise<InboundRow | null> {
    const row = changeTask(this.db, taskId, command, timezone);
    this.engine.slot.touch();
    this.engine.slot.committed();
    return row;
  }

  async inbound(id: string): Promise<InboundRow | undefined> {
    return getInbound(this.db, id);
  }

  async logTail(lines: number): Promise<string[]> {
    let text: string;
    try {
      text = fs.readFileSync(this.engine.logFile, 'utf8');
    } catch {
      // no log yet: no lines
      return [];
    }
    return text.trimEnd().split('\n').slice(-lines);
  }

  async drain(): Promise<DrainResult> {
    await this.engine.drain();
    return { nextDueAt: sessionCounts(this.db).nextDueAt, providerSessionId: this.engine.providerSessionId() };
  }

  async close(): Promise<void> {
    await this.engine.close();
  }
}
