import type { ConfigFile } from '../../db/config-file.js';
import type { NewInbound } from '../../db/messages.js';
import type { Answer, AnswerRouting } from '../../db/questions.js';
import type { InboundRow, OutboundRow, RunnerState } from '../../db/types.js';
import type { TurnUsageRow } from '../../db/usage.js';
import type { TaskCommand } from '../../db/tasks.js';
import type { ToolActivity } from '../../db/tool-activity.js';
import { PincerError } from '../../shared/errors.js';

/**
 * The session port: everything the host does to one session, and the only way it reaches one. Two implementations:
 * `LocalSessionPort` (the session folder on this machine, its engine in the host process) and `RemoteSessionPort`
 * (an HTTP client of `pincer session-serve`, which runs the same engine next to the folder). Every method may throw
 * `SessionPortError`; the host never sees a session's database or files otherwise.
 */
export interface SessionPort {
  readonly sessionId: string;
  /** Write an inbound message; idempotent on `row.id` (a second call with the same id returns the first's receipt). */
  accept(row: InboxRow): Promise<{ id: string; seq: number }>;
  /** Write the answer to a question the agent asked (late answers become a message the agent sees). */
  answer(answer: Answer, routing: AnswerRouting): Promise<{ id: string; seq: number; late: boolean }>;
  /**
   * What changed since `afterVersion`: the session's state, its events (notices, a reset, …) and the outbound rows
   * waiting for delivery with `seq > afterSeq` (at most 200, oldest first). With `waitMs`, a long-poll: resolves as
   * soon as the version moves past `afterVersion`, or after the wait with the same version.
   */
  sync(afterVersion: number, afterSeq: number, waitMs: number, signal?: AbortSignal): Promise<SessionSnapshot>;
  /** The session's state now (the snapshot of `sync` without waiting or rows). */
  state(): Promise<SessionState>;
  /** Record what became of outbound rows: delivered (with the platform's id) or failed for good (the agent is told). */
  ack(results: OutboundResult[]): Promise<void>;
  /** The platform's message id of the message with this `seq` (for edits and reactions), if there is one. */
  platformMessageIdOf(seq: number): Promise<string | null>;
  /** A file the agent sent with an outbound row: a local path the channel can read. */
  outboxFile(rowId: string, name: string): Promise<{ name: string; path: string }>;
  /**
   * Publish the runner configuration (`config.json`), atomically, with the values of the secrets its MCP servers refer
   * to: those are never written anywhere, only handed to each runner at its launch.
   */
  publishConfig(config: ConfigFile, secrets?: Record<string, string>): Promise<void>;
  /** Whether the session's agent group may start a turn now; when not, due messages are refused with `notice`. */
  setAdmission(admission: Admission): Promise<void>;
  /** Start a runner now even with nothing due (a restart asked for), or stop the one running. */
  runner(command: 'start' | 'stop'): Promise<void>;
  /** Usage rows the runner recorded after `afterId`. */
  usageAfter(afterId: number): Promise<TurnUsageRow[]>;
  /**
   * Of the message ids the host accepted, those the session is done with (finished, and nothing waits for delivery).
   * Nothing, when its database is no longer the one of `incarnation` (set up afresh since: its absent rows were lost,
   * not finished).
   */
  done(ids: string[], incarnation: number): Promise<string[]>;
  /** The session's active tasks, soonest first, and changes to them. */
  tasks(): Promise<InboundRow[]>;
  changeTask(taskId: string, command: TaskCommand, timezone: string): Promise<InboundRow | null>;
  /** The inbound row with this id (for agent-to-agent hops), if any. */
  inbound(id: string): Promise<InboundRow | undefined>;
  /** The last lines of the runner log. */
  logTail(lines: number): Promise<string[]>;
  /** Stop taking work, let the runner finish (or hand back what is open), and report what a later launch needs. */
  drain(): Promise<DrainResult>;
  /** Let go of the session (the host stops, or it was quarantined); nothing is drained. */
  close(): Promise<void>;
}

/** An inbound message as the host accepted it: its id is the host's, so a resend is the same row. */
export type InboxRow = NewInbound & { id: string };

export type OutboundResult = { id: string; delivered: true; platformMessageId: string | null } | { id: string; delivered: false; error: string };

