import { createHash } from 'node:crypto';
import type { ConfigFile } from '../../db/config-file.js';
import { Backoff } from '../../shared/backoff.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { CentralStore } from '../central-db/store.js';
import type { AgentGroup, SessionRecord } from '../central-db/types.js';
import type { ChannelAdapter } from '../channels/types.js';
import { conversationOf, type Delivery, type SessionHandle } from './delivery.js';
import type { Inbox } from '../inbox.js';
import type { HostMetrics } from '../metrics.js';
import type { HostUsage } from '../usage/host-usage.js';
import { AdmissionStage } from './admission.js';
import { isSessionPortError, type InboxRow, type SessionEvent, type SessionPort, type SessionState } from './port.js';
import { TypingStage } from './typing.js';
import { ToolActivityStage } from './tool-activity.js';

/** How long one `sync` waits for a change when nothing else is due (a long-poll over HTTP). */
const LONG_POLL_MS = 25_000;
/** A failing turn waits 100 ms, then twice as long each time, up to 30 s. */
const FAILURE_BACKOFF_BASE_MS = 100;
const FAILURE_BACKOFF_MAX_MS = 30_000;

export interface PipelineDeps {
  store: CentralStore;
  inbox: Inbox;
  delivery: Delivery;
  usage: HostUsage;
  channels: ReadonlyMap<string, ChannelAdapter>;
  log: Logger;
  metrics?: HostMetrics;
  /** the runner configuration document of a session of `group`. */
  configFor(session: SessionRecord, group: AgentGroup): ConfigFile;
  /**
   * Why no runner of `group` may start now (its model runtime has no generation to serve), or undefined when one may.
   * Must not block: an unchanged state answers at once.
   */
  modelRuntimeHold?(group: AgentGroup): string | undefined;
  /** the values of the secrets `config`'s MCP servers refer to (handed to runners at launch, never written). */
  secretsFor?(config: ConfigFile): Record<string, string>;
  /** what the host itself does about an event (`reset`, `quarantined`); notices and counts are the pipeline's. */
  onEvent(pipeline: SessionPipeline, event: SessionEvent): Promise<void>;
  /** the port stopped answering or another launch owns the session (served sessions are relaunched). */
  onPortFailure?(pipeline: SessionPipeline, err: unknown): void;
}

/**
 * The host's side of one session, over its port, one turn at a time: publish the runner configuration and the
 * budget's admission when they change, push what the inbox holds that the session has not acknowledged, wait for a
 * change (`sync`), then tell the chat what happened (events), show typing and tool activity, deliver the outbound rows, collect usage,
 * and drop the inbox rows the session is done with. Every stage reads the session through the port only; the budget
 * (admission.ts), typing (typing.ts), tool activity (tool-activity.ts) and delivery (delivery.ts) stages are their own files, and the sweep and the
 * runner's lifecycle run next to the session folder (engine.ts, in the host or in `pincer session-serve`).
 */
export class SessionPipeline {
  /** the last state the session reported (what listings show; `state()` on the port for a fresh one). */
  state: SessionState | null = null;
  private version = 0;
  private published = '';
  private stopped = false;
  /** the stages of a turn that keep state of their own (the sweep and the runner's lifecycle run next to the session) */
  private readonly typing: TypingStage;
  private readonly tools: ToolActivityStage;
  private readonly admission: AdmissionStage;
  private loop: Promise<void> | null = null;
  private readonly abort = new AbortController();
  /** rows `write` is handing to the session now: a turn meanwhile does not push them a second time */
  private readonly writing = new Set<string>();

  constructor(
    readonly session: SessionRecord,
    readonly port: SessionPort,
    private readonly deps: PipelineDeps,
  ) {
    this.typing = new TypingStage(deps.channels);
    this.tools = new ToolActivityStage(deps.channels);
    this.admission = new AdmissionStage(session.id, {
      port,
      usage: deps.usage,
      log: deps.log,
      modelRuntimeHold: deps.modelRuntimeHold,
      notify: (text) => deps.delivery.notify({ session: this.session }, conversationOf({ session: this.session }, NO_ROUTING), text),
    });
  }

  get id(): string {
    return this.session.id;
  }

  /** The session as the central DB has it now (its provider session id may have changed), and its group. */
  handle(): SessionHandle {
    const session = this.deps.store.getSession(this.id) ?? this.session;
    const group = this.deps.store.getAgentGroup(session.agentGroupId);
    if (!group) throw new Error(`agent group ${session.agentGroupId} is gone`);
    return { port: this.port, session, group };
  }

  /** Publish the runner configuration now if it changed since the last time (before a session's first message). */
  async publish(handle = this.handle(), force = false): Promise<void> {
    const config = this.deps.configFor(handle.session, handle.group);
    const secrets = this.deps.secretsFor?.(config) ?? {};
    // A rotated secret publishes again (for the next launch); only its digest is kept here.
    const text = `${JSON.stringify(config)}\n${createHash('sha256').update(JSON.stringify(secrets)).digest('hex')}`;
    if (text === this.published && !force) return;
    await this.port.publishConfig(config, secrets);
    this.published = text;
  }

