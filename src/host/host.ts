import fs from 'node:fs';
import path from 'node:path';
import { isSessionDbError, prepared } from '../db/connection.js';
import { parseInboundContent, type InboundContent } from '../db/content.js';
import { getInbound, insertInbound } from '../db/messages.js';
import { insertAnswer } from '../db/questions.js';
import { getSessionValue, readRunnerState, sessionKeys } from '../db/state.js';
import { CANCELLED_TASK } from '../db/tasks.js';
import type { OutboundRow, RunnerState } from '../db/types.js';
import { createLogger, errorMessage, type Logger } from '../shared/log.js';
import { NO_TRACING, type Tracing } from '../shared/tracing.js';
import { parseTimeInZone } from '../shared/time.js';
import { ActionHandlers } from './actions.js';
import { CentralStore, openCentralDb } from './central-db/store.js';
import type { AgentGroup, SessionRecord } from './central-db/types.js';
import type { ChannelAdapter, HostApi, InboundEnvelope, InboundReceipt, SessionSummary } from './channels/types.js';
import { conversationOf, Delivery, type SessionHandle } from './delivery.js';
import { HostError, isHostError } from './errors.js';
import { prepareHome } from './home.js';
import { firstTryNotices } from './retry-notice.js';
import { HomeLock, type LockInfo } from './home-lock.js';
import { credentialEnvironment, CredentialProxy, PROXIED_CREDENTIALS } from './credential-proxy.js';
import { scrubOwnEnvironment } from './environ-scrub.js';
import { SecretsStore } from './secrets.js';
import { nextOccurrence, validateCron } from './recurrence.js';
import { resolveRunnerKind } from './runner-kind.js';
import { RunnerSupervisor, stopOrphanRunners, type RunnerExit } from './runners.js';
import { SessionDirectory } from './sessions.js';
import { SessionSlot } from './session-slot.js';
import { SessionDbKeeper } from './session-db-keeper.js';
import { InboundCopies } from './inbound-copies.js';
import type { HostMetrics } from './metrics.js';
import { bothObservers, HostTraces } from './traces.js';
import { HostUsage } from './usage/host-usage.js';
import { PriceTable } from './usage/prices.js';
import { TaskBoard } from './tasks.js';
import { isUntrustedPathError } from './untrusted-files.js';
import type { ConversationRef, HostConfig } from './types.js';
import { taskLimitProblem } from '../db/task-limit.js';

/** An open message: in work, due, or waiting for a retry; a task scheduled for later does not keep a chat open. */
const OPEN_MESSAGE = `trigger = 1 AND (status = 'processing' OR (status = 'pending'
  AND (process_after IS NULL OR tries > 0 OR julianday(process_after) <= julianday('now'))))`;

/**
 * The host (SPEC §6): central DB, session routing and provisioning, channels, and per session a loop that sweeps,
 * keeps one runner alive while there is work, and delivers what the agent sends.
 */
export interface HostOptions {
  config: HostConfig;
  channels: ChannelAdapter[];
  log?: Logger;
  /** where the session of a given `channelType:platformId` lives if it has to be created (`pincer chat --dir`). */
  sessionFolders?: Record<string, string>;
  /** Prometheus metrics to keep (served by the HTTP channel's `/metrics`); none when absent. */
  metrics?: HostMetrics;
  /** traces of each message (on when OTEL_EXPORTER_OTLP_ENDPOINT is set); none when absent. */
  tracing?: Tracing;
}

/** Agent-to-agent messages answering each other more often than this in a row are stopped (a loop, not a chat). */
const MAX_AGENT_HOPS = 10;
/** Tell the chat once a runner has crashed this many times in a row. */
const CRASH_NOTICE_AT = 3;

