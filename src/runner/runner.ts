import type Database from 'better-sqlite3';
import { insertOutbound } from '../db/messages.js';
import {
  deleteSessionValues,
  getSessionValue,
  sessionKeys,
  setRunnerBatch,
  setRunnerStateName,
  setSessionValue,
  writeHeartbeat,
} from '../db/state.js';
import type { RoutingContext } from '../db/types.js';
import type { AgentProvider, AgentQuery, McpServerConfig } from '../providers/types.js';
import { errorMessage, type Logger } from '../shared/log.js';
import { Batch, describeKinds } from './batch.js';
import type { BatchFormatter } from './batch-formatter.js';
import { detectCommand } from './commands.js';
import type { RunnerConfig } from './config.js';
import { formatBatch } from './format.js';
import { InboundQueue, type ClaimedMessage } from './queue.js';
import type { Waker } from './wake.js';

/**
 * The runner core (seed "Agent-Runner 核心"): the poll loop. Claims due messages, formats them, runs one provider
 * query at a time, pushes follow-ups into the active query, writes every result to `messages_out` with the batch's
 * routing, and keeps `runner_state` and `session_state` current. Provider specifics stay in the provider.
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
  /** formats the batch that starts a query, on a worker when it is large; without it, formatting is inline. */
  formatter?: BatchFormatter;
}

/** How the active query is going; shared by the event loop, the follow-up pump and `stop()`. */
interface QueryProgress {
  /** `end()` was called: no more pushes. */
  inputEnded: boolean;
  /** an error event or a crash: the batch stays processing with `last_error`. */
  failed: boolean;
  /** `stop()` had to abort the query before it finished. */
  abortedByStop: boolean;
}

export class Runner {
  private readonly queue: InboundQueue;
  private readonly keys: { sessionId: string; resumeAt: string };
  private stopping = false;
  private active: { query: AgentQuery; progress: QueryProgress; stopTimer?: NodeJS.Timeout } | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(private readonly deps: RunnerDeps) {
    const native = deps.provider.nativeSlashCommands;
    this.queue = new InboundQueue(deps.db, deps.config.batch, (message) => detectCommand(message, native) !== null);
    this.keys = sessionKeys(deps.providerName);
  }

