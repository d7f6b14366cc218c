import type Database from 'better-sqlite3';
import { parseMarkdown, type Adapter, type AdapterPostableMessage, type Chat, type Logger as ChatLogger, type Message, type MessageContext } from 'chat';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { errorMessage, type Logger } from '../../shared/log.js';
import { DISK_FULL_NOTICE, failedMessageNotice, isDiskFull } from '../errors.js';
import { PincerError } from '../../shared/errors.js';
import { openOutboxFile } from '../untrusted-files.js';
import { ChannelDeliveryError, type ChannelAdapter, type DeliveryReceipt, type HostApi, type OutboundDelivery } from '../channels/types.js';
import type { ConversationRef } from '../types.js';
import type { PlatformSpec } from './catalog.js';
import { saveAttachments } from '../incoming-files.js';
import { conversationOf, senderOf, serializedContent, triggerOf } from './inbound.js';
import { ANSWER_ACTION, deliveryError, parseAnswerValue, questionCard, toCard } from './outbound.js';
import { splitMarkdown } from './split.js';
import { SqliteStateAdapter } from './state.js';

/**
 * One chat platform as a channel of the host, through its Chat SDK adapter: its events become `chat-sdk` rows (see
 * inbound.ts), what the agent sends goes out through the adapter (split at the platform's limit, markdown converted
 * by the adapter, files, edits, reactions, cards, questions as buttons), and "typing" is shown while the agent works.
 * Each platform has its own Chat instance, so one platform that cannot start (its API unreachable) neither stops the
 * host nor the other platforms: it is retried in the background with back-off.
 */
export interface PlatformChannelOptions {
  spec: PlatformSpec;
  env: NodeJS.ProcessEnv;
  /** the central DB (Chat SDK state lives in its `chat_*` tables). */
  db: Database.Database;
  /** the bot's display name, for mention detection where the platform does not report it. */
  userName: string;
  log: Logger;
}

/** Typing indicators fade after a few seconds on most platforms (Telegram: 5 s); renewed while the agent works. */
const TYPING_RENEW_MS = 4000;
/** How long a question's buttons stay answerable. */
const QUESTION_TTL_MS = 30 * 24 * 3600_000;
const START_RETRY_BASE_MS = 1000;
const START_RETRY_MAX_MS = 60_000;

interface QuestionEntry {
  questionId: string;
  title: string;
  question: string;
  options: { label: string; value: string }[];
}

export class PlatformChannel implements ChannelAdapter {
  readonly type: string;
  readonly capabilities = { localInput: false, attachable: false };
  private host: HostApi | null = null;
  private adapter: Adapter | null = null;
  private chat: Chat | null = null;
  private state: SqliteStateAdapter | null = null;
  private ready: Promise<void> | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private startFailures = 0;
  /** rows partly delivered (a split answer whose later part failed): parts sent so far, so a retry sends the rest. */
  private readonly progress = new Map<string, { sent: number; firstId?: string }>();
  private readonly typing = new Map<string, NodeJS.Timeout>();

  constructor(private readonly options: PlatformChannelOptions) {
    this.type = options.spec.name;
  }

  /**
   * Build the adapter (a configuration error — e.g. a malformed key — fails the host's start with the adapter's
   * message) and connect in the background; until connected, webhooks answer 503 and deliveries wait.
   */
  async start(host: HostApi): Promise<void> {
    this.host = host;
    const { spec, env } = this.options;
    try {
      this.adapter = await spec.create(env, this.chatLogger(spec.name));
    } catch (err) {
      throw new PincerError('config', `${spec.title}: ${errorMessage(err)}`);
    }
    this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    for (const timer of this.typing.values()) clearInterval(timer);
    this.typing.clear();
    await this.ready?.catch(() => undefined); // a start that failed was logged when it failed
    await this.chat?.shutdown().catch((err: unknown) => this.options.log.warn(`${this.type}: shutdown: ${errorMessage(err)}`));
    // Telegram's adapter has no disconnect: its long poll is stopped here, or it would keep the process alive.
    await stopPolling(this.adapter);
  }

  /** A webhook request for this platform (POST /webhooks/<platform>), verified by the adapter before anything is stored. */
  async webhook(request: Request): Promise<Response> {
    const chat = this.chat;
    if (!chat || !(await this.isReady())) return new Response(`${this.options.spec.title} is not connected yet; retry later`, { status: 503 });
    const handler = (chat.webhooks as Record<string, (r: Request) => Promise<Response>>)[this.type];
    if (!handler) return new Response('unknown platform', { status: 404 });
    return handler(request);
  }

