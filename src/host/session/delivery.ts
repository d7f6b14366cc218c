import type { z } from 'zod';
import {
  describeIssues,
  OutboundCardSchema,
  OutboundChatSchema,
  OutboundEditSchema,
  OutboundQuestionSchema,
  OutboundReactionSchema,
  OutboundSystemSchema,
} from '../../db/content.js';
import type { OutboundRow } from '../../db/types.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { ActionHandlers } from '../actions.js';
import type { CentralStore } from '../central-db/store.js';
import type { AgentGroup, SessionRecord } from '../central-db/types.js';
import { ChannelDeliveryError, type ChannelAdapter, type OutboundPayload } from '../channels/types.js';
import type { InboxRow, SessionPort } from './port.js';
import type { ConversationRef, HostConfig } from '../types.js';
import { isPincerError } from '../../shared/errors.js';

/**
 * Delivery of `messages_out`: chat rows (text, files, edits, reactions, cards, questions) go to the channel
 * adapter of their `channel_type`, `channel_type: 'agent'` rows become inbound messages of another agent group's
 * session, `system` rows go to the action handlers. A row is marked delivered only after the channel took it. A
 * failure is retried with back-off up to the attempt limit; then `delivery_error` is recorded and the agent is told
 * with a context row (trigger 0) that rides along with its next prompt.
 */
export interface SessionHandle {
  port: SessionPort;
  session: SessionRecord;
  group: AgentGroup;
}

export interface DeliveryDeps {
  /** the host's clock (`HostOptions.clock`): when a failed delivery is tried again */
  now?: () => number;
  channels: ReadonlyMap<string, ChannelAdapter>;
  /** channel types that may attach later (`ChannelCapabilities.attachable`): while absent, their rows wait. */
  attachable?: ReadonlySet<string>;
  store: CentralStore;
  actions: ActionHandlers;
  /** deliver a `channel_type: 'agent'` row into the target group's session; throws when it cannot. */
  toAgent(from: SessionHandle, row: OutboundRow, text: string): Promise<void>;
  /** write an inbound message into a session as the host does (kept in its inbox until the session is done with it). */
  write(handle: SessionHandle, row: InboxRow): Promise<{ id: string; seq: number }>;
  /** the row was delivered (before the session hears of it): a launch that offers it again is not delivered to twice. */
  delivered?(handle: SessionHandle, row: OutboundRow): void;
  /** the check of one pass over a session's rows: why a row may not go to a conversation (src/host/outbound-reach.ts). */
  reach?(session: SessionRecord): (to: ConversationRef) => string | undefined;
  config: HostConfig['delivery'];
  log: Logger;
  /** told of each row delivered and each failed attempt (metrics, traces). Must not throw. */
  observer?: DeliveryObserver;
}

export interface DeliveryObserver {
  delivered(handle: SessionHandle, row: OutboundRow): void;
  failed(handle: SessionHandle, row: OutboundRow, error: string): void;
}

/** A failure that retrying cannot fix (bad content, unknown channel): recorded at once. */
function permanentFailure(message: string): ChannelDeliveryError {
  return new ChannelDeliveryError(message, { permanent: true });
}

/** The channel is not attached now but will be (the terminal, while no `pincer chat` runs): the row waits for it. */
const WAIT_FOR_CHANNEL = Symbol('the channel is not attached');

export class Delivery {
  private readonly attempts = new Map<string, { count: number; nextAt: number }>();

  constructor(private readonly deps: DeliveryDeps) {}