  /** Run until `stop()`. Resolves once the in-flight query has finished or been aborted. */
  async run(): Promise<void> {
    const { db, config, waker } = this.deps;
    this.heartbeat = setInterval(() => this.safely('heartbeat', () => writeHeartbeat(db)), config.heartbeatMs);
    setRunnerStateName(db, 'idle');
    try {
      while (!this.stopping) {
        const claim = this.queue.claim('start');
        this.logFailed(claim.failed);
        if (claim.command) await this.runCommand(claim.command);
        else if (claim.messages.length > 0) await this.runBatch(claim.messages);
        else if (claim.failed.length === 0) await waker.wait(this.idleWaitMs());
      }
    } finally {
      clearInterval(this.heartbeat);
      setRunnerBatch(db, 'stopping', [], null);
    }
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

  private idleWaitMs(): number {
    const untilDue = this.queue.msUntilNextDue();
    return untilDue === undefined ? this.deps.config.pollIdleMs : Math.min(untilDue, this.deps.config.pollIdleMs);
  }

  private async runCommand(message: ClaimedMessage): Promise<void> {
    const command = detectCommand(message, this.deps.provider.nativeSlashCommands);
    if (command?.type === 'native') {
      // Provider-native commands go to the provider raw, unformatted.
      await this.runBatch([message], command.text);
      return;
    }
    // `/clear`: forget the provider session, so the next query starts a new conversation.
    const { db, log } = this.deps;
    deleteSessionValues(db, [this.keys.sessionId, this.keys.resumeAt]);
    this.deps.config.resumeSessionId = undefined;
    const batch = new Batch([message]);
    this.writeResult(batch.routing, 'Session cleared.');
    this.queue.complete(batch.ids);
    log.info(`session cleared by message ${message.row.seq}`);
  }

  private async runBatch(messages: ClaimedMessage[], rawPrompt?: string): Promise<void> {
    const { db, config, log, provider } = this.deps;
    const started = Date.now();
    const batch = new Batch(messages);
    setRunnerBatch(db, 'busy', batch.ids, batch.routing);
    const prompt = rawPrompt ?? (await this.formatFirst(messages));
    log.info(`picked ${messages.length} message${messages.length === 1 ? '' : 's'} (${describeKinds(messages)})`);

    const query = provider.query({
      prompt,
      sessionId: getSessionValue(db, this.keys.sessionId) ?? config.resumeSessionId,
      resumeAt: getSessionValue(db, this.keys.resumeAt),
      cwd: config.paths.agent,
      mcpServers: this.deps.mcpServers,
      systemPrompt: this.deps.systemPrompt,
      env: this.deps.providerEnv,
      additionalDirectories: this.deps.additionalDirectories,
    });
    const progress: QueryProgress = { inputEnded: false, failed: false, abortedByStop: false };
    this.active = { query, progress };
    // Formatting on a worker is asynchronous: a stop that came meanwhile applies to this query too.
    if (this.stopping) this.endForStop(this.active);
    const followUps = this.pushFollowUps(query, batch, progress);
    try {
      for await (const event of query.events) {
        if (event.type === 'init') {
          setSessionValue(db, this.keys.sessionId, event.sessionId);
        } else if (event.type === 'result') {
          if (event.resumeAt) setSessionValue(db, this.keys.resumeAt, event.resumeAt);
          if (event.text) this.writeResult(batch.routing, event.text);
          batch.answered();
          // Everything pushed so far is with the provider; close its input so the query ends once answered.
          // Messages arriving from here on start the next query.
          if (!progress.inputEnded) {
            progress.inputEnded = true;
            query.end();
          }
        } else if (event.type === 'error') {
          this.fail(batch, progress, query, `${event.classification ?? 'provider'} error: ${event.message}`);
          break;
        } else {
          log.debug(`progress: ${event.message}`);
        }
      }
    } catch (err) {
      this.fail(batch, progress, query, `provider crashed: ${errorMessage(err)}`);
    } finally {
      progress.inputEnded = true;
      this.deps.waker.notify();
      await followUps;
      if (this.active?.stopTimer) clearTimeout(this.active.stopTimer);
      this.active = null;
    }
    if (progress.abortedByStop && !progress.failed) {
      this.queue.recordError(batch.ids, 'runner stopped before the answer was complete');
    } else if (!progress.failed) {
      this.queue.complete(batch.ids);
      log.info(`completed ${batch.ids.length} message${batch.ids.length === 1 ? '' : 's'} in ${Date.now() - started} ms`);
    }
    setRunnerBatch(db, this.stopping ? 'stopping' : 'idle', [], null);
  }

  private formatFirst(messages: ClaimedMessage[]): Promise<string> | string {
    const options = { timeZone: this.deps.config.timeZone };
    return this.deps.formatter ? this.deps.formatter.format(messages, options) : formatBatch(messages, options);
  }

  /**
   * While the query runs, claim newly due messages and push them into it (seed "活动查询期间的并发轮询"). Follow-ups
   * are formatted inline: claim, format and push stay synchronous, so the query cannot end between them.
   */
  private async pushFollowUps(query: AgentQuery, batch: Batch, progress: QueryProgress): Promise<void> {
    const { db, config, waker, log } = this.deps;
    while (!progress.inputEnded && !this.stopping) {
      await waker.wait(config.pollActiveMs);
      if (progress.inputEnded || this.stopping) return;
      const claim = this.queue.claim('push');
      this.logFailed(claim.failed);
      if (claim.messages.length === 0) continue;
      batch.add(claim.messages);
      setRunnerBatch(db, 'busy', batch.ids, batch.routing);
      query.push(formatBatch(claim.messages, { timeZone: config.timeZone }));
      log.info(`pushed ${claim.messages.length} follow-up message${claim.messages.length === 1 ? '' : 's'} (${describeKinds(claim.messages)})`);
    }
  }

  private fail(batch: Batch, progress: QueryProgress, query: AgentQuery, error: string): void {
    progress.failed = true;
    this.deps.log.error(`${error} (batch of ${batch.ids.length} left processing for retry)`);
    this.queue.recordError(batch.ids, error);
    query.abort();
  }

  private writeResult(routing: RoutingContext, text: string): void {
    insertOutbound(this.deps.db, { kind: 'chat', content: { text }, routing });
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