  async deliver(message: OutboundDelivery): Promise<DeliveryReceipt> {
    const adapter = await this.connected();
    const { payload, conversation } = message;
    const threadId = conversation.threadId ?? conversation.platformId;
    try {
      switch (payload.type) {
        case 'chat':
        case 'notice':
          return await this.postText(adapter, message, threadId, payload.text, payload.type === 'chat' ? payload.files : []);
        case 'edit': {
          if (!payload.targetPlatformMessageId)
            throw new ChannelDeliveryError(`message ${payload.messageId} has no ${this.type} message to edit`, { permanent: true });
          const [first] = this.chunks(adapter, payload.text);
          const sent = await adapter.editMessage(threadId, payload.targetPlatformMessageId, { markdown: first ?? payload.text });
          return { platformMessageId: sent.id };
        }
        case 'reaction':
          if (!payload.targetPlatformMessageId)
            throw new ChannelDeliveryError(`message ${payload.messageId} has no ${this.type} message to react to`, { permanent: true });
          await adapter.addReaction(threadId, payload.targetPlatformMessageId, payload.emoji);
          return {};
        case 'question': {
          const key = randomBytes(8).toString('base64url');
          const entry: QuestionEntry = { questionId: payload.questionId, title: payload.title, question: payload.question, options: payload.options };
          await this.state!.set(`pincer:question:${key}`, entry, QUESTION_TTL_MS);
          const fallbackText = `${payload.title}\n${payload.question}\n${payload.options.map((o, i) => `${i + 1}. ${o.label}`).join('\n')}`;
          const sent = await adapter.postMessage(threadId, { card: questionCard(payload, key), fallbackText });
          return { platformMessageId: sent.id };
        }
        case 'card': {
          const card = toCard(payload.card);
          const fallbackText = payload.fallbackText ?? (card ? undefined : JSON.stringify(payload.card));
          const sent = card
            ? await adapter.postMessage(threadId, { card, ...(fallbackText ? { fallbackText } : {}) })
            : await adapter.postMessage(threadId, { markdown: fallbackText! });
          return { platformMessageId: sent.id };
        }
      }
    } catch (err) {
      throw deliveryError(this.type, err);
    }
  }

  async setTyping(conversation: ConversationRef, active: boolean): Promise<void> {
    const threadId = conversation.threadId ?? conversation.platformId;
    const timer = this.typing.get(threadId);
    if (timer) clearInterval(timer);
    this.typing.delete(threadId);
    if (!active || this.stopped || !this.options.spec.typing) return;
    const show = (): void => {
      if (!this.adapter || !this.chat) return;
      this.adapter.startTyping(threadId).catch((err: unknown) => this.options.log.debug(`${this.type}: typing: ${errorMessage(err)}`));
    };
    show();
    const renew = setInterval(show, TYPING_RENEW_MS);
    renew.unref();
    this.typing.set(threadId, renew);
  }

  // ---- outbound ----

  /** Text split at the platform's limit, then each file as its own message; a retry continues after the last part sent. */
  private async postText(
    adapter: Adapter,
    message: OutboundDelivery,
    threadId: string,
    text: string,
    files: { name: string; path: string }[],
  ): Promise<DeliveryReceipt> {
    const parts: AdapterPostableMessage[] = [
      ...this.chunks(adapter, text).map((markdown) => ({ markdown })),
      ...files.map((file) => ({ markdown: '', files: [{ data: readOutboxFile(file.path), filename: file.name }] })),
    ];
    const key = message.id ?? '';
    const progress = (message.id && this.progress.get(key)) || { sent: 0 };
    for (let i = progress.sent; i < parts.length; i++) {
      const sent = await adapter.postMessage(threadId, parts[i]!);
      progress.firstId ??= sent.id;
      progress.sent = i + 1;
      if (message.id) this.progress.set(key, progress);
    }
    this.progress.delete(key);
    return progress.firstId ? { platformMessageId: progress.firstId } : {};
  }

  private chunks(adapter: Adapter, text: string): string[] {
    if (text.trim() === '') return [];
    return splitMarkdown(text, this.options.spec.textLimit, (markdown) => adapter.renderFormatted(parseMarkdown(markdown)));
  }

  // ---- inbound ----

