import { definitionsDir } from '../db/layout.js';
import type Database from 'better-sqlite3';
import {
  deleteSessionValues,
  getSessionValue,
  sessionKeys,
  setRunnerBatch,
  setRunnerStateName,
  setHeldRows,
  setRunnerTrace,
  setSessionValue,
  writeHeartbeat,
} from '../db/state.js';
import { retryWhileBusy } from '../db/busy.js';
import type { RoutingContext } from '../db/types.js';
import { insertTurnResult } from '../db/usage.js';
import { recordToolEnd, recordToolStart } from '../db/tool-activity.js';
import type { AgentProvider, AgentQuery, McpServerConfig, QueryInput, TurnUsage } from '../providers/types.js';
import type { AttachmentCodec } from '../runtime/attachments.js';
import type { PromptResource, SkillResource } from '../runtime/resources/types.js';
import { errorMessage, type Logger } from '../shared/log.js';
import { NO_TRACING, type Tracing } from '../shared/tracing.js';
import { archiveTranscript, Transcript } from '../shared/transcript-archive.js';
import { Batch, describeKinds, summarySourceOf } from './batch.js';
import type { BatchFormatter } from './batch-formatter.js';
import { detectCommand, withPromptExpanded } from './commands.js';
import { currentModelGeneration, type RunnerConfig } from './config.js';
import type { FormattableMessage } from './format.js';
import type { MediaOptions } from './media/types.js';
import { preparePrompt } from './prompt.js';
import { InboundQueue, type ClaimedMessage } from './queue.js';
import { TaskScripts } from './scripts.js';
import { TurnTraces } from './traces.js';
import type { Waker } from '../db/wake.js';
import { dbFileChange, describeDbFileChange, isDamagedDbError, type FileIdentity } from '../db/db-file.js';

/**
 * The runner core: the poll loop. Claims due messages, prepares them (media, task
 * pre-scripts, formatting), runs one provider query at a time, pushes follow-ups into the active query, writes every
 * result to `messages_out` with the batch's routing, and keeps `runner_state` and `session_state` current.
 * Provider specifics stay in the provider.
 */
export interface RunnerDeps {
  db: Database.Database;
  config: RunnerConfig;
  providerName: string;
  provider: AgentProvider;
  waker: Waker;
  log: Logger;
  systemPrompt: string | undefined;
  additionalDirectories: string[];
  mcpServers: Record<string, McpServerConfig>;
  providerEnv: Record<string, string | undefined>;
  /** formats prompts, on a worker when the batch is large; without it, formatting is inline. */
  formatter?: BatchFormatter;
  /** base64-encodes attachments for native blocks, on a worker when the file is large; without it, inline. */
  attachments?: AttachmentCodec;
  /** the agent group's prompts (resource package): each is a `/name` command. */
  prompts?: PromptResource[];
  /** traces of each turn (on when OTEL_EXPORTER_OTLP_ENDPOINT is set); none when absent. */
  tracing?: Tracing;
  /** the agent group's skills, given to providers that load skills natively (`nativeSkills`). */
  skills?: SkillResource[];
  /** the session.db file `db` was opened from: checked at each wake, the runner stops when it was deleted or replaced. */
  dbFile?: { path: string; identity: FileIdentity };
}

/** After this many poll failures in a row the loop gives up and the runner exits 1. */
const MAX_CONSECUTIVE_FAILURES = 10;

/** How the active query is going; shared by the event loop, the follow-up pump and `stop()`. */
interface QueryProgress {
  /** `end()` was called: no more pushes. */
  inputEnded: boolean;
  /** an error event or a crash: the batch stays processing with `last_error`. */
  failed: boolean;
  /** `stop()` had to abort the query before it finished. */
  abortedByStop: boolean;
  /** prompts given to the query (the first and each push) and results received so far. */
  prompts: number;
  results: number;
  /** the batch was marked completed together with its last answer. */
  completed: boolean;
}

