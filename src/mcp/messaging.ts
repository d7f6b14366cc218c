import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { findBySeq, insertOutbound, type MessageBySeq } from '../db/messages.js';
import { batchRouting, refuseUnlistedDestination, resolveRouting } from './routing.js';
import { destination, label, messageId, text } from './schemas.js';
import { textResult, type ToolContext } from './types.js';
import { PincerError } from '../shared/errors.js';

/**
 * The conversation tools: send_message, send_card, edit_message, add_reaction. Each writes one
 * `messages_out` row with the routing of the batch in flight (or the explicit destination) and its `in_reply_to`.
 */
const MAX_CARD_JSON_CHARS = 64_000;

export function registerMessagingTools(server: McpServer, ctx: ToolContext): void {
  const { db } = ctx;

  server.registerTool(
    'send_message',
    {
      description:
        'Send a chat message now, while you keep working: progress updates, or a message to another chat. ' +
        'Your final answer is delivered automatically; do not repeat it with this tool. Without channel/platformId/' +
        'threadId the message goes to the conversation you are answering. Returns the new message id.',
      inputSchema: { text: text('text').describe('the message'), ...destination },
    },
    ({ text, channel, platformId, threadId }) => {
      const routing = resolveRouting(db, { channel, platformId, threadId });
      refuseUnlistedDestination(ctx.config.destinations, routing);
      const { seq } = insertOutbound(db, { kind: 'chat', content: { text }, routing });
      return textResult(`Sent as message ${seq}.`);
    },
  );

  server.registerTool(
    'send_card',
    {
      description:
        'Send a structured card (title, children, actions) to the conversation, for platforms that render cards. ' +
        'Give fallbackText for platforms that only show text. Returns the new message id.',
      inputSchema: {
        card: z
          .looseObject({
            title: label('card.title').optional(),
            subtitle: z.string().optional(),
            children: z.array(z.unknown()).optional(),
            actions: z.array(z.unknown()).optional(),
          })
          .refine((card) => card.title !== undefined || (card.children?.length ?? 0) > 0, {
            error: 'card needs a title or at least one child element',
          })
          .refine((card) => JSON.stringify(card).length <= MAX_CARD_JSON_CHARS, {
            error: `card is larger than ${MAX_CARD_JSON_CHARS} characters of JSON: make it smaller`,
          })
          .describe('the card: {title?, subtitle?, children?: [elements], actions?: [buttons]}'),
        fallbackText: text('fallbackText').optional().describe('plain text shown where cards are not supported'),
      },
    },
    ({ card, fallbackText }) => {
      const content = { type: 'card', card, ...(fallbackText !== undefined && { fallbackText }) };
      const { seq } = insertOutbound(db, { kind: 'chat-sdk', content, routing: batchRouting(db) });
      return textResult(`Card sent as message ${seq}.`);
    },
  );

  server.registerTool(
    'edit_message',
    {
      description: 'Replace the text of a message you sent earlier (by its message id). Only your own messages can be edited.',
      inputSchema: { messageId, text: text('text').describe('the new text') },
    },
    ({ messageId, text }) => {
      const target = ownChatMessage(requireMessage(ctx, messageId), messageId);
      const { seq } = insertOutbound(db, {
        kind: 'chat',
        content: { operation: 'edit', messageId, text },
        routing: { ...target.routing, inReplyTo: batchRouting(db).inReplyTo },
      });
      return textResult(`Message ${messageId} will be edited (operation ${seq}).`);
    },
  );

  server.registerTool(
    'add_reaction',
    {
      description: 'React to a message (yours or a user\'s, by its message id) with an emoji, e.g. "thumbs_up" or "👍".',
      inputSchema: { messageId, emoji: label('emoji', 64).describe('emoji name such as "thumbs_up", or the emoji itself') },
    },
    ({ messageId, emoji }) => {
      const target = requireMessage(ctx, messageId);
      const { seq } = insertOutbound(db, {
        kind: 'chat',
        content: { operation: 'reaction', messageId, emoji },
        routing: { ...target.routing, inReplyTo: batchRouting(db).inReplyTo },
      });
      return textResult(`Reaction ${emoji} added to message ${messageId} (operation ${seq}).`);
    },
  );
}

/**
 * The message under an agent-visible id. Edits and reactions go where that message lives (its own routing), not
 * necessarily to the conversation in flight.
 */
function requireMessage(ctx: ToolContext, seq: number): MessageBySeq {
  const message = findBySeq(ctx.db, seq);
  if (!message) throw new PincerError('not-found', `there is no message with id ${seq}`);
  return message;
}

function ownChatMessage(message: MessageBySeq, seq: number): MessageBySeq {
  let content: unknown;
  try {
    content = JSON.parse(message.content);
  } catch {
    // content that is not JSON is shown as it is
    content = undefined;
  }
  const isText = typeof content === 'object' && content !== null && 'text' in content && !('operation' in content);
  if (message.table !== 'messages_out' || message.kind !== 'chat' || !isText) {
    throw new PincerError('invalid-input', `message ${seq} is not a chat message you sent: only those can be edited`);
  }
  return message;
}
