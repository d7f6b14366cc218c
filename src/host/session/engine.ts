import fs from 'node:fs';
import type { ConfigFile } from '../../db/config-file.js';
import { sessionPaths, writeJsonAtomic } from '../../db/layout.js';
import { commitMark, getSessionValue, heldRows, readRunnerState, sessionKeys } from '../../db/state.js';
import { firstDueRouting, markBatchError, refuseDueMessages } from '../../db/session-queries.js';
import type { RunnerState } from '../../db/types.js';
import { launchLockHeld } from '../../container/handle.js';
import { runnerLimits } from '../../container/limits.js';
import { formatSize } from '../../container/limits-report.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import { firstTryNotices } from './retry-notice.js';
import type { RunnerExit, RunnerSupervisor } from './runners.js';
import { SessionDbKeeper } from './db-keeper.js';
import { SessionSlot } from './slot.js';
import type { HostConfig } from '../types.js';
import type { Admission, EventRouting, SessionEvent } from './port.js';
import { ChangeSignal } from './signal.js';
import { overQuotaNotice, SessionDiskQuota, sessionDiskLimits, type FolderUsage } from './disk-quota.js';

/** Tell the chat once a runner has crashed this many times in a row. */
const CRASH_NOTICE_AT = 3;
/** Tell the chat once a session has waited this long for room for its runner (PINCER_MAX_RUNNERS). */
const QUEUE_NOTICE_MS = 10_000;
/** Events kept for a host that has not taken them yet (a lost host may never come back). */
const MAX_EVENTS = 200;

/** Where a session's engine runs its runner from (paths on the machine that holds the session folder). */
export interface EngineLaunch {
  /** the agent group's folder (read-only in a sandbox) and the shared global folder. */
  groupDir: string;
  globalDir: string;
  /** the runner's stderr: outside the session folder the agent writes. */
  logFile: string;
  /** the launch lock the runner's process tree holds (one runner per session, enforced by the OS). */
  lockFile?: string;
}

export interface EngineDeps {
  session: { id: string; folder: string };
  config: Pick<HostConfig, 'sweep' | 'runners'>;
  supervisor: RunnerSupervisor;
  launch: EngineLaunch;
  log: Logger;
  /** make the session folder again as at provisioning (it was deleted); default: the bare layout. */
  restoreFolder?: () => void;
  /** every commit reaches the disk before it returns (`synchronous=FULL`): what a served session acknowledges is kept. */
  durable?: boolean;
}

/**
 * The work that happens next to a session's folder, wherever it is: the sweep (retries, give-ups, the next occurrence
 * of recurring tasks, task history), the runner's lifecycle (start when something is due, idle stop, heartbeat and
 * turn limits, crash back-off) and a lost or damaged `session.db` set up afresh. It runs in the host for a local
 * session and in `pincer session-serve` for a served one; the host hears of it only through the session port
 * (events, state, outbound rows). Woken by every write to the session's database.
 */
export class SessionEngine {
  readonly slot: SessionSlot;
  /** bumped after every turn of the loop and every event: what a waiting `sync` watches. */
  readonly changes = new ChangeSignal();
  private readonly events: { version: number; event: SessionEvent }[] = [];
  private admission: Admission = { over: false, notice: '' };
  private config: ConfigFile = {};
  private secrets: Record<string, string> = {};
  private readonly keeper: SessionDbKeeper;
  /** the session folder's size limit (checked before each start and while a runner runs). */
  private readonly disk: SessionDiskQuota;
  private draining = false;
  /** the chat was told that this wait for room (since then) is long. */
  private queueToldSince: number | undefined;
  /** how many times the database was set up afresh. */
  incarnation = 0;
  /** what the last change announced stood for (`announceChange`). */
  private announced = '';

  constructor(private readonly deps: EngineDeps) {
    this.keeper = new SessionDbKeeper({
      supervisor: deps.supervisor,
      log: deps.log,
      restoreFolder: deps.restoreFolder,
      emit: (event) => this.emit(event),
    });
    this.slot = new SessionSlot(deps.session, deps.log, this.keeper.open(deps.session), deps.durable);
    this.disk = new SessionDiskQuota(deps.session.folder, sessionDiskLimits(deps.config.runners.env), deps.log);
  }

  get id(): string {
    return this.deps.session.id;
  }

  get logFile(): string {
    return this.deps.launch.logFile;
  }

  /** The runner's pid on this machine (for a sandbox: its launcher's), when one runs. */
  runnerPid(): number | undefined {
    return this.deps.supervisor.pid(this.id);
  }