export class Runner {
  private readonly queue: InboundQueue;
  private readonly scripts: TaskScripts;
  private readonly keys: { sessionId: string; resumeAt: string };
  /** claimed (processing) messages not yet given to a query: finished task scripts, follow-ups that missed a push. */
  private carry: FormattableMessage[] = [];
  /** the held rows as last written (`noteHeld`), and the write in flight */
  private heldWritten = '[]';
  private heldWrites: Promise<void> = Promise.resolve();
  private stopping = false;
  /** the model-runtime generation of the turn in flight (config.json's as the turn started), for turn_usage */
  private modelGeneration: number | undefined;
  private active: { query: AgentQuery; progress: QueryProgress; stopTimer?: NodeJS.Timeout } | null = null;

  constructor(private readonly deps: RunnerDeps) {
    const native = deps.provider.nativeSlashCommands;
    this.queue = new InboundQueue(deps.db, deps.config.batch, (message) => detectCommand(message, native, deps.prompts) !== null);
    this.keys = sessionKeys(deps.providerName);
    this.scripts = new TaskScripts(
      this.queue,
      { cwd: deps.config.paths.agent, env: process.env, ...deps.config.script },
      deps.log,
      (message) => {
        this.carry.push(message);
        this.noteHeld();
        deps.waker.notify();
      },
      () => this.noteHeld(),
    );
  }

  /**
   * Tell the host which claimed rows this runner holds outside its batch (running task scripts, carried messages), so
   * that its sweep does not take them for stale and run them again. Written in order, only when the list changed.
   */
  private noteHeld(): void {
    const ids = [...this.scripts.heldIds(), ...this.carry.map((m) => m.row.id)];
    const json = JSON.stringify(ids);
    if (json === this.heldWritten) return;
    this.heldWritten = json;
    this.heldWrites = this.heldWrites.then(() =>
      this.persist('held rows', () => setHeldRows(this.deps.db, ids)).catch((err: unknown) =>
        this.deps.log.warn(`could not record the rows held outside the batch: ${errorMessage(err)}`),
      ),
    );
  }

  /** Run until `stop()`. Resolves once the in-flight query has finished or been aborted. */
  async run(): Promise<void> {
    const { db, config, waker } = this.deps;
    // Let the provider start its slow parts (OpenCode's server) while no message is waiting yet.
    this.safely('provider prepare', () =>
      this.deps.provider.prepare?.({
        cwd: config.paths.agent,
        groupDir: definitionsDir(config.paths),
        mcpServers: this.deps.mcpServers,
        systemPrompt: this.deps.systemPrompt,
        env: this.deps.providerEnv,
        additionalDirectories: this.deps.additionalDirectories,
      }),
    );
    try {
      await this.persist('runner state', () => setRunnerStateName(db, 'idle'));
      let failures = 0;
      while (!this.stopping) {
        try {
          // After a failure (a read-only or full disk) the state row may still name a batch whose end could not be
          // written: say idle first, so the host's sweep retries what was left processing.
          if (failures > 0) await this.persist('runner state', () => setRunnerBatch(db, 'idle', [], null));
          await this.pollOnce();
          failures = 0;
        } catch (err) {
          // Each DB call waits out another process's lock itself (`persist`); anything else: log, wait one idle
          // interval, try again. Only a loop that keeps failing gives up (the host restarts it).
          failures += 1;
          // A damaged file never heals: exit at once, and the host checks and sets the session up again.
          if (failures >= MAX_CONSECUTIVE_FAILURES || isDamagedDbError(err)) throw err;
          this.deps.log.warn(`poll failed (${failures} in a row): ${errorMessage(err)}`);
          await waker.wait(config.pollIdleMs);
        }
      }
    } finally {
      await this.scripts.stopAll();
      const unsent = this.takeCarry();
      // Stopping gives up on a locked DB after one more wait: the rows stay processing for the host's sweep.
      await this.persist('unsent messages', () => {
        if (unsent.length > 0)
          this.queue.recordError(
            unsent.map((m) => m.row.id),
            'runner stopped before the message reached the agent',
          );
        setRunnerBatch(db, 'stopping', [], null);
      }).catch((err: unknown) => this.deps.log.warn(`could not record the stop: ${errorMessage(err)}`));
      await this.heldWrites; // the database closes after this
    }
  }