  /**
   * Deliver the session's undelivered rows in order. Stops at a row waiting for its retry (later rows wait too, so a
   * conversation never sees answers out of order). Returns milliseconds until that retry, if any.
   */
  async deliverSession(handle: SessionHandle, rows: readonly OutboundRow[]): Promise<number | undefined> {
    const reach = rows.length > 0 ? this.deps.reach?.(handle.session) : undefined;
    for (const row of rows) {
      const key = `${handle.session.id}:${row.id}`;
      const attempt = this.attempts.get(key);
      const now = (this.deps.now ?? Date.now)();
      if (attempt && attempt.nextAt > now) return attempt.nextAt - now;
      try {
        const platformMessageId = await this.deliverRow(handle, row, reach);
        if (platformMessageId === WAIT_FOR_CHANNEL) continue; // delivered when the channel is back (e.g. the next `pincer chat`)
        this.deps.delivered?.(handle, row);
        this.attempts.delete(key);
        await handle.port.ack([{ id: row.id, delivered: true, platformMessageId: platformMessageId ?? null }]);
        this.deps.observer?.delivered(handle, row);
      } catch (err) {
        const message = errorMessage(err);
        this.deps.observer?.failed(handle, row, message);
        const count = (attempt?.count ?? 0) + 1;
        const permanent = err instanceof ChannelDeliveryError && err.options.permanent === true;
        if (permanent || count >= this.deps.config.maxAttempts) {
          this.attempts.delete(key);
          await this.recordFailure(handle, row, permanent ? message : `${message} (after ${count} attempts)`);
          continue;
        }
        // A platform that said how long to wait (429 retry-after) is not asked again sooner.
        const retryAfterMs = err instanceof ChannelDeliveryError ? (err.options.retryAfterMs ?? 0) : 0;
        const delay = Math.max(retryAfterMs, this.deps.config.retryBaseMs * 2 ** (count - 1));
        this.attempts.set(key, { count, nextAt: (this.deps.now ?? Date.now)() + delay });
        this.deps.log.warn(`delivery of message ${row.seq} in ${handle.session.id} failed (attempt ${count}): ${message}; retry in ${delay} ms`);
        return delay;
      }
    }
    return undefined;
  }

  /** The host speaking to a conversation directly (no row): a message failed for good, a runner cannot start. */
  async notify(handle: { session: Pick<SessionRecord, 'id'> }, conversation: ConversationRef, text: string): Promise<void> {
    const channel = this.deps.channels.get(conversation.channelType);
    if (!channel) {
      this.deps.log.warn(`notice for ${conversation.channelType}:${conversation.platformId} not sent (no such channel): ${text}`);
      return;
    }
    try {
      await channel.deliver({ sessionId: handle.session.id, id: null, seq: null, conversation, inReplyTo: null, payload: { type: 'notice', text } });
    } catch (err) {
      this.deps.log.warn(`notice to ${conversation.channelType}:${conversation.platformId} failed: ${errorMessage(err)}: ${text}`);
    }
  }

  private async deliverRow(
    handle: SessionHandle,
    row: OutboundRow,
    reach: ((to: ConversationRef) => string | undefined) | undefined,
  ): Promise<string | undefined | typeof WAIT_FOR_CHANNEL> {
    const content = parseJson(row.content);
    if (row.kind === 'system') {
      const action = OutboundSystemSchema.safeParse(content);
      if (!action.success) throw permanentFailure('system row without an "action"');
      const answer = await this.deps.actions.run({ ...handle, row, content: action.data, write: (inbox) => this.deps.write(handle, inbox) });
      await this.deps.write(handle, {
        // one answer per action row, also when the row is offered again after a crash
        id: `action-${row.id}`,
        kind: 'system',
        content: { action: action.data.action, ...answer },
        ...routingOf(handle, row),
      });
      this.deps.log.info(`action ${action.data.action} from ${handle.session.id}: ${answer.status}${answer.status === 'error' ? ` (${answer.error})` : ''}`);
      return undefined;
    }
    if (row.channel_type === 'agent') {
      const chat = OutboundChatSchema.safeParse(content);
      if (!chat.success) throw permanentFailure('agent message without "text"');
      try {
        await this.deps.toAgent(handle, row, chat.data.text);
      } catch (err) {
        throw permanentFailure(errorMessage(err));
      }
      return undefined;
    }
    const conversation = conversationOf(handle, row);
    const refused = reach?.(conversation);
    if (refused) throw permanentFailure(refused);
    const channel = this.deps.channels.get(conversation.channelType);
    if (!channel) {
      if (this.deps.attachable?.has(conversation.channelType)) return WAIT_FOR_CHANNEL;
      throw permanentFailure(`no channel "${conversation.channelType}" on this host`);
    }
    const payload = await this.payloadOf(handle, row, content);
    if (payload.type === 'question') {
      this.deps.store.recordQuestion({
        questionId: payload.questionId,
        sessionId: handle.session.id,
        channelType: conversation.channelType,
        platformId: conversation.platformId,
        threadId: conversation.threadId,
      });
    }
    const receipt = await channel.deliver({ sessionId: handle.session.id, id: row.id, seq: row.seq, conversation, inReplyTo: row.in_reply_to, payload });
    return receipt.platformMessageId;
  }