export class Host implements HostApi {
  readonly store: CentralStore;
  readonly sessions: SessionDirectory;
  /** scheduled tasks of every session, for channels (the HTTP API's task routes). */
  readonly tasks: TaskBoard;
  private readonly log: Logger;
  private readonly supervisor: RunnerSupervisor;
  private readonly delivery: Delivery;
  /** the host's copies of accepted messages, and what recovers a session whose database was lost. */
  private readonly copies: InboundCopies;
  private readonly dbKeeper: SessionDbKeeper;
  private readonly slots = new Map<string, SessionSlot>();
  /** sessions whose folder the host will not open (a linked or unreadable session.db): id → why. */
  private readonly quarantined = new Map<string, string>();
  private readonly channels = new Map<string, ChannelAdapter>();
  private stopped = false;
  private readonly lock: HomeLock;
  /** holds the real provider keys; runners get placeholders (undefined: the host has no key to protect). */
  readonly credentialProxy: CredentialProxy | undefined;
  readonly usage: HostUsage;
  private readonly traces: HostTraces;

  private constructor(private readonly options: HostOptions) {
    const { config } = options;
    this.log = options.log ?? createLogger('host');
    // Reads only the environment and the secrets store, and may refuse them (a base URL it cannot forward to, a secrets
    // file that is not 0600): before the home is locked.
    this.credentialProxy = CredentialProxy.fromEnvironment(credentialEnvironment(config.runners.env, new SecretsStore(config.home).read()), this.log);
    prepareHome(config.home);
    this.lock = HomeLock.acquire(config.home);
    try {
      this.store = new CentralStore(openCentralDb(path.join(config.home, 'pincer.db')), config.home);
    } catch (err) {
      this.lock.release(); // a host that could not start leaves no lock behind
      throw err;
    }
    this.sessions = new SessionDirectory(this.store, config, this.log);
    this.traces = new HostTraces(options.tracing ?? NO_TRACING);
    this.usage = new HostUsage(this.store.db, PriceTable.load(path.join(config.home, 'prices.json')), this.log, options.metrics);
    options.metrics?.attach({ runnersByState: () => this.runnersByState(), pendingMessages: () => this.pendingMessages() });
    for (const channel of options.channels) this.channels.set(channel.type, channel);
    this.tasks = new TaskBoard(() =>
      [...this.slots.values()].map((slot) => ({
        id: slot.session.id,
        db: slot.db,
        timezone: this.store.getAgentGroup(slot.session.agentGroupId)?.timezone ?? 'UTC',
        touch: () => slot.touch(),
      })),
    );
    this.supervisor = new RunnerSupervisor(config.runners, this.log, (exit) => this.onRunnerExit(exit), undefined, this.credentialProxy);
    this.delivery = new Delivery({
      channels: this.channels,
      store: this.store,
      actions: new ActionHandlers({ store: this.store, sessions: this.sessions, globalAdmins: config.defaultGroup?.admins ?? [] }),
      toAgent: (from, row, text) => this.deliverToAgent(from, row, text),
      config: config.delivery,
      log: this.log,
      observer: bothObservers(options.metrics?.deliveryObserver(), this.traces.deliveries()),
    });
    this.copies = new InboundCopies(this.store.db);
    this.dbKeeper = new SessionDbKeeper({
      store: this.store,
      copies: this.copies,
      supervisor: this.supervisor,
      delivery: this.delivery,
      sessions: this.sessions,
      log: this.log,
      quarantine: (slot, reason) => this.quarantineRunning(slot, reason),
    });
  }

