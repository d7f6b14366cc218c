import type { CardChild, CardElement } from 'chat';
import { z } from 'zod';
import { errorMessage } from '../../shared/log.js';
import { ChannelDeliveryError } from '../channels/types.js';
import { isUntrustedPathError } from '../untrusted-files.js';

/**
 * What the agent sends, in the Chat SDK's terms: cards from `send_card`'s JSON, `ask_user_question` as a card with
 * one button per option, and the adapters' errors sorted into "wait this long" (429 with retry-after), "no use
 * retrying" (bad request, no permission, unknown chat) and "try again later" (network, 5xx).
 */

/** The action id of question buttons; the button's value is a key to the question and option (see questionKey). */
export const ANSWER_ACTION = 'pincer-answer';

const ElementSchema: z.ZodType<CardChild> = z.lazy(() =>
  z.union([
    z.looseObject({ type: z.literal('text'), content: z.string() }),
    z.looseObject({ type: z.literal('image'), url: z.string() }),
    z.looseObject({ type: z.literal('divider') }),
    z.looseObject({ type: z.literal('link'), url: z.string(), label: z.string() }),
    z.looseObject({ type: z.literal('fields'), children: z.array(z.looseObject({ type: z.literal('field'), label: z.string(), value: z.string() })) }),
    z.looseObject({ type: z.literal('section'), children: z.array(ElementSchema) }),
    z.looseObject({ type: z.literal('actions'), children: z.array(z.looseObject({ type: z.enum(['button', 'link-button']), label: z.string() })) }),
  ]),
) as unknown as z.ZodType<CardChild>;

const AgentCardSchema = z.looseObject({
  title: z.string().optional(),
  subtitle: z.string().optional(),
  children: z.array(z.unknown()).optional(),
  /** link buttons: `{label, url}`. */
  actions: z.array(z.looseObject({ label: z.string(), url: z.string() })).optional(),
});

/**
 * The agent's card as a Chat SDK card: its children that are card elements (others are dropped: a card the agent
 * got half wrong still shows what it got right) and its link actions. Null when nothing is left to show.
 */
export function toCard(card: unknown): CardElement | null {
  const parsed = AgentCardSchema.safeParse(card);
  if (!parsed.success) return null;
  const children: CardChild[] = [];
  for (const child of parsed.data.children ?? []) {
    const element = ElementSchema.safeParse(child);
    if (element.success) children.push(element.data);
  }
  const links = parsed.data.actions ?? [];
  if (links.length > 0) children.push({ type: 'actions', children: links.map((l) => ({ type: 'link-button', label: l.label, url: l.url })) });
  if (!parsed.data.title && children.length === 0) return null;
  return {
    type: 'card',
    ...(parsed.data.title ? { title: parsed.data.title } : {}),
    ...(parsed.data.subtitle ? { subtitle: parsed.data.subtitle } : {}),
    children,
  };
}

/** A question as a card: its text and one button per option, each carrying a short key (Telegram allows 64 bytes). */
export function questionCard(question: { title: string; question: string; options: { label: string }[] }, key: string): CardElement {
  return {
    type: 'card',
    title: question.title,
    children: [
      { type: 'text', content: question.question },
      {
        type: 'actions',
        children: question.options.map((option, index) => ({ type: 'button', id: ANSWER_ACTION, label: option.label, value: `${key}:${index}` })),
      },
    ],
  };
}

/** `key:index` of a pressed question button, or null for anything else. */
export function parseAnswerValue(value: string | undefined): { key: string; index: number } | null {
  const match = /^([A-Za-z0-9_-]{1,32}):(\d{1,3})$/.exec(value ?? '');
  return match ? { key: match[1]!, index: Number(match[2]) } : null;
}

/** Codes of the Chat SDK's adapter errors (`@chat-adapter/shared`) that retrying cannot fix. */
const PERMANENT_CODES = new Set(['AUTH_FAILED', 'PERMISSION_DENIED', 'NOT_FOUND', 'VALIDATION_ERROR']);

/** An adapter's error as a delivery error: 429 keeps its retry-after; a 4xx is permanent; the rest is retried. */
export function deliveryError(platform: string, err: unknown): ChannelDeliveryError {
  if (err instanceof ChannelDeliveryError) return err;
  // An outbox file the agent swapped for a link (or removed) after delivery checked it: no retry brings it back.
  if (isUntrustedPathError(err)) return new ChannelDeliveryError(`${platform}: ${err.message}`, { permanent: true });
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const message = `${platform}: ${errorMessage(err)}`;
  // The adapters' RATE_LIMITED, and Slack's Web API client (set to reject rate-limited calls rather than wait).
  if (code === 'RATE_LIMITED' || code === 'slack_webapi_rate_limited_error') {
    const retryAfter = (err as { retryAfter?: unknown }).retryAfter;
    return new ChannelDeliveryError(message, typeof retryAfter === 'number' && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {});
  }
  if (typeof code === 'string' && PERMANENT_CODES.has(code)) return new ChannelDeliveryError(message, { permanent: true });
  // Octokit's RequestError (GitHub): an HTTP status, and a rate limit's Retry-After among the response headers.
  const httpStatus = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined;
  if (typeof httpStatus === 'number') {
    const headers = (err as { response?: { headers?: Record<string, unknown> } }).response?.headers ?? {};
    const retryAfter = Number(headers['retry-after']);
    if (httpStatus === 429 || (httpStatus === 403 && Number.isFinite(retryAfter))) {
      return new ChannelDeliveryError(message, Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {});
    }
    if (httpStatus >= 400 && httpStatus < 500) return new ChannelDeliveryError(message, { permanent: true });
    return new ChannelDeliveryError(message);
  }
  // Discord's and WhatsApp's adapters report the API's status and body only in their message ("Discord API error:
  // 429 {…"retry_after":1.5…}"); Discord's 429 body says how long to wait.
  const status = /\bAPI error: (\d{3})\b/.exec(errorMessage(err))?.[1];
  if (status === '429') {
    const wait = Number(/"retry_after"\s*:\s*([\d.]+)/.exec(errorMessage(err))?.[1]);
    return new ChannelDeliveryError(message, Number.isFinite(wait) && wait > 0 ? { retryAfterMs: Math.ceil(wait * 1000) } : {});
  }
  if (status && status.startsWith('4') && status !== '429') return new ChannelDeliveryError(message, { permanent: true });
  // Slack answered `ok: false` (channel_not_found, not_in_channel, invalid_blocks, …): asking again changes nothing.
  if (code === 'slack_webapi_platform_error') return new ChannelDeliveryError(message, { permanent: true });
  return new ChannelDeliveryError(message);
}