  private async receive(message: Message, context?: MessageContext): Promise<void> {
    // With the queue strategy, messages that arrived while the last one was stored come along as `skipped`: all are kept.
    for (const m of [...(context?.skipped ?? []), message]) {
      try {
        await this.accept(m);
      } catch (err) {
        this.options.log.warn(`${this.type}: message ${m.id} from ${m.author.userId} not stored: ${errorMessage(err)}`);
        const notice = failedMessageNotice(err); // in the words of its error code: no internals reach the chat
        if (notice !== undefined) await this.tell(m.threadId, notice);
      }
    }
  }

  private async accept(message: Message): Promise<void> {
    const adapter = this.adapter!;
    const host = this.host!;
    if (message.author.isBot === true) return; // other bots: answering them invites loops
    const conversation = conversationOf(this.type, { id: message.threadId, channelId: adapter.channelIdFromThreadId(message.threadId) });
    const sender = senderOf(this.type, message);
    const group = host.groupOf(conversation);
    const trigger = triggerOf(group.triggerRules, sender, message, adapter.isDM?.(message.threadId) ?? false);
    if (trigger === null) {
      this.options.log.info(`${this.type}: ignored a message from ${sender.id} (not on the allow-list of ${group.name})`);
      return;
    }
    const id = randomUUID();
    const attachments = message.attachments.length > 0 ? await saveAttachments(message.attachments, host.sessionFolderOf(conversation), id) : [];
    const content = { ...serializedContent(message), ...(attachments.length > 0 ? { attachments } : {}) };
    const receipt = await host.acceptInbound({ conversation, kind: 'chat-sdk', content, trigger, id });
    this.options.log.info(`${this.type}: message ${receipt.seq} from ${sender.id} in ${receipt.sessionId}${trigger === 0 ? ' (context only)' : ''}`);
  }

  /** A notice from the host itself (not the agent's) in a thread; one that cannot be sent is logged. */
  private async tell(threadId: string, text: string): Promise<void> {
    await this.adapter
      ?.postMessage(threadId, { markdown: text })
      .catch((err: unknown) => this.options.log.warn(`${this.type}: could not send a notice to ${threadId}: ${errorMessage(err)}`));
  }

  /**
   * The Chat SDK stores a message's dedupe key in the state (the central DB) before it calls us, and its only report
   * of that write failing is this log line: with a full disk the sender is told, as when our own store fails.
   */
  private noticeFailedMessage(message: string, meta: unknown): void {
    if (message !== 'Message processing error' || typeof meta !== 'object' || meta === null) return;
    const { error, threadId } = meta as { error?: unknown; threadId?: unknown };
    if (isDiskFull(error) && typeof threadId === 'string') void this.tell(threadId, DISK_FULL_NOTICE);
  }

  /** A question button was pressed: its option becomes the question's answer, and the question shows what was chosen. */
  private async answer(event: {
    actionId: string;
    value?: string;
    threadId: string;
    messageId: string;
    user: { userId: string; userName: string; fullName: string };
  }): Promise<void> {
    const adapter = this.adapter!;
    const parsed = parseAnswerValue(event.value);
    const entry = parsed ? await this.state!.get<QuestionEntry>(`pincer:question:${parsed.key}`) : null;
    const option = parsed && entry?.options[parsed.index];
    if (!entry || !option) {
      this.options.log.warn(`${this.type}: a button press for an unknown or expired question (${event.value ?? 'no value'})`);
      return;
    }
    const conversation = conversationOf(this.type, { id: event.threadId, channelId: adapter.channelIdFromThreadId(event.threadId) });
    const userId = `${this.type}:${event.user.userId}`;
    const rules = this.host!.groupOf(conversation).triggerRules;
    if (rules.allowedUsers.length > 0 && !rules.allowedUsers.includes(userId)) {
      this.options.log.info(`${this.type}: ignored an answer from ${userId} (not on the allow-list)`);
      return;
    }
    try {
      await this.host!.answerQuestion(conversation, { questionId: entry.questionId, selectedOption: option.value, userId });
    } catch (err) {
      this.options.log.info(`${this.type}: answer to question ${entry.questionId} not taken: ${errorMessage(err)}`);
      return;
    }
    const by = event.user.fullName || event.user.userName;
    await adapter
      .editMessage(event.threadId, event.messageId, { markdown: `**${entry.title}**\n\n${entry.question}\n\n✓ ${option.label} (${by})` })
      .catch((err: unknown) => this.options.log.debug(`${this.type}: could not mark the question answered: ${errorMessage(err)}`));
  }