  async stopRunner(): Promise<void> {
    await this.deps.supervisor.stop(this.id);
  }

  /** Start the loop. */
  run(): void {
    this.slot.run(async (slot) => {
      try {
        return await this.keeper.guard(slot, () => this.tick());
      } finally {
        this.announceChange();
      }
    });
  }

  /**
   * After a turn of the loop: a waiting `sync` wakes only if what it would read may have changed — something was
   * committed to the database (by this connection or another: the runner, its MCP server) or the runner's process,
   * its wait for room, the database incarnation or the provider session changed. An idle session's fallback turns
   * wake nobody, so the host's side of it costs nothing between changes.
   */
  private announceChange(): void {
    const db = this.slot.db;
    const id = this.id;
    const written = db.open ? commitMark(db) : 'closed';
    const key = `${written}|${this.deps.supervisor.pid(id) ?? '-'}|${this.deps.supervisor.waitingSince(id) ?? '-'}|${this.incarnation}|${this.config.sessionId ?? ''}`;
    if (key === this.announced) return;
    this.announced = key;
    this.changes.bump();
  }

  /** Events after `version`, and the version to ask after next. */
  eventsAfter(version: number): SessionEvent[] {
    return this.events.filter((e) => e.version > version).map((e) => e.event);
  }

  emit(event: SessionEvent): void {
    // A new database: the provider's conversation went with the old one's history, so no runner may resume it.
    if (event.type === 'reset') {
      this.incarnation += 1;
      if (this.config.sessionId) this.publishConfig({ ...this.config, sessionId: undefined }, this.secrets);
    }
    const version = this.changes.bump();
    this.events.push({ version, event });
    if (this.events.length > MAX_EVENTS) this.events.splice(0, this.events.length - MAX_EVENTS);
    if (event.type === 'quarantined') this.slot.retire();
  }

  setAdmission(admission: Admission): void {
    const changed = admission.over !== this.admission.over || admission.hold !== this.admission.hold;
    this.admission = admission;
    if (changed) this.slot.waker.notify();
  }

  /**
   * The runner configuration: written atomically into the folder, and kept for the launches to come. `secrets` (the
   * values its MCP servers refer to) stay in memory: each launch hands them to its runner on stdin.
   */
  publishConfig(config: ConfigFile, secrets?: Record<string, string>): void {
    this.config = config;
    this.secrets = secrets ?? {};
    writeJsonAtomic(sessionPaths(this.deps.session.folder).config, config);
  }

  /** Look again now (whether a runner may start, what is due): something it waits for may have changed. */
  wake(): void {
    this.slot.waker.notify();
  }

  wantRunner(): void {
    this.slot.runnerWanted = true;
    this.slot.waker.notify();
  }

  /** The live runner's state row (of `row`, default: read now), or undefined. */
  liveState(row = readRunnerState(this.slot.db)): RunnerState | undefined {
    return this.deps.supervisor.liveState(this.id, row);
  }

  /** No runner starts any more (the host stops); the loop goes on sweeping until `close()`. */
  stopStarting(): void {
    this.draining = true;
  }

  /** Stop taking work: no runner starts any more; the one running finishes its query and stops. */
  async drain(): Promise<void> {
    this.draining = true;
    await this.deps.supervisor.stop(this.id);
  }

  /** Since when the session waits for room for its runner (the host is at PINCER_MAX_RUNNERS), if it does. */
  waitingSince(): number | undefined {
    return this.deps.supervisor.waitingSince(this.id);
  }

  async close(): Promise<void> {
    this.deps.supervisor.withdraw(this.id);
    await this.slot.close();
    this.changes.wakeAll();
  }

