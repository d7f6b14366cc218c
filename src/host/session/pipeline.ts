import { createHash } from 'node:crypto';
import type { ConfigFile } from '../../db/config-file.js';
import { Backoff } from '../../shared/backoff.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { CentralStore } from '../central-db/store.js';
import type { AgentGroup, SessionRecord } from '../central-db/types.js';
import type { ChannelAdapter } from '../channels/types.js';
import { conversationOf, type Delivery, type SessionHandle } from '../delivery.js';
import type { Inbox } from '../inbox.js';
import type { HostMetrics } from '../metrics.js';
import type { ConversationRef } from '../types.js';
import type { HostUsage } from '../usage/host-usage.js';
import { isSessionPortError, type InboxRow, type SessionEvent, type SessionPort, type SessionState } from './port.js';

/** How long one `sync` waits for a change when nothing else is due (a long-poll over HTTP). */
const LONG_POLL_MS = 25_000;
/** A failing turn waits 100 ms, then twice as long each time, up to 30 s. */
const FAILURE_BACKOFF_BASE_MS = 100;
const FAILURE_BACKOFF_MAX_MS = 30_000;
/** A held start (the model runtime not ready) is retried after 1 s, then twice as long each time, up to 30 s. */
const HOLD_RETRY_BASE_MS = 1000;
/** The chat is told once a start has been held this many times in a row. */
const HOLD_NOTICE_AT = 3;

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
 * change (`sync`), then tell the chat what happened (events), show typing, deliver the outbound rows, collect usage,
 * and drop the inbox rows the session is done with. Every stage reads the session through the port only.
 */
export class SessionPipeline {
  /** the last state the session reported (what listings show; `state()` on the port for a fresh one). */
  state: SessionState | null = null;
  private version = 0;
  private typingIn: ConversationRef | null = null;
  private published = '';
  private admitted: string | undefined;
  /** the admission call in flight: the next one waits for it, so a raise is never overtaken by an older refusal */
  private admitting: Promise<void> = Promise.resolve();
  private held = 0;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private readonly abort = new AbortController();

  constructor(
    readonly session: SessionRecord,
    readonly port: SessionPort,
    private readonly deps: PipelineDeps,
  ) {}

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
    const hold = this.deps.modelRuntimeHold?.(handle.group);
    await this.publish(handle);
    await this.admit(handle, hold);
    if (hold !== undefined) waitMs = Math.min(waitMs, await this.onHold(hold));
    else this.held = 0;
    await this.pushUnacknowledged();
    const snapshot = await this.port.sync(this.version, 0, waitMs, this.abort.signal);
    if (this.stopped) return 0;
    this.version = snapshot.version;
    this.state = snapshot.state;
    for (const event of snapshot.events) await this.handleEvent(event);
    handle = this.handle();
    await this.updateTyping(handle, snapshot.state);
    const retryMs = await this.deps.delivery.deliverSession(handle, snapshot.outbound);
    // after the answers: the ledger can wait a moment, the chat should not
    await this.deps.usage.collect(handle.session, (after) => this.port.usageAfter(after), snapshot.state.lastUsageId);
    this.deps.store.setNextWakeAt(this.id, snapshot.state.nextDueAt);
    await this.pruneInbox(snapshot.state.incarnation);
    return Math.min(retryMs ?? LONG_POLL_MS, LONG_POLL_MS);
  }

  /**
   * Tell the session whether the group's budget admits turns (and whether its model runtime holds runner starts),
   * when that changed: on every turn, and before every write (a budget raised since the last turn must not leave the
   * session refusing the message it is given now).
   */
  private admit(handle: SessionHandle, hold?: string): Promise<void> {
    // One at a time, each reading the budget when its turn comes: two callers that both read "unchanged" while an
    // older call was still on its way would let that older admission stand after a raise.
    const next = this.admitting.then(() => this.admitNow(handle, hold ?? this.deps.modelRuntimeHold?.(handle.group)));
    this.admitting = next.catch(() => {
      // the caller of `next` gets its failure; the chain only waits for it to settle
    });
    return next;
  }

  private async admitNow(handle: SessionHandle, hold: string | undefined): Promise<void> {
    const budget = this.deps.usage.budgets.check(handle.group);
    const admission = `${budget.over}\n${hold ?? ''}`;
    if (admission === this.admitted) return;
    await this.port.setAdmission({ over: budget.over, notice: budget.over ? budget.notice : '', ...(hold !== undefined ? { hold } : {}) });
    this.admitted = admission;
  }

  /** A start held again: back off, and tell the chat once it has happened {@link HOLD_NOTICE_AT} times in a row. */
  private async onHold(why: string): Promise<number> {
    this.held += 1;
    if (this.held === 1 || this.held === HOLD_NOTICE_AT) this.deps.log.warn(`session ${this.id}: runner start held (${this.held} in a row): ${why}`);
    if (this.held === HOLD_NOTICE_AT) {
      await this.deps.delivery.notify(
        { session: this.session },
        conversationOf({ session: this.session }, NO_ROUTING),
        `The agent cannot start yet: ${why}. Your messages wait; retrying with back-off.`,
      );
    }
    return Math.min(HOLD_RETRY_BASE_MS * 2 ** Math.min(this.held - 1, 5), FAILURE_BACKOFF_MAX_MS);
  }

  /** Write an inbound row into the session, kept in the inbox first; returns its receipt (seq null: not there yet). */
  async write(row: InboxRow): Promise<{ id: string; seq: number | null }> {
    this.deps.inbox.keep(this.id, row);
    try {
      await this.admit(this.handle());
      const written = await this.port.accept(row);
      this.deps.inbox.markPushed(this.id, row.id);
      return written;
    } catch (err) {
      // The session is out of reach: the row waits in the inbox and is pushed on the next turn.
      if (isSessionPortError(err, 'unavailable')) return { id: row.id, seq: null };
      this.deps.inbox.drop(this.id, row.id);
      throw err;
    }
  }

  /** Rows accepted while the session was out of reach, or given again after its database was set up afresh. */
  private async pushUnacknowledged(): Promise<void> {
    for (const row of this.deps.inbox.unpushed(this.id)) {
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

  /**
   * Show "typing" in the batch's conversation while the runner is busy, and in the first due message's while the
   * session waits for room for its runner; clear it when neither.
   */
  private async updateTyping(handle: SessionHandle, state: SessionState): Promise<void> {
    const live = state.runner;
    const busyRouting =
      live?.state === 'busy'
        ? { channel_type: live.routing?.channelType ?? null, platform_id: live.routing?.platformId ?? null, thread_id: live.routing?.threadId ?? null }
        : state.queued && !live
          ? state.queued.routing
          : undefined;
    const busy = busyRouting !== undefined;
    if (busy && this.typingIn && !sameConversation(this.typingIn, conversationOf(handle, busyRouting))) {
      // from the queued message's conversation to the batch's: clear the old one first
      await this.deps.channels.get(this.typingIn.channelType)?.setTyping?.(this.typingIn, false);
      this.typingIn = null;
    }
    if (busy === (this.typingIn !== null)) return;
    const conversation = busy ? conversationOf(handle, busyRouting) : this.typingIn!;
    this.typingIn = busy ? conversation : null;
    await this.deps.channels.get(conversation.channelType)?.setTyping?.(conversation, busy);
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

function sameConversation(a: ConversationRef, b: ConversationRef): boolean {
  return a.channelType === b.channelType && a.platformId === b.platformId && (a.threadId ?? null) === (b.threadId ?? null);
}

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
