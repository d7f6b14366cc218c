import type { Message } from 'chat';
import type { TriggerRules } from '../central-db/types.js';
import type { ConversationRef } from '../types.js';

/**
 * A platform message as a `chat-sdk` row: the Chat SDK's serialized message (author, text, mention, reply-to,
 * attachments) without `raw` (the platform's whole payload, often with tokens or e-mail addresses of others), its
 * attachments downloaded into the session's `downloads/<row id>/` within the media limits, and whether it wakes the
 * agent by the group's rules.
 */
export interface Sender {
  /** `<platform>:<user id>`: the id admin lists and allow-lists use. */
  id: string;
  name: string;
}

/** A platform thread as a conversation: the chat is the platform id; a thread of it (not the chat itself) the thread. */
export function conversationOf(platform: string, thread: { id: string; channelId: string }): ConversationRef {
  return { channelType: platform, platformId: thread.channelId, threadId: thread.id === thread.channelId ? null : thread.id };
}

export function senderOf(platform: string, message: Message): Sender {
  return { id: `${platform}:${message.author.userId}`, name: message.author.fullName || message.author.userName || message.author.userId };
}

/** Whether the agent answers this message (`1`), only sees it with its next answer (`0`), or never sees it (`null`). */
export function triggerOf(rules: TriggerRules, sender: Sender, message: Message, isDM: boolean): 0 | 1 | null {
  if (rules.allowedUsers.length > 0 && !rules.allowedUsers.includes(sender.id)) return null;
  if (isDM || rules.groups === 'always') return 1;
  return message.isMention ? 1 : 0;
}

/** The serialized message without `raw`, also in the message it replies to. */
export function serializedContent(message: Message): Record<string, unknown> {
  const { raw: _raw, replyTo, attachments: _attachments, ...rest } = message.toJSON();
  const reply = replyTo ? (({ raw: _r, ...quoted }) => quoted)(replyTo) : undefined;
  return { ...rest, ...(reply ? { replyTo: reply } : {}) };
}