  private async payloadOf(handle: SessionHandle, row: OutboundRow, content: unknown): Promise<OutboundPayload> {
    const op = typeof content === 'object' && content !== null ? (content as Record<string, unknown>).operation : undefined;
    const target = (seq: number): Promise<string | null> => handle.port.platformMessageIdOf(seq);
    if (op === 'edit') {
      const edit = strict(OutboundEditSchema, content, 'edit');
      return { type: 'edit', messageId: edit.messageId, text: edit.text, targetPlatformMessageId: await target(edit.messageId) };
    }
    if (op === 'reaction') {
      const reaction = strict(OutboundReactionSchema, content, 'reaction');
      return { type: 'reaction', messageId: reaction.messageId, emoji: reaction.emoji, targetPlatformMessageId: await target(reaction.messageId) };
    }
    if (op === 'ask_question') {
      const q = strict(OutboundQuestionSchema, content, 'ask_question');
      return { type: 'question', questionId: q.questionId, title: q.title, question: q.question, options: q.options };
    }
    if (row.kind === 'chat-sdk') {
      const card = OutboundCardSchema.safeParse(content);
      if (card.success) return { type: 'card', card: card.data.card, fallbackText: card.data.fallbackText ?? null };
    }
    const chat = strict(OutboundChatSchema, content, 'chat');
    const files = [];
    for (const name of chat.files ?? []) files.push(await outboxFile(handle, row, name));
    return { type: 'chat', text: chat.text, files };
  }

  /** The failure is recorded in the session, and the agent learns of it with its next prompt. */
  private async recordFailure(handle: SessionHandle, row: OutboundRow, error: string): Promise<void> {
    this.deps.log.warn(`message ${row.seq} in ${handle.session.id} not delivered: ${error}`);
    await handle.port.ack([{ id: row.id, delivered: false, error }]);
  }
}

/** Where a row goes: its own routing, else the conversation the session belongs to. */
export function conversationOf(
  handle: Pick<SessionHandle, 'session'>,
  row: { channel_type: string | null; platform_id: string | null; thread_id: string | null },
): ConversationRef {
  if (row.channel_type && row.platform_id) return { channelType: row.channel_type, platformId: row.platform_id, threadId: row.thread_id };
  const s = handle.session;
  return { channelType: s.channelType, platformId: s.platformId, threadId: s.threadKey || null };
}

function routingOf(handle: SessionHandle, row: OutboundRow): { platformId: string; channelType: string; threadId: string | null } {
  const c = conversationOf(handle, row);
  return { platformId: c.platformId, channelType: c.channelType, threadId: c.threadId };
}

/** A file the agent sent (checked by the port: a plain name, a regular file, no link on the way); refused for good. */
async function outboxFile(handle: SessionHandle, row: OutboundRow, name: string): Promise<{ name: string; path: string }> {
  try {
    return await handle.port.outboxFile(row.id, name);
  } catch (err) {
    if (isPincerError(err, 'not-found') || isPincerError(err, 'invalid-input')) throw permanentFailure(err.message);
    throw err;
  }
}

function strict<T>(schema: z.ZodType<T>, content: unknown, what: string): T {
  const parsed = schema.safeParse(content);
  if (!parsed.success) throw permanentFailure(`invalid ${what} content: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw permanentFailure('content is not valid JSON');
  }
}