  static async start(options: HostOptions): Promise<Host> {
    const log = options.log ?? createLogger('host');
    const runners = await resolveRunnerKind(options.config.runners, log);
    if (options.config.runners.kind === 'auto') log.info(`runners: ${runners.kind} (${runners.why})`);
    const host = new Host({ ...options, log, config: { ...options.config, runners: { ...options.config.runners, kind: runners.kind } } });
    try {
      await host.credentialProxy?.start(); // before any runner starts: they get its placeholders
      const adopted = host.store.adoptSessionFolders();
      if (adopted > 0) host.log.info(`${adopted} session folder(s) now stored relative to the home ${options.config.home}`);
      host.sessions.ensureDefaultGroup();
      await stopOrphanRunners(host.store.listSessions(), host.options.config.runners, host.log);
      for (const session of host.store.listSessions()) {
        try {
          host.slotFor(session);
        } catch (err) {
          if (!isHostError(err, 'quarantined')) throw err; // logged; the other sessions go on
        }
      }
      for (const channel of host.channels.values()) await channel.start(host);
      await host.dbKeeper.ready();
    } catch (err) {
      await host.stop();
      throw err;
    }
    for (const [id, reason] of host.quarantined) {
      const session = host.store.getSession(id);
      if (session) await host.delivery.notify({ session }, conversationOf({ session }, NO_ROUTING), quarantineNotice(reason));
    }
    host.log.info(`ready: home ${options.config.home}, ${host.slots.size} session(s), channels ${[...host.channels.keys()].join(', ') || 'none'}`);
    return host;
  }

  /** Stop taking input, stop runners (each finishes its query within its grace), deliver what they wrote, close. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const channel of this.channels.values()) if (channel.type === 'terminal') await channel.stop();
    await this.supervisor.stopAll();
    for (const slot of this.slots.values()) {
      await slot.stopLoop();
      // What the runners wrote while finishing still goes out.
      const group = this.store.getAgentGroup(slot.session.agentGroupId);
      if (group) await this.delivery.deliverSession({ db: slot.db, session: slot.session, group }).catch(() => undefined);
      await slot.close();
    }
    for (const channel of this.channels.values()) if (channel.type !== 'terminal') await channel.stop();
    await this.credentialProxy?.stop();
    await this.traces.shutdown().catch((err: unknown) => this.log.warn(`trace export failed: ${errorMessage(err)}`));
    this.store.db.close();
    this.lock.release();
    this.log.info('stopped');
  }

  /** What `pincer host status` (and a `pincer chat` looking for this host) reads in the home's lock. */
  announce(details: Omit<LockInfo, 'pid' | 'since' | 'channels'>): void {
    this.lock.describe({ channels: [...this.channels.keys()], ...details });
  }

  /**
   * For a host that is its own process (`pincer host`, `pincer chat`): with the keys in the credential proxy, blank
   * them in this process's environment block, which any same-user process can read at /proc/<pid>/environ.
   */
  hideKeysFromOwnEnvironment(): void {
    if (!this.credentialProxy) return;
    if (!scrubOwnEnvironment(PROXIED_CREDENTIALS)) this.log.warn('could not blank the provider keys in the host process environment; same-user processes may read them');
  }

  // ---- HostApi (what channels call) ----

  acceptInbound(message: InboundEnvelope): InboundReceipt {
    return this.traces.received(message, (traceContext) => this.writeInbound(message, traceContext));
  }

  private writeInbound(message: InboundEnvelope, traceContext: string | undefined): InboundReceipt {
    const parsed = parseInboundContent(message.kind, JSON.stringify(message.content));
    if (!parsed.ok) throw new HostError('invalid-input', parsed.error);
    const { slot, group } = this.sessionOf(message.conversation);
    if (message.recurrence) validateCron(message.recurrence, group.timezone);
    const full = message.kind === 'task' ? taskLimitProblem(slot.db) : undefined;
    if (full) throw new HostError('invalid-input', full);
    const budget = this.usage.gate(group);
    if (budget.over) {
      void this.delivery.notify({ session: slot.session }, message.conversation, budget.notice);
      throw new HostError('over-budget', budget.notice);
    }
    const written = insertInbound(slot.db, {
      ...(message.id ? { id: message.id } : {}),
      kind: message.kind,
      content: message.content,
      processAfter: message.processAfter ?? null,
      recurrence: message.recurrence ?? null,
      trigger: message.trigger ?? 1,
      traceContext,
      ...routing(message.conversation),
    });
    this.copies.keep(slot.session.id, slot.db, written.id);
    this.store.recordSender({ sessionId: slot.session.id, messageId: written.id, senderId: senderIdOf(parsed.value, message.conversation.channelType), ...message.conversation });
    slot.touch();
    return { sessionId: slot.session.id, ...written };
  }