  /** Sweep and keep the runner right. Returns how long the loop may sleep if nothing changes. */
  private async tick(): Promise<number> {
    const { config } = this.deps;
    const { slot } = this;
    const supervisor = this.deps.supervisor;
    const id = this.id;
    const timezone = this.config.timezone ?? 'UTC';
    const alive = supervisor.isRunning(id);
    const { lockFile } = this.deps.launch;
    const live = supervisor.liveState(id, readRunnerState(slot.db));
    const sweep = slot.sweeper.sweep({
      runnerAlive: alive,
      batchIds: live?.batchIds ?? [],
      heldIds: () => (live ? [...(readRunnerState(slot.db)?.batchIds ?? []), ...heldRows(slot.db)] : []),
      // no runner of ours has said what it holds: one still holding the launch lock is another's (or ours, not yet ready)
      unknownRunner: () => !live && lockFile !== undefined && launchLockHeld(lockFile),
      timezone,
      config: config.sweep,
    });
    if (sweep.retried.length + sweep.failed.length > 0) this.emit({ type: 'counts', retried: sweep.retried.length, failed: sweep.failed.length });
    for (const row of sweep.retried) this.deps.log.info(`message ${row.seq} in ${id} back to pending after try ${row.tries} (${row.last_error ?? 'stale'})`);
    // (not while the host stops: the runner was stopped by it, and the next try is at the next start, not in seconds)
    if (!this.draining) for (const notice of firstTryNotices(sweep.retried, config.sweep)) this.notice(notice.row, notice.text);
    for (const { row, nextAt } of sweep.scheduled) this.deps.log.info(`task series ${row.series_id ?? row.id} in ${id}: next occurrence at ${nextAt}`);
    if (sweep.pruned > 0) this.deps.log.info(`pruned ${sweep.pruned} finished task rows in ${id}`);
    for (const row of sweep.failed) {
      this.deps.log.warn(`message ${row.seq} in ${id} failed: ${row.last_error}`);
      this.notice(row, `Your message could not be processed and was given up (${row.last_error}).`);
    }
    for (const { row, error } of sweep.recurrenceErrors) this.notice(row, `The recurring task ${row.series_id ?? row.id} was not rescheduled: ${error}`);
    // With no runner, nothing due and nothing in work, only a missed file event is left to cover (none is missed while
    // watching). Rows in work with no runner of ours are another's (an orphan finishing its turn): its end writes nothing.
    const idle = !alive && !slot.runnerWanted && !sweep.inWork && slot.waker.watching;
    const fallbackMs = idle ? config.sweep.idleIntervalMs : config.sweep.intervalMs;
    const waits = [fallbackMs, sweep.nextDueMs];
    if (alive) {
      if (supervisor.check(id, live, sweep.hasDue, slot.lastActivityAt) === 'turn-limit' && live) this.endedByTurnLimit(live);
      waits.push(supervisor.idleDeadlineMs(live, slot.lastActivityAt));
      // An idle runner would start the next turn by itself: over budget, stop it so turns go through the gate below.
      if (live?.state === 'idle' && this.admission.over) void supervisor.stop(id);
    }
    let starting = false;
    let disk: ReturnType<SessionDiskQuota['beforeStart']>;
    if (!alive && (sweep.hasDue || slot.runnerWanted) && !this.draining) {
      const backoff = supervisor.backoffRemainingMs(id);
      if (backoff > 0) waits.push(backoff);
      else if (this.admission.over) this.refuseDue(this.admission.notice, 'over budget');
      else if (this.admission.hold !== undefined) {
        // the group's model runtime is not ready: the messages wait; the host lifts the hold once it publishes one
      } else if ((disk = this.disk.beforeStart(() => slot.waker.notify())) !== 'ok') {
        // measuring: woken when done; over: refused, told why (the folder is measured again at the next try)
        if (disk === 'over') this.refuseDue(overQuotaNotice(this.disk.lastUsage()!, this.disk.limits), 'the session folder is over its limit');
      } else {
        starting = true;
        const started = supervisor.start(
          {
            sessionId: id,
            folder: this.deps.session.folder,
            provider: this.config.provider ?? 'mock',
            timezone,
            ...this.deps.launch,
            ...(Object.keys(this.secrets).length > 0 ? { secrets: this.secrets } : {}),
          },
          () => slot.waker.notify(),
        );
        if (started) this.disk.watch((usage) => this.overDisk(usage));
        if (started || supervisor.waitingSince(id) === undefined) slot.runnerWanted = false;
        else waits.push(this.waitingForRoom(supervisor.waitingSince(id)!));
      }
    }
    // out of the line for room as soon as it no longer starts a runner (nothing due, a back-off, over budget, draining)
    if (!starting) supervisor.withdraw(id);
    return Math.max(1, Math.min(...waits.filter((w): w is number => w !== undefined)));
  }

  /**
   * The session waits for room for its runner: its messages stay pending, the chat is shown typing (the port's state),
   * and once the wait passes QUEUE_NOTICE_MS it is told why, once per wait. Returns when to look again.
   */
  private waitingForRoom(since: number): number {
    const waited = Date.now() - since;
    if (waited < QUEUE_NOTICE_MS) return QUEUE_NOTICE_MS - waited + 1;
    if (this.queueToldSince !== since) {
      this.queueToldSince = since;
      const routing = firstDueRouting(this.slot.db) ?? NO_ROUTING;
      this.deps.log.info(`session ${this.id} has waited ${waited} ms for room for its runner`);
      this.notice(routing, 'Many conversations are active on this host right now; your message is queued and will be answered as soon as an agent is free.');
    }
    return this.deps.config.sweep.intervalMs;
  }