  /** One turn of the poll loop: claim, then run a command or a batch, or wait for a change. */
  private async pollOnce(): Promise<void> {
    if (this.dbFileLost()) return;
    const claim = await this.persist('claim', () => this.queue.claim('start'));
    this.logFailed(claim.failed);
    if (claim.command) {
      await this.runCommand(claim.command);
      return;
    }
    const messages = [...this.takeCarry(), ...this.scripts.divert(claim.messages)];
    if (messages.length > 0) await this.runBatch(messages);
    else if (claim.messages.length === 0 && claim.failed.length === 0) await this.deps.waker.wait(await this.idleWaitMs());
  }

  /** Stop taking work; let the active query finish within the grace period, then abort it. */
  stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.deps.waker.notify();
    if (this.active) this.endForStop(this.active);
  }

  private endForStop(active: NonNullable<Runner['active']>): void {
    active.query.end();
    active.stopTimer = setTimeout(() => {
      active.progress.abortedByStop = true;
      active.query.abort();
    }, this.deps.config.stopGraceMs);
  }

  /** The session.db this runner opened is gone from its path: whatever it writes from now on is lost, so it stops. */
  private dbFileLost(): boolean {
    const file = this.deps.dbFile;
    const change = file && dbFileChange(file.path, file.identity);
    if (!change) return false;
    this.deps.log.error(`session.db ${describeDbFileChange(change)} under this runner; stopping (the host sets the session up again)`);
    this.stop();
    return true;
  }

  private takeCarry(): FormattableMessage[] {
    const carried = this.carry;
    this.carry = [];
    return carried;
  }

  private async idleWaitMs(): Promise<number> {
    const untilDue = await this.persist('next due time', () => this.queue.msUntilNextDue());
    return idleWaitMs(untilDue, this.deps.waker.watching, this.deps.config);
  }

  private get mediaOptions(): MediaOptions {
    const { config, provider } = this.deps;
    return {
      root: config.paths.root,
      nativeMedia: provider.nativeMedia ?? [],
      downloadTimeoutMs: config.downloadTimeoutMs,
      allowHosts: config.attachmentAllowHosts,
      noNetwork: config.sandboxNoNetwork,
      codec: this.deps.attachments,
    };
  }

  private async runCommand(message: ClaimedMessage): Promise<void> {
    const command = detectCommand(message, this.deps.provider.nativeSlashCommands, this.deps.prompts);
    if (command?.type === 'prompt') {
      this.deps.log.info(`prompt command /${command.prompt.name} in message ${message.row.seq}`);
      await this.runBatch([withPromptExpanded(message, command.prompt, command.args)]);
      return;
    }
    if (command?.type === 'native') {
      // Provider-native commands go to the provider raw, unformatted.
      await this.runBatch([message], command.text);
      return;
    }
    // `/clear`: forget the provider session, so the next query starts a new conversation.
    const { db, log } = this.deps;
    await this.persist('session', () => deleteSessionValues(db, [this.keys.sessionId, this.keys.resumeAt]));
    this.deps.config.resumeSessionId = undefined;
    const batch = new Batch([message]);
    await this.writeResult(batch.routing, { text: 'Session cleared.', completes: batch.ids });
    log.info(`session cleared by message ${message.row.seq}`);
  }

  /**
   * Heartbeats only while a turn runs: an idle runner writes nothing, so it wakes neither itself nor the host's watcher
   * of its session (idle costs nothing). While idle, the host knows it is alive from its process, and that it is not
   * frozen from its claiming what is due (src/host/session/runners.ts). A beat that meets another process's lock is skipped:
   * the next one comes `heartbeatMs` later.
   */
  private async runBatch(messages: FormattableMessage[], rawPrompt?: string): Promise<void> {
    const { db, config } = this.deps;
    const heartbeat = setInterval(() => this.safely('heartbeat', () => writeHeartbeat(db)), config.heartbeatMs);
    try {
      await this.runTurn(messages, rawPrompt);
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async runTurn(messages: FormattableMessage[], rawPrompt?: string): Promise<void> {
    const { db, config, log, provider } = this.deps;
    const started = Date.now();
    const batch = new Batch(messages);
    await this.persist('runner state', () => setRunnerBatch(db, 'busy', batch.ids, batch.routing));
    this.noteHeld(); // carried rows are the batch's now
    log.info(`picked ${plural(messages.length, 'message')} (${describeKinds(messages)})`);
    let prepared: { text: string; prompt: QueryInput['prompt'] };
    try {
      prepared = rawPrompt
        ? { text: rawPrompt, prompt: rawPrompt }
        : await preparePrompt(messages, { timeZone: config.timeZone, media: this.mediaOptions, formatter: this.deps.formatter });
    } catch (err) {
      const error = `could not prepare the prompt: ${errorMessage(err)}`;
      log.error(`${error} (batch of ${batch.ids.length} left processing for retry)`);
      await this.persist('batch error', () => {
        this.queue.recordError(batch.ids, error);
        setRunnerBatch(db, 'idle', [], null);
      });
      return;
    }
    const transcript = new Transcript(summarySourceOf(messages[0]?.message));
    transcript.add('prompt', prepared.text);

    // the generation this turn is recorded with: the host's newest for the session as the turn starts
    this.modelGeneration = currentModelGeneration(config.paths, config.modelGeneration);
    const traces = new TurnTraces(this.deps.tracing ?? NO_TRACING, this.deps.providerName, config.model, this.modelGeneration);
    traces.picked(messages, batch.routing.inReplyTo);
    const traceparent = traces.traceparent;
    if (traceparent) await this.persist('trace context', () => setRunnerTrace(db, traceparent));
    const resume = await this.persist('session', () => ({
      sessionId: getSessionValue(db, this.keys.sessionId) ?? config.resumeSessionId,
      resumeAt: getSessionValue(db, this.keys.resumeAt),
    }));
    const query = provider.query({
      prompt: prepared.prompt,
      ...resume,
      cwd: config.paths.agent,
      groupDir: definitionsDir(config.paths),
      mcpServers: this.deps.mcpServers,
      systemPrompt: this.deps.systemPrompt,
      // The provider's CLI continues the trace (Claude Code reads TRACEPARENT when its telemetry is on).
      env: traceparent ? { ...this.deps.providerEnv, TRACEPARENT: traceparent } : this.deps.providerEnv,
      additionalDirectories: this.deps.additionalDirectories,
      ...(provider.nativeSkills && this.deps.skills?.length ? { skills: this.deps.skills } : {}),
    });
    const progress: QueryProgress = { inputEnded: false, failed: false, abortedByStop: false, prompts: 1, results: 0, completed: false };
    this.active = { query, progress };
    // Preparing the prompt is asynchronous: a stop that came meanwhile applies to this query too.
    if (this.stopping) this.endForStop(this.active);
    const followUps = this.pushFollowUps(query, batch, progress, transcript);
    try {
      for await (const event of query.events) {
        if (event.type === 'init') {
          await this.persist('session', () => setSessionValue(db, this.keys.sessionId, event.sessionId));
        } else if (event.type === 'result') {
          progress.results += 1;
          traces.result(event.usage);
          // An answer and the `completed` of the messages it answers are one transaction — the last prompt's answer
          // completes the whole batch — so a kill after it never makes the host retry them (and the agent answer twice).
          const final = !progress.completed && progress.results >= progress.prompts;
          const answer =
            event.text || event.usage || final ? { text: event.text, usage: event.usage, completes: final ? batch.ids : batch.answering } : undefined;
          if (answer || event.resumeAt) await this.writeResult(batch.routing, answer, event.resumeAt);
          if (final) progress.completed = true;
          if (event.text) transcript.add('agent', event.text);
          // The MCP server reads the routing of the batch in flight from runner_state: keep it on the current prompt.
          if (batch.answered()) await this.persist('runner state', () => setRunnerBatch(db, 'busy', batch.ids, batch.routing));
          // Everything pushed so far is with the provider; close its input so the query ends once answered.
          // Messages arriving from here on start the next query.
          if (!progress.inputEnded) {
            progress.inputEnded = true;
            query.end();
          }
        } else if (event.type === 'error') {
          traces.fail(event.message);
          await this.fail(batch, progress, query, `${event.classification ?? 'provider'} error: ${event.message}`, transcript, event.retryable);
          break;
        } else if (event.type === 'notice') {
          log.warn(`notice: ${event.text}`);
          await this.writeResult(batch.routing, { text: event.text });
        } else if (event.type === 'tool') {
          // shown to the user, never needed for the turn: a write that fails is logged and the turn goes on
          await this.persist('tool activity', () =>
            event.phase === 'start'
              ? recordToolStart(db, { callId: event.id, name: event.name, args: event.args }, batch.routing)
              : recordToolEnd(db, event.id, event.ok),
          ).catch((err: unknown) => log.warn(`tool activity not recorded: ${errorMessage(err)}`));
        } else {
          log.debug(`progress: ${event.message}`);
        }
      }
    } catch (err) {
      await this.fail(batch, progress, query, `provider crashed: ${errorMessage(err)}`, transcript);
    } finally {
      progress.inputEnded = true;
      traces.finish();
      if (traceparent)
        await this.persist('trace context', () => setRunnerTrace(db, null)).catch((err: unknown) => log.warn(`trace failed: ${errorMessage(err)}`));
      this.deps.waker.notify();
      await followUps;
      if (this.active?.stopTimer) clearTimeout(this.active.stopTimer);
      this.active = null;
    }
    if (progress.completed) {
      log.info(`completed ${plural(batch.ids.length, 'message')} in ${Date.now() - started} ms`);
    } else if (progress.abortedByStop && !progress.failed) {
      await this.persist('batch error', () => this.queue.recordError(batch.ids, 'runner stopped before the answer was complete'));
    } else if (!progress.failed) {
      // A provider that answered several prompts in one result: completed when its query ends (at-least-once).
      await this.persist('completion', () => this.queue.complete(batch.ids));
      log.info(`completed ${plural(batch.ids.length, 'message')} in ${Date.now() - started} ms`);
    }
    if (!provider.archivesTranscripts) {
      this.safely('archive', () => archiveTranscript(config.paths.agent, transcript, config.timeZone));
    }
    await this.persist('runner state', () => setRunnerBatch(db, this.stopping ? 'stopping' : 'idle', [], null));
  }

  /** While the query runs, claim newly due messages and push them into it. */
  private async pushFollowUps(query: AgentQuery, batch: Batch, progress: QueryProgress, transcript: Transcript): Promise<void> {
    const { config, waker, log } = this.deps;
    while (!progress.inputEnded && !this.stopping) {
      await waker.wait(config.pollActiveMs);
      if (progress.inputEnded || this.stopping || this.dbFileLost()) return;
      try {
        await this.pushOnce(query, batch, progress, transcript);
      } catch (err) {
        // Never reject: the query is still running and the event loop awaits this only when it ends.
        log.warn(`follow-up poll failed: ${errorMessage(err)}`);
      }
    }
  }

  /** Claim newly due messages and push them into the running query (or carry them to the next one). */
  private async pushOnce(query: AgentQuery, batch: Batch, progress: QueryProgress, transcript: Transcript): Promise<void> {
    const { db, config, log } = this.deps;
    const claim = await this.persist('claim', () => this.queue.claim('push'));
    this.logFailed(claim.failed);
    const messages = [...this.takeCarry(), ...this.scripts.divert(claim.messages)];
    if (messages.length === 0) return;
    // A push carries text only: attachments of follow-ups are referenced as files.
    const prepared = await preparePrompt(messages, {
      timeZone: config.timeZone,
      media: { ...this.mediaOptions, nativeMedia: [] },
      formatter: this.deps.formatter,
    });
    // The batch in flight names them before they reach the agent (the host's sweep leaves them alone); the routing
    // stays the current prompt's.
    const ids = [...batch.ids, ...messages.map((m) => m.row.id)];
    if (!progress.inputEnded && !this.stopping) await this.persist('runner state', () => setRunnerBatch(db, 'busy', ids, batch.routing));
    this.noteHeld();
    if (progress.inputEnded || this.stopping) {
      // The query closed its input meanwhile: these go first into the next query.
      this.carry.push(...prepared.messages);
      this.noteHeld();
      return;
    }
    batch.add(messages);
    progress.prompts += 1;
    query.push(prepared.text);
    transcript.add('prompt', prepared.text);
    log.info(`pushed ${plural(messages.length, 'follow-up message')} (${describeKinds(messages)})`);
  }

  private async fail(batch: Batch, progress: QueryProgress, query: AgentQuery, error: string, transcript: Transcript, retry = true): Promise<void> {
    progress.failed = true;
    if (progress.completed) {
      // Everything was answered already (and the batch completed with the answer): nothing to retry.
      this.deps.log.warn(`${error} (after the batch was answered)`);
    } else {
      this.deps.log.error(`${error} (batch of ${batch.ids.length} ${retry ? 'left processing for retry' : 'given up: another try cannot fix this'})`);
    }
    transcript.add('error', error);
    query.abort();
    if (!progress.completed) await this.persist('batch error', () => this.queue.recordError(batch.ids, error, { retry }));
  }

  /**
   * An answer and what its turn cost, with the provider's resume point, in one transaction; with `completes`, that
   * batch is marked completed in it too.
   */
  private writeResult(
    routing: RoutingContext,
    answer: { text: string | null; usage?: TurnUsage; completes?: string[] } | undefined,
    resumeAt?: string,
  ): Promise<void> {
    const { db, providerName } = this.deps;
    return this.persist('answer', () =>
      db
        .transaction(() => {
          if (resumeAt) setSessionValue(db, this.keys.resumeAt, resumeAt);
          if (!answer) return;
          insertTurnResult(db, {
            routing,
            text: answer.text,
            usage: answer.usage,
            provider: providerName,
            ...(this.modelGeneration !== undefined ? { modelGeneration: this.modelGeneration } : {}),
          });
          if (answer.completes) this.queue.complete(answer.completes);
        })
        .immediate(),
    );
  }

  /**
   * Every DB call the runner makes while running: another process holding the lock past the busy timeout is waited
   * out with back-off, never a crash or a lost answer. Once stopping, it gives up after one more wait (the rows stay
   * processing and the host's sweep retries them), so a stop is never held up by a lock for long.
   */
  private persist<T>(what: string, fn: () => T): Promise<T> {
    return retryWhileBusy(fn, { what, warn: (line) => this.deps.log.warn(line), giveUp: () => this.stopping });
  }

  private logFailed(failed: { row: { id: string; seq: number }; error: string }[]): void {
    for (const { row, error } of failed) this.deps.log.warn(`message ${row.seq} (${row.id}) failed: ${error}`);
  }

  private safely(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.deps.log.warn(`${what} failed: ${errorMessage(err)}`);
    }
  }
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/**
 * How long an idle runner waits: until the next row falls due, and at most the poll interval — or, while its waker
 * watches the folder (any write wakes it at once), the much longer idle check, which only covers a missed event. An
 * idle runner that woke every second cost about 0.03 % of a core each, for nothing.
 */
export function idleWaitMs(untilDue: number | undefined, watching: boolean, config: Pick<RunnerConfig, 'pollIdleMs' | 'idleCheckMs'>): number {
  const fallback = watching ? config.idleCheckMs : config.pollIdleMs;
  return untilDue === undefined ? fallback : Math.min(untilDue, fallback);
}
