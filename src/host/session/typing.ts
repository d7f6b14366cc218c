import type { ChannelAdapter } from '../channels/types.js';
import { conversationOf, type SessionHandle } from './delivery.js';
import type { ConversationRef } from '../types.js';
import type { SessionState } from './port.js';

/**
 * The typing stage of a session's pipeline: "typing" in the batch's conversation while the runner is busy, and in the
 * first due message's while the session waits for room for its runner; cleared when neither. Only channels that
 * can show it (`setTyping`) are asked.
 */
export class TypingStage {
  private typingIn: ConversationRef | null = null;

  constructor(private readonly channels: ReadonlyMap<string, ChannelAdapter>) {}

  async update(handle: SessionHandle, state: SessionState): Promise<void> {
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
      await this.channels.get(this.typingIn.channelType)?.setTyping?.(this.typingIn, false);
      this.typingIn = null;
    }
    if (busy === (this.typingIn !== null)) return;
    const conversation = busy ? conversationOf(handle, busyRouting) : this.typingIn!;
    this.typingIn = busy ? conversation : null;
    await this.channels.get(conversation.channelType)?.setTyping?.(conversation, busy);
  }
}

function sameConversation(a: ConversationRef, b: ConversationRef): boolean {
  return a.channelType === b.channelType && a.platformId === b.platformId && (a.threadId ?? null) === (b.threadId ?? null);
}