  answerQuestion(conversation: ConversationRef, answer: { questionId: string; selectedOption: string; userId?: string }): InboundReceipt {
    const question = this.store.getQuestion(answer.questionId);
    if (!question || question.channelType !== conversation.channelType || question.platformId !== conversation.platformId) {
      throw new HostError('not-found', `no question "${answer.questionId}" in this conversation`);
    }
    const slot = this.slots.get(question.sessionId);
    if (!slot) throw new HostError('not-found', `the session of question "${answer.questionId}" is gone`);
    if (!this.store.markQuestionAnswered(answer.questionId)) {
      throw new HostError('invalid-input', `question "${answer.questionId}" was answered already`, 'questionId');
    }
    // An answer after the question closed (timed out, or its runner stopped) becomes a message the agent sees.
    const { late, ...written } = insertAnswer(slot.db, answer, routing({ ...conversation, threadId: question.threadId }));
    this.copies.keep(slot.session.id, slot.db, written.id);
    if (late) this.log.info(`late answer to question ${answer.questionId} in ${slot.session.id} sent to the agent as a message`);
    slot.touch();
    return { sessionId: slot.session.id, ...written };
  }

  scheduleTask(conversation: ConversationRef, task: { prompt: string; processAfter?: string; recurrence?: string; script?: string }): InboundReceipt {
    const group = this.sessions.resolveGroup(conversation);
    let processAfter: string | null = null;
    if (task.processAfter) {
      processAfter = parseTimeInZone(task.processAfter, group.timezone);
      if (!processAfter) throw new HostError('invalid-input', `processAfter: not a time: "${task.processAfter}"`, 'processAfter');
    } else if (task.recurrence) {
      // A recurring task without a first time runs first at its next cron time, not now.
      processAfter = nextOccurrence(task.recurrence, group.timezone).toISOString();
    }
    return this.acceptInbound({
      conversation,
      kind: 'task',
      content: { prompt: task.prompt, ...(task.script ? { script: task.script } : {}) },
      processAfter,
      recurrence: task.recurrence ?? null,
    });
  }

  groupOf(conversation: ConversationRef): AgentGroup {
    return this.sessions.resolveGroup(conversation);
  }

  sessionFolderOf(conversation: ConversationRef): string {
    return this.sessionOf(conversation).slot.session.folder;
  }

  listSessions(): SessionSummary[] {
    return this.store.listSessions().map((session) => {
      const slot = this.slots.get(session.id);
      const state = slot ? readRunnerState(slot.db) : undefined;
      const pid = this.supervisor.pid(session.id);
      const pending = slot
        ? (prepared(slot.db, `SELECT count(*) AS n FROM messages_in WHERE status IN ('pending', 'processing')`).get() as { n: number }).n
        : 0;
      const lastError = slot
        ? (prepared(slot.db, `SELECT last_error FROM messages_in WHERE last_error IS NOT NULL AND status IN ('pending', 'processing', 'failed') AND NOT ${CANCELLED_TASK} ORDER BY status_changed DESC, seq DESC LIMIT 1`).get() as
            | { last_error: string }
            | undefined)?.last_error ?? null
        : null;
      return {
        id: session.id,
        agentGroup: this.store.getAgentGroup(session.agentGroupId)?.name ?? session.agentGroupId,
        channelType: session.channelType,
        platformId: session.platformId,
        threadKey: session.threadKey,
        runner: pid !== undefined ? { pid, state: this.supervisor.liveState(session.id, state)?.state ?? 'starting' } : null,
        pending,
        provider: state?.provider ?? null,
        heartbeatAt: pid !== undefined ? (state?.heartbeatAt ?? null) : null,
        lastError,
      };
    });
  }