  run(): void {
    const backoff = new Backoff(FAILURE_BACKOFF_BASE_MS, FAILURE_BACKOFF_MAX_MS);
    let waitMs = 0;
    this.loop = (async () => {
      while (!this.stopped) {
        try {
          waitMs = await this.turn(waitMs);
          const ended = backoff.succeed();
          if (ended > 0) this.deps.log.info(`session ${this.id}: recovered after ${ended} failed turn(s)`);
        } catch (err) {
          if (this.stopped) break;
          const { delayMs, failures } = backoff.fail(errorMessage(err));
          this.deps.log.error(`session ${this.id}: ${errorMessage(err)} (${failures} in a row; next try in ${delayMs} ms)`);
          if (isSessionPortError(err)) this.deps.onPortFailure?.(this, err);
          await sleep(delayMs, this.abort.signal);
          waitMs = 0;
        }
      }
    })();
  }

  /** One turn; returns how long the next `sync` may wait. */
  private async turn(waitMs: number): Promise<number> {
    let handle = this.handle();
    const hold = this.admission.hold(handle.group);
    await this.publish(handle);
    await this.admission.admit(handle, hold);
    waitMs = Math.min(waitMs, (await this.admission.afterHold(hold)) ?? waitMs);
    await this.pushUnacknowledged();
    const snapshot = await this.port.sync(this.version, 0, waitMs, this.abort.signal);
    if (this.stopped) return 0;
    this.version = snapshot.version;
    this.state = snapshot.state;
    for (const event of snapshot.events) await this.handleEvent(event);
    handle = this.handle();
    await this.typing.update(handle, snapshot.state);
    await this.tools.update(handle, snapshot.state);
    const retryMs = await this.deps.delivery.deliverSession(handle, snapshot.outbound);
    // after the answers: the ledger can wait a moment, the chat should not
    const usageLeft = await this.deps.usage.collect(handle.session, (after) => this.port.usageAfter(after), snapshot.state.lastUsageId);
    this.deps.store.setNextWakeAt(this.id, snapshot.state.nextDueAt);
    await this.pruneInbox(snapshot.state.incarnation);
    return usageLeft ? 0 : Math.min(retryMs ?? LONG_POLL_MS, LONG_POLL_MS);
  }

  /** Write an inbound row into the session, kept in the inbox first; returns its receipt (seq null: not there yet). */
  async write(row: InboxRow): Promise<{ id: string; seq: number | null }> {
    this.deps.inbox.keep(this.id, row);
    this.writing.add(row.id);
    try {
      // what changed on the host's side since the last turn (the group's settings, its budget) applies to this row
      const handle = this.handle();
      await this.publish(handle);
      await this.admission.admit(handle);
      const written = await this.port.accept(row);
      this.deps.inbox.markPushed(this.id, row.id);
      return written;
    } catch (err) {
      // The session is out of reach: the row waits in the inbox and is pushed on the next turn.
      if (isSessionPortError(err, 'unavailable')) return { id: row.id, seq: null };
      this.deps.inbox.drop(this.id, row.id);
      throw err;
    } finally {
      this.writing.delete(row.id);
    }
  }

  /** Rows accepted while the session was out of reach, or given again after its database was set up afresh. */
  private async pushUnacknowledged(): Promise<void> {
    for (const row of this.deps.inbox.unpushed(this.id)) {
      if (this.writing.has(row.id)) continue;
      try {
        await this.port.accept(row);
      } catch (err) {
        if (isSessionPortError(err)) throw err;
        // Refused for good (the session's task limit): not kept, and the log says why.
        this.deps.log.warn(`message ${row.id} for ${this.id} refused by the session: ${errorMessage(err)}`);
        this.deps.inbox.drop(this.id, row.id);
        continue;
      }
      this.deps.inbox.markPushed(this.id, row.id);
    }
  }

  private async pruneInbox(incarnation: number): Promise<void> {
    if (!this.deps.inbox.pruneDue(this.id)) return;
    const ids = this.deps.inbox.pushedIds(this.id);
    this.deps.inbox.prune(this.id, ids.length, ids.length > 0 ? await this.port.done(ids, incarnation) : []);
  }

  private async handleEvent(event: SessionEvent): Promise<void> {
    switch (event.type) {
      case 'notice':
        await this.deps.delivery.notify({ session: this.session }, conversationOf({ session: this.session }, event.routing), event.text);
        return;
      case 'counts':
        this.deps.metrics?.retries.inc(event.retried);
        this.deps.metrics?.failedMessages.inc(event.failed);
        return;
      case 'provider-session':
        this.deps.store.setProviderSessionId(this.id, event.providerSessionId);
        return;
      default:
        await this.deps.onEvent(this, event);
    }
  }

  /** Stop after the turn in progress (a `sync` waiting for a change is cut short). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.loop;
  }

  /** One last delivery of what the session holds (the host stops: runners finished their queries). */
  async flush(): Promise<void> {
    const handle = this.handle();
    const snapshot = await this.port.sync(Number.MAX_SAFE_INTEGER, 0, 0);
    await this.deps.delivery.deliverSession(handle, snapshot.outbound);
  }
}

const NO_ROUTING = { channel_type: null, platform_id: null, thread_id: null };

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
