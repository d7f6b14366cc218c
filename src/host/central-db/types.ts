import type { McpServers } from '../../db/mcp-servers.js';

/** Rows of the central DB (`pincer.db` under PINCER_HOME): what the host knows across sessions. */
export type SessionMode = 'shared' | 'per-thread';

/** An agent group: one agent (folder with CLAUDE.md, skills), its provider and how conversations map to sessions. */
export interface AgentGroup {
  id: string;
  /** unique, human-readable. */
  name: string;
  /** folder name under `<home>/groups/`; mounted (or linked) as the session's `agent/`. */
  folder: string;
  /** the provider policy runners of the group start with: the saved one, or this run's (see `savedProvider`). */
  provider: string;
  /**
   * Set only while this host runs the group on another provider than the one saved in the central DB (`pincer host
   * --provider P` or `pincer chat --provider P` without `--save`): the saved one, which the next run gets again.
   */
  savedProvider?: string;
  model: string | null;
  /** `shared`: one session per conversation; `per-thread`: one session per thread of a conversation. */
  sessionMode: SessionMode;
  /** IANA zone for prompts and cron schedules. */
  timezone: string;
  /** bumped each time the group's runner configuration is republished. */
  configGeneration: number;
  /** user ids allowed to run admin-only actions (register_agent_group); platform users as `<platform>:<user id>`. */
  admins: string[];
  /** who the group answers on chat platforms. */
  triggerRules: TriggerRules;
  /** the user's own MCP servers of the group, by name (secret values as references); `{}` when none. */
  mcpServers: McpServers;
  createdAt: string;
}

/**
 * Who an agent group answers on chat platforms (stored as JSON in `agent_groups.trigger_rules`). Direct messages are
 * always answered; in a group chat only on a mention (`mention`, the default: other messages are kept as context for
 * the next answer) or every message (`always`). A non-empty `allowedUsers` (`<platform>:<user id>`, e.g.
 * `telegram:12345`) ignores everybody else.
 */
export interface TriggerRules {
  groups: 'mention' | 'always';
  allowedUsers: string[];
}

/** A session: one session folder, one runner at most, one conversation (or one thread of it). */
export interface SessionRecord {
  id: string;
  agentGroupId: string;
  /** where the session came from; answers with no routing of their own go back here. */
  channelType: string;
  platformId: string;
  /** '' for a shared session; the thread id for a per-thread one. */
  threadKey: string;
  folder: string;
  /** the provider session id saved when its runner stopped, passed to the next runner as config.json `sessionId`. */
  providerSessionId: string | null;
  /** the session's own MCP servers: they replace the group's of the same name; `{}` when none. */
  mcpServers: McpServers;
  createdAt: string;
}

/** A conversation bound to an agent group. */
export interface Binding {
  channelType: string;
  platformId: string;
  agentGroupId: string;
}

/** A question the agent asked (ask_user_question), delivered to a conversation and waiting for its answer. */
export interface PendingQuestion {
  questionId: string;
  sessionId: string;
  channelType: string;
  platformId: string;
  threadId: string | null;
  answeredAt: string | null;
}

/** The host's own record of an inbound message it wrote (table `inbound_senders`). */
export interface InboundSender {
  sessionId: string;
  /** `messages_in.id` in the session DB. */
  messageId: string;
  /** the platform's user id of the sender (chat `senderId`, chat-sdk `author.userId`, `agent:<group id>`); null if none was given. */
  senderId: string | null;
  channelType: string;
  platformId: string;
  threadId: string | null;
  createdAt: string;
}