  /** Stop a session's runner (it finishes its query within its grace); the next due message starts a new one. */
  async stopRunner(sessionId: string): Promise<void> {
    if (!this.slots.has(sessionId)) throw new HostError('not-found', `no session "${sessionId}"`);
    await this.supervisor.stop(sessionId);
  }

  /** Stop a session's runner if it runs, and start a new one at once. */
  async restartRunner(sessionId: string): Promise<void> {
    const slot = this.slots.get(sessionId);
    if (!slot) throw new HostError('not-found', `no session "${sessionId}"`);
    await this.supervisor.stop(sessionId);
    slot.runnerWanted = true;
    slot.waker.notify();
  }

  /** The last `lines` lines of a session's runner log (the host's own file under `<home>/logs/`). */
  runnerLogTail(sessionId: string, lines: number): string[] {
    if (!this.slots.has(sessionId)) throw new HostError('not-found', `no session "${sessionId}"`);
    let text: string;
    try {
      text = fs.readFileSync(this.runnerLog(sessionId), 'utf8');
    } catch {
      return [];
    }
    return text.trimEnd().split('\n').slice(-lines);
  }

  /** Nothing left to do for the session: no open message, nothing undelivered (`pincer chat` with piped input exits then). */
  isSettled(sessionId: string): boolean {
    const slot = this.slots.get(sessionId);
    if (!slot) return true;
    const open = prepared(slot.db, `SELECT 1 FROM messages_in WHERE ${OPEN_MESSAGE} LIMIT 1`).get();
    const undelivered = prepared(slot.db, 'SELECT 1 FROM messages_out WHERE delivered_at IS NULL AND delivery_error IS NULL LIMIT 1').get();
    return !open && !undelivered;
  }

  /** Messages of the session still waiting for the agent (in work, due, or waiting for a retry). */
  openMessages(sessionId: string): number {
    const slot = this.slots.get(sessionId);
    if (!slot) return 0;
    return (prepared(slot.db, `SELECT count(*) AS n FROM messages_in WHERE ${OPEN_MESSAGE}`).get() as { n: number }).n;
  }

  /** The session a conversation maps to (provisioned if new). */
  sessionOf(conversation: ConversationRef): { slot: SessionSlot; group: ReturnType<SessionDirectory['resolveGroup']> } {
    const group = this.sessions.resolveGroup(conversation);
    const folder = this.options.sessionFolders?.[`${conversation.channelType}:${conversation.platformId}`];
    const session = this.sessions.sessionFor(group, conversation, folder);
    return { slot: this.slotFor(session), group };
  }

  // ---- the per-session tick ----

  private slotFor(session: SessionRecord): SessionSlot {
    let slot = this.slots.get(session.id);
    const quarantined = this.quarantined.get(session.id);
    if (quarantined) throw new HostError('quarantined', `session ${session.id} is quarantined: ${quarantined}`);
    if (!slot) {
      try {
        slot = new SessionSlot(session, this.log, this.dbKeeper.open(session));
      } catch (err) {
        if (!isUntrustedPathError(err) && !isSessionDbError(err)) throw err;
        // A session the agent broke (or a disk that did) must not take the host down: set it aside, say so once.
        this.quarantine(session, errorMessage(err));
        throw new HostError('quarantined', `session ${session.id} is quarantined: ${errorMessage(err)}`);
      }
      this.slots.set(session.id, slot);
      slot.run((s) => this.dbKeeper.guard(s, () => this.tick(s)));
    }
    return slot;
  }

  private quarantine(session: SessionRecord, reason: string): void {
    this.quarantined.set(session.id, reason);
    this.log.error(`session ${session.id} quarantined: ${reason}; the host leaves it alone (move ${session.folder} aside and restart the host to start it afresh)`);
  }

