import { conversationId, HttpError, readJson } from '../io.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Webhooks: `POST /v1/webhooks/<source>` turns any JSON payload into a `webhook` message for a conversation
 * (`?conversation=`, default `webhook-<source>`), named by `?event=`, `X-Pincer-Event` or `X-GitHub-Event`.
 */
export const webhookRoutes: HttpRouteModule = ({ api }, { host }) => {
  api.post('/v1/webhooks/:source', async (c) => {
    const source = c.req.param('source');
    const conversation = conversationId(c.req.query('conversation') ?? `webhook-${source}`);
    const event = c.req.query('event') ?? c.req.header('x-pincer-event') ?? c.req.header('x-github-event');
    if (!event) throw new HttpError(400, 'webhook event missing: pass ?event=NAME or an X-Pincer-Event header', 'event');
    const payload = await readJson(c);
    const receipt = host.acceptInbound({
      conversation: { channelType: 'http', platformId: conversation, threadId: null },
      kind: 'webhook',
      content: { source, event, payload },
    });
    return c.json(receipt, 202);
  });
};
