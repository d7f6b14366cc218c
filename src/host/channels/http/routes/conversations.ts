import { z } from 'zod';
import { TaskRequestSchema } from '../../../../db/tasks.js';
import { AttachmentSchema } from '../../../../db/content.js';
import type { ConversationRef } from '../../../types.js';
import { requireAdmin, requireConversation } from '../auth.js';
import { afterParam, conversationId, readJson, validate } from '../io.js';
import { SENT } from '../mailbox.js';
import { streamStart } from '../sse.js';
import type { Context } from 'hono';
import type { HttpEnv, HttpRouteModule } from '../types.js';

/**
 * Conversations: post a message, answer a question, schedule a task, read events (replay) or stream them (SSE);
 * `?sent=1` adds what clients posted (`sent` events) to the history, for a page that shows both sides.
 * A conversation is any id a client picks; the host routes it to a session.
 */

const PostMessage = z.object({
  text: z.string().min(1),
  sender: z.string().min(1).default('http'),
  senderId: z.string().min(1).optional(),
  threadId: z.string().min(1).optional(),
  attachments: z.array(AttachmentSchema).optional(),
  replyTo: z.object({ id: z.string(), sender: z.string(), text: z.string() }).optional(),
});
const PostAnswer = z.object({ questionId: z.string().min(1), selectedOption: z.string(), userId: z.string().optional(), threadId: z.string().optional() });
const PostTask = TaskRequestSchema.extend({
  threadId: z.string().min(1).optional(),
});

const EVENTS_PAGE = 500;

const conversationRef = (platformId: string, threadId?: string): ConversationRef => ({ channelType: 'http', platformId, threadId: threadId ?? null });

/** The conversation of the path, if its id is valid and the caller may use it. */
function allowed(c: Context<HttpEnv>): string {
  const id = conversationId(c.req.param('id') ?? '');
  requireConversation(c, id);
  return id;
}

export const conversationRoutes: HttpRouteModule = ({ api }, { host, mailbox, sse }) => {
  api.post('/v1/conversations/:id/messages', async (c) => {
    const id = allowed(c);
    const { threadId, ...content } = validate(PostMessage, await readJson(c));
    const receipt = await host.acceptInbound({ conversation: conversationRef(id, threadId), kind: 'chat', content });
    // Kept in the conversation's history (names of files only) for a client that reloads it later.
    const sent = mailbox.append(
      id,
      {
        type: SENT,
        text: content.text,
        sender: content.sender,
        files: (content.attachments ?? []).map((a) => a.name),
        messageId: receipt.id,
        sessionId: receipt.sessionId,
        threadId: threadId ?? null,
      },
      [],
      `${SENT}:${receipt.sessionId}:${receipt.id}`,
    );
    if (sent.fresh) sse.publish(sent);
    return c.json(receipt, 202);
  });

  api.post('/v1/conversations/:id/answers', async (c) => {
    const id = allowed(c);
    const body = validate(PostAnswer, await readJson(c));
    // Only an admin token vouches for the user an answer names; a scoped token's answer carries no authority.
    const userVouched = c.get('principal').kind === 'admin';
    return c.json(await host.answerQuestion(conversationRef(id, body.threadId), { ...body, userVouched }), 202);
  });

  api.post('/v1/conversations/:id/tasks', async (c) => {
    const id = allowed(c);
    const { threadId, ...task } = validate(PostTask, await readJson(c));
    // a script runs shell commands with no model involved: never for a token limited to some conversations
    if (task.script !== undefined) requireAdmin(c, 'a task script');
    return c.json(await host.scheduleTask(conversationRef(id, threadId), task), 202);
  });

  api.get('/v1/conversations/:id/events', (c) => {
    const id = allowed(c);
    // One page; `more` says to ask again with `after` = `nextAfter`.
    const events = mailbox.after(id, afterParam(c.req.query('after')), EVENTS_PAGE, c.req.query('sent') === '1');
    return c.json({ events: events.map((e) => e.data), more: events.length === EVENTS_PAGE, nextAfter: events.at(-1)?.id ?? null });
  });

  api.get('/v1/conversations/:id/stream', (c) => {
    const id = allowed(c);
    return sse.open(id, streamStart(c.req.header('last-event-id'), c.req.query('after')), c.get('stillAuthorised'), c.req.query('sent') === '1');
  });
};