  /** A running session whose session.db became a link (or another non-file): quarantined as at start-up, with a notice. */
  private async quarantineRunning(slot: SessionSlot, reason: string): Promise<void> {
    this.slots.delete(slot.session.id);
    this.quarantine(slot.session, reason);
    slot.retire();
    await this.delivery.notify({ session: slot.session }, conversationOf({ session: slot.session }, NO_ROUTING), quarantineNotice(reason));
  }

  /** Sweep, keep the runner right, deliver. Returns how long the loop may sleep if nothing changes. */
  private async tick(slot: SessionSlot): Promise<number> {
    const { config } = this.options;
    const id = slot.session.id;
    const group = this.store.getAgentGroup(slot.session.agentGroupId);
    if (!group) throw new Error(`agent group ${slot.session.agentGroupId} is gone`);
    const handle: SessionHandle = { db: slot.db, session: slot.session, group };
    const alive = this.supervisor.isRunning(id);
    const state = readRunnerState(slot.db);
    const live = this.supervisor.liveState(id, state);
    const sweep = slot.sweeper.sweep({ runnerAlive: alive, batchIds: live?.batchIds ?? [], timezone: group.timezone, config: config.sweep });
    this.usage.collect(slot.session, slot.db);
    this.options.metrics?.retries.inc(sweep.retried.length);
    this.options.metrics?.failedMessages.inc(sweep.failed.length);
    for (const row of sweep.retried) this.log.info(`message ${row.seq} in ${id} back to pending after try ${row.tries} (${row.last_error ?? 'stale'})`);
    for (const notice of firstTryNotices(sweep.retried, config.sweep)) await this.delivery.notify(handle, conversationOf(handle, notice.row), notice.text);
    for (const { row, nextAt } of sweep.scheduled) this.log.info(`task series ${row.series_id ?? row.id} in ${id}: next occurrence at ${nextAt}`);
    if (sweep.pruned > 0) this.log.info(`pruned ${sweep.pruned} finished task rows in ${id}`);
    for (const row of sweep.failed) {
      this.log.warn(`message ${row.seq} in ${id} failed: ${row.last_error}`);
      await this.delivery.notify(handle, conversationOf(handle, row), `Your message could not be processed and was given up (${row.last_error}).`);
    }
    for (const { row, error } of sweep.recurrenceErrors) {
      await this.delivery.notify(handle, conversationOf(handle, row), `The recurring task ${row.series_id ?? row.id} was not rescheduled: ${error}`);
    }
    const waits = [config.sweep.intervalMs, sweep.nextDueMs];
    if (alive) {
      if (this.supervisor.check(id, live, sweep.hasDue, slot.lastActivityAt) === 'turn-limit' && live) await this.endedByTurnLimit(handle, live);
      waits.push(this.supervisor.idleDeadlineMs(live, slot.lastActivityAt));
      // An idle runner would start the next turn by itself: over budget, stop it so turns go through the gate below.
      if (live?.state === 'idle' && this.usage.budgets.check(group).over) void this.supervisor.stop(id);
    } else if ((sweep.hasDue || slot.runnerWanted) && !this.stopped) {
      const backoff = this.supervisor.backoffRemainingMs(id);
      const budget = backoff > 0 ? undefined : this.usage.gate(group);
      if (backoff > 0) waits.push(backoff);
      else if (budget?.over) await this.refuseOverBudget(handle, budget.notice);
      else {
        this.sessions.publishConfig(this.store.getSession(id) ?? slot.session, group);
        this.supervisor.start({
          sessionId: id,
          folder: slot.session.folder,
          provider: group.provider,
          timezone: group.timezone,
          agentDir: this.sessions.groupDir(group),
          globalDir: path.join(config.home, 'global'),
          logFile: this.runnerLog(id),
          lockFile: this.runnerLock(id),
        });
        slot.runnerWanted = false;
      }
    }
    await this.updateTyping(slot, handle, live);
    waits.push(await this.delivery.deliverSession(handle));
    this.copies.prune(id, slot.db);
    return Math.max(1, Math.min(...waits.filter((w): w is number => w !== undefined)));
  }

