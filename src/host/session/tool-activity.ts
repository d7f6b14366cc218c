import type { ToolActivity } from '../../db/tool-activity.js';
import type { ChannelAdapter } from '../channels/types.js';
import { conversationOf, type SessionHandle } from './delivery.js';
import type { SessionState } from './port.js';
import type { ConversationRef } from '../types.js';

/**
 * The tool-activity stage of a session's pipeline: each tool call the runner recorded (started, then ended) is shown
 * once in its batch's conversation (else the session's own), by the channels that can show it (`showToolActivity`). The session's state carries
 * the newest calls; what this stage has seen of them is kept by row id and status. Calls that started before the
 * stage began (the host just started, or opened the session) and have ended are history, not shown. A call first seen
 * already ended is shown running, then ended, so that a reader always gets both.
 */
export class ToolActivityStage {
  /** status last shown, by row id; null before the first look. */
  private seen: Map<number, ToolActivity['status']> | null = null;
  /** when the stage began (the session was opened by this host): calls ended and started before are history. */
  private readonly since = Date.now();

  constructor(private readonly channels: ReadonlyMap<string, ChannelAdapter>) {}

  async update(handle: SessionHandle, state: SessionState): Promise<void> {
    const tools = state.tools;
    if (!tools) return; // a session process of an older version: it does not say
    const seen = this.seen ?? new Map<number, ToolActivity['status']>();
    const next = new Map<number, ToolActivity['status']>();
    const changed: ToolActivity[] = [];
    for (const tool of tools) {
      next.set(tool.id, tool.status);
      if (seen.get(tool.id) === tool.status) continue;
      // history: a call that ended before this host looked at the session for the first time
      if (!seen.has(tool.id) && tool.status !== 'running' && !(Date.parse(tool.startedAt) >= this.since)) continue;
      // a call that started and ended between two looks is still shown starting first: every call shown has both
      if (!seen.has(tool.id) && tool.status !== 'running') changed.push({ ...tool, status: 'running', endedAt: null });
      changed.push(tool);
    }
    this.seen = next;
    // The rows are the agent's to write: a call is shown only in a conversation the session answers anyway — its own,
    // or the one of the batch in flight (where typing is shown) — never in one a row names.
    const own = conversationOf(handle, NO_ROUTING);
    const live = state.runner?.routing;
    const batch = live ? conversationOf(handle, { channel_type: live.channelType, platform_id: live.platformId, thread_id: live.threadId }) : own;
    for (const tool of changed) {
      const named = conversationOf(handle, tool.routing);
      const conversation = sameConversation(named, batch) ? batch : own;
      await this.channels.get(conversation.channelType)?.showToolActivity?.(conversation, tool);
    }
  }
}

const NO_ROUTING = { channel_type: null, platform_id: null, thread_id: null };

function sameConversation(a: ConversationRef, b: ConversationRef): boolean {
  return a.channelType === b.channelType && a.platformId === b.platformId && (a.threadId ?? null) === (b.threadId ?? null);
}