export interface SessionSnapshot {
  version: number;
  state: SessionState;
  /** events after the version asked after, oldest first. */
  events: SessionEvent[];
  outbound: OutboundRow[];
}

export interface SessionState {
  /** the live runner's state row (not a stale row of an earlier runner), or null when none runs or it has not written one. */
  runner: (RunnerState & { hostPid: number }) | null;
  /** the pid of the runner process on the session's machine while one runs (it may not have written its state yet). */
  runnerPid: number | null;
  /** the provider the session's last runner started with, if one ever ran. */
  provider: string | null;
  /** messages in work, due, or waiting for a retry (a task scheduled later does not count). */
  open: number;
  /** messages pending or processing. */
  pending: number;
  /** outbound rows waiting for delivery. */
  undelivered: number;
  /** the newest last_error of an open or failed message. */
  lastError: string | null;
  /** when the next scheduled message falls due (ISO), if any. */
  nextDueAt: string | null;
  /** the newest usage row's id: usage is read only when it grew (absent from a session process of an older version). */
  lastUsageId?: number;
  /** the provider's conversation id, to resume it (saved when a runner stops). */
  providerSessionId: string | null;
  /** the launch's epoch (0 for a local session). */
  epoch: number;
  /** how many times the session's database was set up afresh (by this launch). */
  incarnation: number;
  /**
   * the session waits for room for its runner (the host is at PINCER_MAX_RUNNERS): since when, and where its first due
   * message came from (the chat is shown typing there). Absent: it does not wait (or its port does not say).
   */
  queued?: { since: string; routing: EventRouting } | null;
  /**
   * the newest tool calls the runner recorded (src/db/tool-activity.ts), oldest first, at most 20, cleaned: what the
   * chat is shown live. Absent from a session process of an older version.
   */
  tools?: ToolActivity[];
}

/** The state of a session with no runner and no work: a closed local session, or a launch not yet heard from. */
export function idleSessionState(nextDueAt: string | null = null): SessionState {
  return {
    runner: null,
    runnerPid: null,
    provider: null,
    open: 0,
    pending: 0,
    undelivered: 0,
    lastError: null,
    nextDueAt,
    providerSessionId: null,
    epoch: 0,
    incarnation: 0,
  };
}

export interface Admission {
  /** over budget: due messages are refused with `notice` */
  over: boolean;
  notice: string;
  /** no runner may start yet (the group's model runtime is not ready: why); due messages wait, nothing is refused */
  hold?: string;
}

export interface DrainResult {
  nextDueAt: string | null;
  providerSessionId: string | null;
}

/** Something the chat must be told, with the routing of the row it concerns (null: the session's own conversation). */
export type SessionEvent =
  | { type: 'notice'; routing: EventRouting; text: string }
  /** the session's database was set up afresh: the host writes what it accepted and was not done into it again. */
  | { type: 'reset'; text: string; unfinished: string[] | null }
  /** the session's folder is unsafe to use (a link at session.db): it is set aside. */
  | { type: 'quarantined'; reason: string }
  /** how many messages the sweep put back for another try, and gave up (for the host's metrics). */
  | { type: 'counts'; retried: number; failed: number }
  /** the runner stopped and saved its provider session (the host keeps it for the next launch). */
  | { type: 'provider-session'; providerSessionId: string };

export interface EventRouting {
  channel_type: string | null;
  platform_id: string | null;
  thread_id: string | null;
}

/**
 * Why a port call failed on the way (bad input and unknown tasks are `PincerError`s, as for a local session):
 * `unavailable` (no answer: retry later), `fenced` (another launch owns the session), `failed` (it answered 5xx).
 */
export class SessionPortError extends PincerError {
  constructor(
    /** kept as a subclass for this: a failure on the way, told apart from the session's own answers. */
    readonly reason: 'unavailable' | 'fenced' | 'failed',
    message: string,
    options?: ErrorOptions,
  ) {
    super(reason === 'fenced' ? 'conflict' : reason === 'failed' ? 'internal' : 'unavailable', message, { cause: options?.cause });
    this.name = 'SessionPortError';
  }
}

export function isSessionPortError(err: unknown, code?: SessionPortError['reason']): err is SessionPortError {
  return err instanceof SessionPortError && (code === undefined || err.reason === code);
}

export type { InboundRow, OutboundRow };