  /** The runner ended: keep its provider session for the next one, and tell the chat when it keeps crashing. */
  onRunnerExit(exit: RunnerExit): void {
    this.disk.unwatch();
    if (!exit.requested) this.slot.suspectDamage = true; // a crash may come from a damaged database file
    try {
      const state = readRunnerState(this.slot.db);
      const providerSession = state && getSessionValue(this.slot.db, sessionKeys(state.provider).sessionId);
      if (providerSession && providerSession !== this.config.sessionId) {
        this.publishConfig({ ...this.config, sessionId: providerSession }, this.secrets);
        this.emit({ type: 'provider-session', providerSessionId: providerSession });
      }
    } catch (err) {
      this.deps.log.warn(`could not save the provider session of ${exit.sessionId}: ${errorMessage(err)}`);
    }
    if (exit.limits?.oomKills) {
      const limit = formatSize(runnerLimits(this.deps.config.runners.env).memoryBytes);
      this.notice(
        NO_ROUTING,
        `The agent's sandbox ran out of memory: a process of it was stopped at the ${limit} limit (PINCER_CONTAINER_MEMORY). What it was doing may be unfinished; the administrator can raise the limit.`,
      );
    }
    if (exit.crashes === CRASH_NOTICE_AT) {
      const log = lastLogLine(this.deps.launch.logFile);
      this.notice(
        NO_ROUTING,
        `The agent could not be started (${exit.crashes} failures in a row, last exit ${exit.code}${log ? `: ${log}` : ''}); retrying with back-off.`,
      );
    }
    this.slot.waker.notify();
  }

  /** The provider session id the next runner resumes. */
  providerSessionId(): string | null {
    return this.config.sessionId ?? null;
  }

  private notice(routing: EventRouting, text: string): void {
    this.emit({ type: 'notice', routing: { channel_type: routing.channel_type, platform_id: routing.platform_id, thread_id: routing.thread_id }, text });
  }

  /** Refuse what is due (it fails with `notice`), and tell each conversation once. */
  private refuseDue(notice: string, why: string): void {
    const refused = refuseDueMessages(this.slot.db, notice);
    const told = new Set<string>();
    for (const row of refused) {
      const key = `${row.channel_type ?? ''}:${row.platform_id ?? ''}:${row.thread_id ?? ''}`;
      this.deps.log.warn(`message ${row.seq} in ${this.id} refused: ${why}`);
      if (told.has(key)) continue;
      told.add(key);
      this.notice(row, notice);
    }
  }

  /**
   * The running agent filled its folder past the limit: its runner is killed at once (a graceful stop would give it
   * seconds more to write). The batch in work says why; it comes back due and is refused with the notice. An idle
   * runner had no batch (a process it left running wrote): the chat is told now.
   */
  private overDisk(usage: FolderUsage): void {
    const notice = overQuotaNotice(usage, this.disk.limits);
    this.deps.log.warn(`session ${this.id}: the session folder holds over ${usage.bytes} bytes / ${usage.files} entries, past its limit; killing its runner`);
    const live = this.liveState();
    if (live && live.batchIds.length > 0) markBatchError(this.slot.db, live.batchIds, notice);
    else this.notice(NO_ROUTING, notice);
    void this.deps.supervisor.kill(this.id).finally(() => this.slot.waker.notify());
  }

  /** A query ran past the turn limit and its runner was killed: the batch says why (for its retry) and the chat is told. */
  private endedByTurnLimit(live: RunnerState): void {
    const limitS = Math.round(this.deps.config.runners.turnLimitMs / 1000);
    markBatchError(this.slot.db, live.batchIds, `the agent did not finish within the turn limit (${limitS} s)`);
    const routing = live.routing;
    this.notice(
      { channel_type: routing?.channelType ?? null, platform_id: routing?.platformId ?? null, thread_id: routing?.threadId ?? null },
      `The agent did not finish within ${limitS} s and was stopped; your message will be tried again (PINCER_TURN_LIMIT_MS sets the limit).`,
    );
  }
}

const NO_ROUTING: EventRouting = { channel_type: null, platform_id: null, thread_id: null };

function lastLogLine(file: string): string {
  try {
    // The last line without its time stamp: it is shown in the chat.
    return (fs.readFileSync(file, 'utf8').trim().split('\n').slice(-1)[0] ?? '').replace(/^\S+Z (?=\[)/, '');
  } catch {
    // no log yet: no last line to show
    return '';
  }
}
