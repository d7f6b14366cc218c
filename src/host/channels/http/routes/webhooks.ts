import { requireConversation } from '../auth.js';
import { conversationId, parseJson, readBody, readJson } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import { webhookEventProblem, webhookSourceProblem } from '../../../../shared/names.js';
import { checkSignature } from '../signatures.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Webhooks: `POST /v1/webhooks/<source>` turns a JSON payload into a `webhook` message for a conversation.
 * A source configured with `pincer webhook add` is a signed webhook: its signature (GitHub, generic HMAC-SHA256 or
 * Stripe-style) replaces the token, its events go to its configured conversation, and a bad signature is a 401 with
 * nothing stored. Any other source needs a token, and names its conversation with `?conversation=` (default
 * `webhook-<source>`). The event is `?event=`, `X-Pincer-Event`, `X-GitHub-Event`, or a Stripe payload's `type`.
 */
export const webhookRoutes: HttpRouteModule = ({ api, open }, { host, access, log }) => {
  open.post('/v1/webhooks/:source', async (c, next) => {
    const hook = access.getWebhook(c.req.param('source'));
    if (!hook) return next();
    const body = await readBody(c);
    const problem = checkSignature(hook, { body, header: (name) => c.req.header(name), nowS: Math.floor(Date.now() / 1000) });
    if (problem) {
      log.warn(`webhook ${hook.name}: refused, ${problem}`);
      throw new PincerError('unauthorized', `webhook "${hook.name}": ${problem}; nothing was stored`);
    }
    const conversation = hook.conversation ?? `webhook-${hook.name}`;
    const asked = c.req.query('conversation');
    if (asked !== undefined && asked !== conversation) {
      throw new PincerError('invalid-input', `signed webhook "${hook.name}" goes to its configured conversation "${conversation}" (pincer webhook add --conversation)`, { field: 'conversation' });
    }
    const payload = parseJson(body);
    const event = eventName(c.req.query('event') ?? c.req.header('x-pincer-event') ?? c.req.header('x-github-event'), payload);
    return c.json(await accept(hook.name, conversation, event, payload), 202);
  });

  api.post('/v1/webhooks/:source', async (c) => {
    const source = c.req.param('source');
    const badSource = webhookSourceProblem(source);
    if (badSource) throw new PincerError('invalid-input', badSource, { field: 'source' });
    const conversation = conversationId(c.req.query('conversation') ?? `webhook-${source}`);
    requireConversation(c, conversation);
    const payload = await readJson(c);
    const event = eventName(c.req.query('event') ?? c.req.header('x-pincer-event') ?? c.req.header('x-github-event'), payload);
    return c.json(await accept(source, conversation, event, payload), 202);
  });

  function accept(source: string, conversation: string, event: string, payload: unknown) {
    return host.acceptInbound({
      conversation: { channelType: 'http', platformId: conversation, threadId: null },
      kind: 'webhook',
      content: { source, event, payload },
    });
  }
};

/** The event's name from the request, else a Stripe-style payload's `type`; 400 when there is none. */
function eventName(given: string | undefined, payload: unknown): string {
  const fromPayload = payload && typeof payload === 'object' && typeof (payload as { type?: unknown }).type === 'string' ? (payload as { type: string }).type : undefined;
  const event = given ?? fromPayload;
  if (!event) throw new PincerError('invalid-input', 'webhook event missing: pass ?event=NAME or an X-Pincer-Event header', { field: 'event' });
  const badEvent = webhookEventProblem(event);
  if (badEvent) throw new PincerError('invalid-input', badEvent, { field: 'event' });
  return event;
}