  // ---- connection ----

  /** Connect (Chat SDK initialize: the adapter checks its credentials, Telegram starts polling); retried with back-off. */
  private connect(): void {
    if (this.stopped) return;
    this.ready = this.initialize();
    this.ready.then(
      () => {
        this.startFailures = 0;
        this.options.log.info(`${this.type}: connected (${describeInbound(this.options.spec, this.options.env)})`);
      },
      (err: unknown) => {
        this.startFailures += 1;
        const delay = Math.min(START_RETRY_MAX_MS, START_RETRY_BASE_MS * 2 ** (this.startFailures - 1));
        this.options.log.warn(`${this.type}: could not connect (${errorMessage(err)}); retry in ${delay} ms`);
        void this.chat?.shutdown().catch(() => undefined); // the failed connection was logged just above
        void stopPolling(this.adapter);
        this.chat = null;
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          void this.recreate().then(() => this.connect());
        }, delay);
        this.retryTimer.unref();
      },
    );
  }

  private async recreate(): Promise<void> {
    try {
      this.adapter = await this.options.spec.create(this.options.env, this.chatLogger(this.type));
    } catch (err) {
      this.options.log.error(`${this.type}: ${errorMessage(err)}`);
    }
  }

  private async initialize(): Promise<void> {
    const { Chat } = await import('chat');
    const adapter = this.adapter!;
    this.state = new SqliteStateAdapter(this.options.db);
    const chat = new Chat({
      userName: this.options.userName,
      adapters: { [this.type]: adapter },
      state: this.state,
      logger: this.chatLogger('chat'),
      // Storing a message takes milliseconds; messages arriving meanwhile queue and all are stored (none dropped).
      concurrency: { strategy: 'queue', maxQueueSize: 1000, onQueueFull: 'drop-oldest' },
    });
    chat.onDirectMessage((_thread, message, _channel, context) => this.receive(message, context));
    chat.onNewMention((_thread, message, context) => this.receive(message, context));
    chat.onSubscribedMessage((_thread, message, context) => this.receive(message, context));
    chat.onNewMessage(/[\s\S]*/, (_thread, message, context) => this.receive(message, context));
    chat.onAction(ANSWER_ACTION, (event) => this.answer(event));
    this.chat = chat;
    await chat.initialize();
  }

  private async isReady(): Promise<boolean> {
    try {
      await this.ready;
      return this.chat !== null;
    } catch {
      // a start that failed was logged when it failed: not ready
      return false;
    }
  }

  /** The adapter once connected; a delivery before that is retried by the host's delivery. */
  private async connected(): Promise<Adapter> {
    if (!(await this.isReady()) || !this.adapter) throw new ChannelDeliveryError(`${this.options.spec.title} is not connected yet`);
    return this.adapter;
  }

  /** The SDK's log lines into ours: its info is chatty (every queued message), so it is our debug. */
  private chatLogger(prefix: string): ChatLogger {
    const log = this.options.log;
    const line = (message: string, args: unknown[]): string => `${prefix}: ${message}${args.length > 0 ? ` ${args.map(describeArg).join(' ')}` : ''}`;
    const logger: ChatLogger = {
      child: (child) => this.chatLogger(`${prefix}/${child}`),
      debug: (message, ...args) => log.debug(line(message, args)),
      info: (message, ...args) => log.debug(line(message, args)),
      warn: (message, ...args) => log.warn(line(message, args)),
      error: (message, ...args) => {
        log.error(line(message, args));
        this.noticeFailedMessage(message, args[0]);
      },
    };
    return logger;
  }
}

/** An outbox file, opened without following a link the agent may have put there since delivery checked it. */
function readOutboxFile(file: string): Buffer {
  const fd = openOutboxFile(file);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

async function stopPolling(adapter: Adapter | null): Promise<void> {
  const polling = adapter as { stopPolling?: () => Promise<void> } | null;
  await polling?.stopPolling?.().catch(() => undefined); // stopping a poll that never ran: nothing to stop
}

function describeArg(arg: unknown): string {
  if (arg instanceof Error) return arg.message;
  try {
    return JSON.stringify(arg);
  } catch {
    // a circular value: its string form is logged instead
    return String(arg);
  }
}

function describeInbound(spec: PlatformSpec, env: NodeJS.ProcessEnv): string {
  const status = spec.status(env);
  return status.state === 'on' ? status.detail : status.state;
}
