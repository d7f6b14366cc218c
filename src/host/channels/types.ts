import type { GenerationView } from '../generations/types.js';
import type { AgentGroup } from '../central-db/types.js';
import type { TaskBoard } from '../tasks.js';
import type { ConversationRef } from '../types.js';
import { PincerError } from '../../shared/errors.js';
import type { ToolActivity } from '../../db/tool-activity.js';

/**
 * The channel adapter contract. A channel turns its platform's events into inbound messages (through the `HostApi`
 * it is started with) and delivers what the agent sends. Terminal and HTTP are built in; Chat SDK channels come later.
 */
export interface ChannelAdapter {
  /** the `channel_type` of its conversations, e.g. `terminal`, `http`. */
  readonly type: string;
  /** what the host may expect of it; the host decides from these, never from the channel's name. */
  readonly capabilities: ChannelCapabilities;
  /** Start receiving. Inbound messages go to `host`. */
  start(host: HostApi): Promise<void>;
  /**
   * Deliver one outbound message. Resolves once the platform has it (for HTTP: stored in the channel's durable mailbox
   * that streams replay). Throws when it could not deliver; delivery retries and records the failure.
   */
  deliver(message: OutboundDelivery): Promise<DeliveryReceipt>;
  /** Optional: show that the agent is working on an answer. Must not throw. */
  setTyping?(conversation: ConversationRef, active: boolean): Promise<void>;
  /**
   * Optional: a tool call of the agent started or ended (each change once, in order; cleaned and clamped text, safe to
   * print). Shown only, never kept: a channel that was not attached misses it. Must not throw.
   */
  showToolActivity?(conversation: ConversationRef, activity: ToolActivity): Promise<void>;
  stop(): Promise<void>;
}

/** What a channel declares about itself (typing is `setTyping`, present or not). */
export interface ChannelCapabilities {
  /**
   * input typed at this machine (the terminal): stopped first when the host stops, so that nothing new arrives while
   * runners finish their work, and stopped before anything else is.
   */
  localInput: boolean;
  /**
   * it comes and goes with a process of its own (`pincer chat`): while no such channel is attached, its conversations'
   * rows wait for it instead of failing. A host that may have it attached later names its type in
   * `HostOptions.attachableChannels`.
   */
  attachable: boolean;
}

/**
 * What a channel throws when it could not deliver and knows more than "try again later": the platform asked to wait
 * (`retryAfterMs`, from a 429's retry-after), or retrying cannot help (`permanent`: bad request, no permission).
 * Any other error is retried with back-off.
 */
export class ChannelDeliveryError extends PincerError {
  constructor(
    message: string,
    /** kept as a subclass for these: how long the platform asked to wait, or that retrying cannot help. */
    readonly options: { retryAfterMs?: number; permanent?: boolean } = {},
  ) {
    super('delivery', message);
    this.name = 'ChannelDeliveryError';
  }
}

export interface DeliveryReceipt {
  /** the platform's id for the delivered message, stored in `messages_out.platform_message_id`. */
  platformMessageId?: string;
}

/** What a delivered message says, by type. */
export type OutboundPayload =
  | { type: 'chat'; text: string; files: { name: string; path: string }[] }
  | { type: 'edit'; messageId: number; text: string; targetPlatformMessageId: string | null }
  | { type: 'reaction'; messageId: number; emoji: string; targetPlatformMessageId: string | null }
  | { type: 'question'; questionId: string; title: string; question: string; options: { label: string; value: string }[] }
  | { type: 'card'; card: unknown; fallbackText: string | null }
  /** the host speaking: a message that failed for good, a runner that cannot start. */
  | { type: 'notice'; text: string };

export interface OutboundDelivery {
  sessionId: string;
  /** the `messages_out` row (absent for host notices). */
  id: string | null;
  /** the integer id the agent sees (absent for host notices). */
  seq: number | null;
  conversation: ConversationRef;
  /** `messages_in.id` this answers, if any. */
  inReplyTo: string | null;
  payload: OutboundPayload;
}

/** A message arriving from a channel, before routing. */
export interface InboundEnvelope {
  conversation: ConversationRef;
  kind: 'chat' | 'chat-sdk' | 'webhook' | 'task';
  /** the content object for `kind` (src/db/content.ts); validated by the host. */
  content: unknown;
  processAfter?: string | null;
  recurrence?: string | null;
  /** the row id (a channel that saved attachments under `downloads/<id>/` first); default: a new UUID. */
  id?: string;
  /** 0: context only (rides along with the next prompt, never wakes the agent). Default 1. */
  trigger?: 0 | 1;
}

export interface InboundReceipt {
  sessionId: string;
  id: string;
  /** the integer id the agent sees; null when the session was out of reach (the host holds the message and sends it). */
  seq: number | null;
}

/** What a channel may ask of the host. Methods throw `PincerError` (code says why) on bad input. */
export interface HostApi {
  /** Route an inbound message to its session and write it to `messages_in`. */
  acceptInbound(message: InboundEnvelope): Promise<InboundReceipt>;
  /**
   * Write the answer to a question the agent asked in `conversation`. `userVouched: false`: the channel cannot vouch
   * for `userId` (a scoped HTTP token names any user it likes), so the answer carries no authority.
   */
  answerQuestion(
    conversation: ConversationRef,
    answer: { questionId: string; selectedOption: string; userId?: string; userVouched?: boolean },
  ): Promise<InboundReceipt>;
  /** Schedule a task (once, or recurring with a cron expression read in the group's time zone) for `conversation`. */
  scheduleTask(conversation: ConversationRef, task: { prompt: string; processAfter?: string; recurrence?: string; script?: string }): Promise<InboundReceipt>;
  /** The agent group a conversation belongs to (its binding, else the default group). */
  groupOf(conversation: ConversationRef): AgentGroup;
  /** The session folder a conversation's messages go to (provisioned if new): where its attachments are saved. */
  sessionFolderOf(conversation: ConversationRef): string;
  /** Sessions of the host, with their runner's state, for diagnostics. */
  listSessions(): Promise<SessionSummary[]>;
  /** Stop a session's runner; the next due message starts a new one. */
  stopRunner(sessionId: string): Promise<void>;
  /** Stop a session's runner if it runs and start a new one. */
  restartRunner(sessionId: string): Promise<void>;
  /** The last lines of a session's runner log. */
  runnerLogTail(sessionId: string, lines: number): Promise<string[]>;
  /** Scheduled tasks of every session: list, get, pause, resume, update, cancel. */
  readonly tasks: Pick<TaskBoard, 'list' | 'get' | 'change'>;
  /** Every agent group's published model-runtime generation (catalogue, selection, credential names): never a key. */
  modelCatalogue(): GenerationView[];
}

export interface SessionSummary {
  id: string;
  agentGroup: string;
  channelType: string;
  platformId: string;
  threadKey: string;
  runner: { pid: number; state: string } | null;
  pending: number;
  /** the provider the session's last runner started with (runner_state), if one ever ran. */
  provider: string | null;
  /** the running runner's last heartbeat. */
  heartbeatAt: string | null;
  /** the newest `last_error` of the session's open or failed messages (a settled message's error is history). */
  lastError: string | null;
}
