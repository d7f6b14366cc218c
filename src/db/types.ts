/**
 * Row types of the session database. Table and column names are the contract between host, runner and
 * MCP server; never rename them.
 */
export const INBOUND_KINDS = ['chat', 'chat-sdk', 'task', 'webhook', 'system'] as const;
export type InboundKind = (typeof INBOUND_KINDS)[number];

export const OUTBOUND_KINDS = ['chat', 'chat-sdk', 'system'] as const;
export type OutboundKind = (typeof OUTBOUND_KINDS)[number];

export type InboundStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'paused';

export type RunnerStateName = 'starting' | 'idle' | 'busy' | 'waiting_user' | 'stopping';

/** A `messages_in` row as stored. `kind` is a string because outside writers may store anything. */
export interface InboundRow {
  id: string;
  seq: number;
  kind: string;
  timestamp: string;
  status: InboundStatus;
  status_changed: string | null;
  process_after: string | null;
  recurrence: string | null;
  series_id: string | null;
  tries: number;
  trigger: number;
  platform_id: string | null;
  channel_type: string | null;
  thread_id: string | null;
  content: string;
  last_error: string | null;
  /** W3C traceparent of the host span that wrote the row (tracing on), else null. */
  trace_context?: string | null;
  /** 1 when the runner's `last_error` is one another try cannot fix: the host gives the row up at once. */
  no_retry?: number;
}

/** A `messages_out` row as stored. */
export interface OutboundRow {
  id: string;
  seq: number;
  in_reply_to: string | null;
  timestamp: string;
  kind: string;
  platform_id: string | null;
  channel_type: string | null;
  thread_id: string | null;
  content: string;
  delivered_at: string | null;
  platform_message_id: string | null;
  delivery_error: string | null;
}

/**
 * Where an answer goes. Captured from the batch in flight; never shown to the agent.
 * `inReplyTo` is the `messages_in.id` of the message that triggered the answer.
 */
export interface RoutingContext {
  platformId: string | null;
  channelType: string | null;
  threadId: string | null;
  inReplyTo: string | null;
}

/** The `runner_state` row, parsed. */
export interface RunnerState {
  pid: number;
  provider: string;
  state: RunnerStateName;
  /** ids of the `messages_in` rows of the batch in flight; empty when idle. */
  batchIds: string[];
  /** routing of the batch in flight, so the separate MCP process can copy it; null when idle. */
  routing: RoutingContext | null;
  heartbeatAt: string;
  startedAt: string;
  updatedAt: string;
}