  /** Refuse the session's due messages (a budget is reached) and tell each conversation once. */
  private async refuseOverBudget(handle: SessionHandle, notice: string): Promise<void> {
    const refused = this.usage.refuseDue(handle.db, notice);
    const told = new Set<string>();
    for (const row of refused) {
      const conversation = conversationOf(handle, row);
      const key = `${conversation.channelType}:${conversation.platformId}:${conversation.threadId ?? ''}`;
      this.log.warn(`message ${row.seq} in ${handle.session.id} refused: over budget`);
      if (told.has(key)) continue;
      told.add(key);
      await this.delivery.notify(handle, conversation, notice);
    }
  }

  private runnersByState(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const summary of this.listSessions()) if (summary.runner) counts[summary.runner.state] = (counts[summary.runner.state] ?? 0) + 1;
    return counts;
  }

  private pendingMessages(): number {
    return this.listSessions().reduce((sum, s) => sum + s.pending, 0);
  }

  /** A query ran past the turn limit and its runner was killed: the batch says why (for its retry) and the chat is told. */
  private async endedByTurnLimit(handle: SessionHandle, live: RunnerState): Promise<void> {
    const limitS = Math.round(this.options.config.runners.turnLimitMs / 1000);
    const error = `the agent did not finish within the turn limit (${limitS} s)`;
    const mark = prepared(handle.db, `UPDATE messages_in SET last_error = ? WHERE id = ? AND status = 'processing'`);
    handle.db.transaction(() => live.batchIds.forEach((id) => mark.run(error, id))).immediate();
    const routing = live.routing;
    await this.delivery.notify(
      handle,
      conversationOf(handle, { channel_type: routing?.channelType ?? null, platform_id: routing?.platformId ?? null, thread_id: routing?.threadId ?? null }),
      `The agent did not finish within ${limitS} s and was stopped; your message will be tried again (PINCER_TURN_LIMIT_MS sets the limit).`,
    );
  }

  /** Show "typing" in the batch's conversation while the runner is busy; clear it when it is not. */
  private async updateTyping(slot: SessionSlot, handle: SessionHandle, live: RunnerState | undefined): Promise<void> {
    const busy = live?.state === 'busy';
    if (busy === (slot.typingIn !== null)) return;
    const conversation = busy
      ? conversationOf(handle, { channel_type: live.routing?.channelType ?? null, platform_id: live.routing?.platformId ?? null, thread_id: live.routing?.threadId ?? null })
      : slot.typingIn!;
    slot.typingIn = busy ? conversation : null;
    await this.channels.get(conversation.channelType)?.setTyping?.(conversation, busy);
  }

  /** `<home>/logs/<session id>.log`: where the agent cannot plant a link (the session id is the host's own). */
  private runnerLog(sessionId: string): string {
    const dir = path.join(this.options.config.home, 'logs');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return path.join(dir, `${sessionId}.log`);
  }

  /** `<home>/locks/<session id>.lock`: the launch lock (one runner per session, held by the OS; src/container/handle.ts). */
  private runnerLock(sessionId: string): string {
    const dir = path.join(this.options.config.home, 'locks');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return path.join(dir, `${sessionId}.lock`);
  }

  private onRunnerExit(exit: RunnerExit): void {
    const slot = this.slots.get(exit.sessionId);
    if (!slot) return;
    if (!exit.requested) slot.suspectDamage = true; // a crash may come from a damaged database file
    // Remember the provider session, so the next runner resumes the conversation (seed "会话恢复").
    try {
      const state = readRunnerState(slot.db);
      const providerSession = state && getSessionValue(slot.db, sessionKeys(state.provider).sessionId);
      if (providerSession) {
        this.store.setProviderSessionId(exit.sessionId, providerSession);
        const group = this.store.getAgentGroup(slot.session.agentGroupId);
        const session = this.store.getSession(exit.sessionId);
        if (group && session) this.sessions.publishConfig(session, group);
      }
    } catch (err) {
      this.log.warn(`could not save the provider session of ${exit.sessionId}: ${errorMessage(err)}`);
    }
    if (exit.crashes === CRASH_NOTICE_AT) {
      const group = this.store.getAgentGroup(slot.session.agentGroupId);
      const log = tail(this.runnerLog(exit.sessionId));
      if (group) {
        const handle = { db: slot.db, session: slot.session, group };
        void this.delivery.notify(
          handle,
          conversationOf(handle, { channel_type: null, platform_id: null, thread_id: null }),
          `The agent could not be started (${exit.crashes} failures in a row, last exit ${exit.code}${log ? `: ${log}` : ''}); retrying with back-off.`,
        );
      }
    }
    slot.waker.notify();
  }

  /** A `channel_type: 'agent'` row: a chat message into the target group's session, answered back the same way. */
  private deliverToAgent(from: SessionHandle, row: OutboundRow, text: string): void {
    const target = row.platform_id ? this.store.findAgentGroup(row.platform_id) : undefined;
    if (!target) throw new Error(`unknown agent group "${row.platform_id}"`);
    const trigger = row.in_reply_to ? getInbound(from.db, row.in_reply_to) : undefined;
    const hops = trigger?.channel_type === 'agent' ? agentHops(trigger.content) + 1 : 1;
    if (hops > MAX_AGENT_HOPS) throw new Error(`agents answered each other ${MAX_AGENT_HOPS} times in a row; stopped as a loop`);
    let session: SessionRecord | undefined;
    if (row.thread_id) {
      session = this.store.getSession(row.thread_id);
      if (!session || session.agentGroupId !== target.id) throw new Error(`session "${row.thread_id}" is not a session of ${target.name}`);
    }
    const conversation = { channelType: 'agent', platformId: from.group.id, threadId: from.session.id };
    session ??= this.sessions.sessionFor(target, { ...conversation, threadId: null });
    const slot = this.slotFor(session);
    const senderId = `agent:${from.group.id}`;
    const written = insertInbound(slot.db, {
      kind: 'chat',
      content: { text, sender: from.group.name, senderId, agentHops: hops },
      ...routing(conversation),
    });
    this.copies.keep(session.id, slot.db, written.id);
    this.store.recordSender({ sessionId: session.id, messageId: written.id, senderId, ...conversation });
    slot.touch();
  }
}

