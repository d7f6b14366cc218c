import { requireConversation } from '../auth.js';
import { conversationId, parseJson, readBody, readJson } from '../io.js';
import { PincerError } from '../../../../shared/errors.js';
import { webhookEventProblem, webhookSourceProblem } from '../../../../shared/names.js';
import { checkSignature, type WebhookScheme } from '../signatures.js';
import type { HttpRouteModule } from '../types.js';

/**
 * Webhooks: `POST /v1/webhooks/<source>` turns a JSON payload into a `webhook` message for a conversation.
 * A source configured with `pincer webhook add` is a signed webhook: its signature (GitHub, generic HMAC-SHA256 or
 * Stripe-style) replaces the token, its events go to its configured conversation, and a bad signature is a 401 with
 * nothing stored. Any other source needs a token, and names its conversation with `?conversation=` (default
 * `webhook-<source>`). The event is `?event=`, `X-Pincer-Event`, `X-GitHub-Event`, or a Stripe payload's `type`;
 * a signed one's only from signed data (the body's `type`/`event`; GitHub's `X-GitHub-Event`), and a delivery
 * already accepted is not stored again (webhook-replays.ts).
 */
export const webhookRoutes: HttpRouteModule = ({ api, open }, { host, access, log }) => {
  const replays = access.webhookReplays();
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
      throw new PincerError(
        'invalid-input',
        `signed webhook "${hook.name}" goes to its configured conversation "${conversation}" (pincer webhook add --conversation)`,
        { field: 'conversation' },
      );
    }
    const payload = parseJson(body);
    const event = signedEventName(
      hook.scheme,
      { query: c.req.query('event'), pincer: c.req.header('x-pincer-event'), github: c.req.header('x-github-event') },
      payload,
    );
    const deliveryId = c.req.header('x-github-delivery') ?? c.req.header('x-pincer-delivery');
    const claim = replays.claim(hook.name, body, deliveryId);
    if (!claim.fresh) {
      log.warn(
        `webhook ${hook.name}: a replay of a delivery already accepted${deliveryId ? ` (it says delivery ${deliveryId.slice(0, 80)})` : ''}; nothing stored`,
      );
      // 200, not an error: a sender that retries a delivery whose answer it lost must stop retrying
      return c.json({ duplicate: true, id: claim.earlier, stored: false }, 200);
    }
    try {
      const accepted = await accept(hook.name, conversation, event, payload, true);
      replays.settle(hook.name, claim.digest, accepted.id);
      return c.json(accepted, 202);
    } catch (err) {
      replays.release(hook.name, claim.digest);
      throw err;
    }
  });

  api.post('/v1/webhooks/:source', async (c) => {
    const source = c.req.param('source');
    const badSource = webhookSourceProblem(source);
    if (badSource) throw new PincerError('invalid-input', badSource, { field: 'source' });
    const conversation = conversationId(c.req.query('conversation') ?? `webhook-${source}`);
    requireConversation(c, conversation);
    const payload = await readJson(c);
    const event = eventName(c.req.query('event') ?? c.req.header('x-pincer-event') ?? c.req.header('x-github-event'), payload);
    return c.json(await accept(source, conversation, event, payload, false), 202);
  });

  function accept(source: string, conversation: string, event: string, payload: unknown, signed: boolean) {
    return host.acceptInbound({
      conversation: { channelType: 'http', platformId: conversation, threadId: null },
      kind: 'webhook',
      content: { source, event, payload, ...(signed ? { signed: true } : {}) },
    });
  }
};

/**
 * A signed webhook's event, only from what its sender signed or, for GitHub (which signs only the body), its own
 * `X-GitHub-Event`: `?event=` and `X-Pincer-Event` would let anyone holding a captured body relabel it.
 */
function signedEventName(scheme: WebhookScheme, given: { query?: string; pincer?: string; github?: string }, payload: unknown): string {
  if (given.query !== undefined || given.pincer !== undefined) {
    throw new PincerError(
      'invalid-input',
      'a signed webhook takes its event from signed data, not ?event= or X-Pincer-Event (put a "type" or "event" field in the body)',
      { field: 'event' },
    );
  }
  if (scheme === 'github') return eventName(given.github, undefined);
  const fields = payload && typeof payload === 'object' ? (payload as { type?: unknown; event?: unknown }) : {};
  const fromBody = typeof fields.type === 'string' ? fields.type : typeof fields.event === 'string' ? fields.event : undefined;
  if (fromBody === undefined)
    throw new PincerError('invalid-input', 'signed webhook event missing: the signed body needs a "type" or "event" field', { field: 'event' });
  return eventName(fromBody, undefined);
}

/** The event's name from the request, else a Stripe-style payload's `type`; 400 when there is none. */
function eventName(given: string | undefined, payload: unknown): string {
  const fromPayload =
    payload && typeof payload === 'object' && typeof (payload as { type?: unknown }).type === 'string' ? (payload as { type: string }).type : undefined;
  const event = given ?? fromPayload;
  if (!event) throw new PincerError('invalid-input', 'webhook event missing: pass ?event=NAME or an X-Pincer-Event header', { field: 'event' });
  const badEvent = webhookEventProblem(event);
  if (badEvent) throw new PincerError('invalid-input', badEvent, { field: 'event' });
  return event;
}