const NO_ROUTING = { channel_type: null, platform_id: null, thread_id: null };

function quarantineNotice(reason: string): string {
  return `This conversation's session is set aside and gets no answers (${reason}). An administrator can move its folder aside and restart the host.`;
}

function routing(c: ConversationRef): { channelType: string; platformId: string; threadId: string | null } {
  return { channelType: c.channelType, platformId: c.platformId, threadId: c.threadId };
}

/**
 * The sender's platform user id as the channel gave it (never the display name, which anyone can choose). A chat
 * platform's user is `<platform>:<user id>` (telegram:12345), as admin lists and allow-lists name them.
 */
function senderIdOf(parsed: InboundContent, channelType: string): string | null {
  if (parsed.kind === 'chat') return parsed.content.senderId ?? null;
  if (parsed.kind === 'chat-sdk') return parsed.content.author.userId ? `${channelType}:${parsed.content.author.userId}` : null;
  return null;
}

function agentHops(content: string): number {
  try {
    const hops = (JSON.parse(content) as { agentHops?: unknown }).agentHops;
    return typeof hops === 'number' ? hops : 0;
  } catch {
    return 0;
  }
}

function tail(file: string): string {
  try {
    // The last line without its time stamp: it is shown in the chat.
    return (fs.readFileSync(file, 'utf8').trim().split('\n').slice(-1)[0] ?? '').replace(/^\S+Z (?=\[)/, '');
  } catch {
    return '';
  }
}
